"""Organization quality: skorg's tree builders beside SciPy linkage trees and scikit-learn.

For every dataset and method, one tree per axis (rows and columns; a tensor's three axes), and:

- ``err1``, ``err5``: relative error ``||X - X_k|| / ||X||`` after keeping the k = 1% and 5%
  largest multi-Haar coefficients on the trees (the Haar basis is orthonormal, so this is the
  l2 norm of the dropped coefficients over that of all of them);
- ``l1``: the normalized l1 entropy ``||H X||_1 / ||X||_2`` of all coefficients (lower is
  sparser; the questionnaire's own objective);
- ``ari``: adjusted Rand index against the class labels of the row tree's level whose number of
  folders is nearest the number of classes (digits, wine, breast cancer; the attention heads
  against their layer);
- ``rho``, ``stress``: mean |Spearman| against the hidden order and Neumann stress relative to
  the true order's (shuffled smooth matrices, on the method's orders);
- ``s``: seconds to build the trees.

Datasets: scikit-learn's digits (1797 images x 61 non-constant pixels), wine (178 x 13) and
breast cancer (569 x 30), both z-scored per column; 18 shuffled smooth 64 x 64 and 128 x 128
matrices from ``skorg.datasets``; and, when torch, transformers and the offline MiniLM weights
are installed, one all-MiniLM-L6-v2 attention tensor (query x key x head, 72 heads).

The ``runtime`` case times the default against the default the organization-quality work
started from (flexible trees, ``emd_beta=1``) and the stop-19 default (average linkage of the
tree EMD) on a 512 x 512 matrix (best of three, same run).

Run ``python benchmarks/bench_organization_quality.py`` (about 10 minutes on 2 quiet cores),
or name datasets: ``python benchmarks/bench_organization_quality.py wine shuffled runtime``
(``iris``, ``diabetes`` and ``digits_transposed``, data the default was not chosen on, run
only by name);
``--only "skorg a,skorg b"`` runs just those skorg rows (and the default).

The benchmark of kinds, ``python benchmarks/bench_organization_quality.py kinds [DATASET ...]``
(``pip install -e ".[bench]"`` for its datasets; a dataset whose package is missing is
skipped with its name), runs skorg's default, ``tree_method="average"``, ``"ward_slices"``
and the presets beside SciPy's linkages (each with optimal leaf ordering) and scikit-learn's
spectral co-clustering on real data of every kind (``benchmarks/_kinds_data.py``): dense
features, counts and text as given, expression (real and simulated, raw and
log-normalized), real series with a known order (shuffled, then scored by |Spearman|, at
the best rotation on cyclic axes), images, attention, sparse matrices. Beside err5 and l1:
``ari_lvl`` (the level nearest the class count), ``ari_k`` (the tree cut into k = the class
count folders, :meth:`PartitionTree.cut`, as ``fcluster(Z, k, "maxclust")`` for SciPy),
``ari_best`` (the best level) and ``rho``. It prints one table grouped by kind, the means
per kind and the checks of the default against the baselines. ``--seeds N`` averages the
datasets with known orders over N shuffles (the issue's figures: 3; a flat clustering's order
within its clusters is the shuffle's, so one shuffle can flatter it), ``--kind series,images``
runs only those kinds; ``kinds extra_series`` runs the 10 further real series of
``_kinds_data.EXTRA_SERIES`` (each also by name), which the suite's figures were not measured
on.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from scipy.cluster.hierarchy import linkage
from sklearn.metrics import adjusted_rand_score

from skorg import QuestionnaireOrganizer
from skorg.datasets import make_shuffled_matrix
from skorg.metrics import neumann_stress, order_spearman
from skorg.transforms import multi_haar_transform
from skorg.trees import PartitionTree

SCIPY = {
    "scipy average cosine": ("average", "cosine"),
    "scipy average euclidean": ("average", "euclidean"),
    "scipy ward": ("ward", "euclidean"),
    "scipy single": ("single", "euclidean"),
    "scipy complete": ("complete", "euclidean"),
}

SKORG = {
    "skorg default": {},
    "skorg ordering=shortest": {"ordering": "shortest"},  # the default before "smoothest"
    "skorg stop-19 default (average)": {"tree_method": "average", "ordering": "emd_olo"},
    "skorg previous default (flexible)": {
        "tree_method": "flexible",
        "emd_beta": 1.0,
        "ordering": "emd_olo",
    },
    "skorg flexible beta=0": {"emd_beta": 0.0, "tree_method": "flexible"},
    "skorg average": {"tree_method": "average", "emd_beta": 1.0},
    "skorg average beta=0": {"tree_method": "average", "emd_beta": 0.0},
    "skorg ward": {"tree_method": "ward", "emd_beta": 1.0},
    "skorg ward beta=0": {"tree_method": "ward", "emd_beta": 0.0},
    "skorg single": {"tree_method": "single", "emd_beta": 1.0},
    "skorg complete beta=0": {"tree_method": "complete", "emd_beta": 0.0},
    "skorg bisection": {"tree_method": "bisection", "emd_beta": 1.0},
    "skorg ward slices": {"tree_method": "ward_slices"},
    "skorg select beta=0": {"tree_method": "select", "emd_beta": 0.0},
    "skorg hybrid": {"tree_method": "hybrid", "emd_beta": 1.0},
    "skorg hybrid beta=0": {"tree_method": "hybrid", "emd_beta": 0.0},
    "skorg hybrid ward/single beta=0": {
        "tree_method": "hybrid",
        "emd_beta": 0.0,
        "tree_params": {"bottom": "single"},
    },
    "skorg paper_3d_heads": {"preset": "paper_3d_heads"},
    "skorg paper_2d_holder": {"preset": "paper_2d_holder"},
}


# ------------------------------------------------------------------------------------ measures
def compression(X, trees):
    C = multi_haar_transform(X / np.abs(X).max(), list(trees)).ravel()
    mags = np.sort(np.abs(C))[::-1]
    total = float(np.sqrt(np.sum(mags**2)))
    out = []
    for frac in (0.01, 0.05):
        k = max(1, round(frac * mags.shape[0]))
        out.append(float(np.sqrt(np.sum(mags[k:] ** 2))) / total)
    l1 = float(mags.sum()) / total
    return out[0], out[1], l1


def level_ari(tree, labels):
    n_classes = np.unique(labels).shape[0]
    sizes = tree.level_sizes()
    level = int(np.argmin(np.abs(sizes - n_classes)))
    return adjusted_rand_score(labels, tree.labels(level))


def flat_tree(labels):
    """Root, one folder per cluster, singletons (for the biclustering baselines)."""
    labels = np.asarray(labels)
    order = np.argsort(labels, kind="stable")
    return PartitionTree.from_levels(np.stack([np.zeros_like(labels), labels]), order)


# ------------------------------------------------------------------------------------ methods
def scipy_trees(X, method, metric):
    trees = []
    for axis in range(X.ndim):
        U = np.moveaxis(X, axis, 0).reshape(X.shape[axis], -1)
        if metric == "cosine":
            U = U[:, np.abs(U).sum(axis=0) > 0]
            U = U + (np.linalg.norm(U, axis=1, keepdims=True) == 0)  # zero rows: not NaN
        Z = linkage(U, method=method, metric=metric, optimal_ordering=True)
        trees.append(PartitionTree.from_linkage(Z))
    return trees, [t.leaf_order for t in trees]


def run_methods(X, include_spectral=True):
    """{name: (trees, orders, seconds)}."""
    out = {}
    only = [s for s in ONLY if s]
    for name, params in SKORG.items():
        if only and name not in only and name != "skorg default":
            continue
        start = time.perf_counter()
        org = QuestionnaireOrganizer(**params).fit(X)
        out[name] = (org.trees_, org.orders_, time.perf_counter() - start)
    for name, (method, metric) in SCIPY.items() if BASELINES else ():
        start = time.perf_counter()
        trees, orders = scipy_trees(X, method, metric)
        out[name] = (trees, orders, time.perf_counter() - start)
    if include_spectral and BASELINES and X.ndim == 2:
        from sklearn.cluster import SpectralBiclustering, SpectralCoclustering

        Xp = X - X.min() + 1e-9  # both need non-negative data
        rows, cols = X.shape  # at most as many clusters as an axis has points
        for name, cls, k in (
            ("sklearn SpectralCoclustering", SpectralCoclustering, min(10, rows, cols)),
            ("sklearn SpectralBiclustering", SpectralBiclustering, (min(10, rows), min(6, cols))),
        ):
            start = time.perf_counter()
            model = cls(n_clusters=k, random_state=0).fit(Xp)
            trees = [flat_tree(model.row_labels_), flat_tree(model.column_labels_)]
            out[name] = (trees, [t.leaf_order for t in trees], time.perf_counter() - start)
    return out


# ------------------------------------------------------------------------------------ datasets
def labelled(name):
    from sklearn import datasets

    if name in ("digits", "digits_transposed"):
        X, y = datasets.load_digits(return_X_y=True)
        X = X[:, X.std(axis=0) > 0]
        if name == "digits_transposed":  # pixels x images: no labels on the rows
            X, y = X.T.copy(), None
    elif name == "diabetes":
        X, _ = datasets.load_diabetes(return_X_y=True)
        X, y = (X - X.mean(axis=0)) / X.std(axis=0), None
    elif name == "iris":
        X, y = datasets.load_iris(return_X_y=True)
        X = (X - X.mean(axis=0)) / X.std(axis=0)
    else:
        loader = {"wine": datasets.load_wine, "breast_cancer": datasets.load_breast_cancer}[name]
        X, y = loader(return_X_y=True)
        X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X.astype(np.float64), y


def minilm_tensor():
    try:
        from skorg.attention import extract_attention, load_minilm, network_tensor, stdlib_sentences

        model, tokenizer = load_minilm()
    except ImportError:  # no torch, transformers or offline weights
        return None
    text = " ".join(stdlib_sentences(60))
    inputs = tokenizer(text, truncation=True, max_length=128, return_tensors="pt")
    T, index = network_tensor(extract_attention(model, inputs), 0)  # query x key x head
    return np.asarray(T, dtype=np.float64), index[:, 0]


def table(rows, cols):
    head = f"{'method':<30}" + "".join(f"{c:>9}" for c in cols)
    print(head)
    for name, vals in rows.items():
        print(f"{name:<30}" + "".join(f"{vals.get(c, float('nan')):>9.4f}" for c in cols))


def bench_labelled(name):
    X, y = labelled(name)
    print(f"\n## {name} {X.shape}")
    rows = {}
    for method, (trees, _, secs) in run_methods(X).items():
        e1, e5, l1 = compression(X, trees)
        rows[method] = {
            "err1": e1, "err5": e5, "l1": l1, "s": secs,
            "ari": float("nan") if y is None else level_ari(trees[0], y),
        }  # fmt: skip
    table(rows, ["err1", "err5", "l1", "ari", "s"])
    return rows


def bench_shuffled(sizes=(64, 128), seeds=(0, 1, 2), noise=0.05):
    print(f"\n## shuffled smooth matrices {sizes} x 3 kinds x {len(seeds)} seeds")
    acc = {}
    for kind in ("band", "ridge", "product"):
        for n in sizes:
            for seed in seeds:
                data = make_shuffled_matrix(n, n, kind=kind, noise=noise, random_state=seed)
                truth = neumann_stress(data.X[np.ix_(data.row_true_order, data.col_true_order)])
                for method, (trees, orders, secs) in run_methods(data.X, False).items():
                    rho = 0.5 * (
                        order_spearman(orders[0], data.row_true_order)
                        + order_spearman(orders[1], data.col_true_order)
                    )
                    stress = neumann_stress(data.X[np.ix_(orders[0], orders[1])]) / truth
                    e1, e5, l1 = compression(data.X, trees)
                    acc.setdefault(method, []).append((rho, stress, e1, e5, l1, secs))
    rows = {
        m: dict(zip(["rho", "stress", "err1", "err5", "l1", "s"], np.mean(v, axis=0)))
        for m, v in acc.items()
    }
    table(rows, ["rho", "stress", "err1", "err5", "l1", "s"])
    return rows


def bench_minilm():
    got = minilm_tensor()
    if got is None:
        print("\n## MiniLM attention: skipped (needs skorg[attention] and the MiniLM weights)")
        return {}
    T, layers = got
    print(f"\n## MiniLM attention tensor {T.shape}")
    rows = {}
    for method, (trees, _, secs) in run_methods(T).items():
        e1, e5, l1 = compression(T, trees)
        rows[method] = {
            "err1": e1, "err5": e5, "l1": l1, "ari": level_ari(trees[2], layers), "s": secs,
        }  # fmt: skip
    table(rows, ["err1", "err5", "l1", "ari", "s"])
    return rows


def bench_runtime(n=512, repeats=3):
    """The default against the previous default (flexible tree, emd_beta=1) at n x n."""
    X = make_shuffled_matrix(n, n, kind="band", noise=0.05, random_state=0).X
    configs = {
        "previous default (flexible, beta=1)": {
            "tree_method": "flexible",
            "emd_beta": 1.0,
            "ordering": "emd_olo",
        },
        "stop-19 default (average)": {"tree_method": "average", "ordering": "emd_olo"},
        "skorg default": {},
    }
    for params in configs.values():  # compile every kernel first
        QuestionnaireOrganizer(n_iter=1, **params).fit(X[:64, :64])
    best = dict.fromkeys(configs, np.inf)
    for _ in range(repeats):
        for name, params in configs.items():
            start = time.perf_counter()
            QuestionnaireOrganizer(**params).fit(X)
            best[name] = min(best[name], time.perf_counter() - start)
    base = best["previous default (flexible, beta=1)"]
    print(f"\n## runtime {n} x {n}, best of {repeats}")
    for name, secs in best.items():
        print(f"{name:<40}{secs:>8.3f} s{secs / base:>8.2f}x")
    return best


# ------------------------------------------------------------------------------------ kinds
KIND_SKORG = {
    "skorg default": {},
    "skorg ordering=shortest": {"ordering": "shortest"},  # the default before "smoothest"
    "skorg average": {"tree_method": "average"},
    "skorg ward_slices": {"tree_method": "ward_slices"},
    "skorg paper_3d_heads": {"preset": "paper_3d_heads"},
}
if "--presets" in sys.argv:  # the second preset too (10 sweeps of flexible trees: slow)
    KIND_SKORG["skorg paper_2d_holder"] = {"preset": "paper_2d_holder"}
KIND_COLS = ["err5", "l1", "ari_lvl", "ari_k", "ari_best", "rho", "s"]


def cyclic_spearman(order, cyclic):
    """|Spearman| of a recovered order (true indices) against 0..n-1, at the best rotation of
    the truth for a cyclic axis (a cycle has no first point)."""
    n = order.shape[0]
    truth = np.arange(n)
    if not cyclic:
        return order_spearman(order, truth)
    return max(order_spearman(order, np.roll(truth, r)) for r in range(n))


def ari_measures(tree, labels):
    k = np.unique(labels).shape[0]
    best = max(adjusted_rand_score(labels, tree.labels(lvl)) for lvl in range(tree.n_levels))
    return level_ari(tree, labels), adjusted_rand_score(labels, tree.cut(k)), best


def kind_methods(X, n_classes):
    """{name: (trees, orders, seconds)}: skorg's rows, SciPy's linkages with optimal leaf
    ordering and scikit-learn's spectral co-clustering, on the same data."""
    out = {}
    for name, params in KIND_SKORG.items():
        start = time.perf_counter()
        org = QuestionnaireOrganizer(random_state=0, **params).fit(X)
        out[name] = (org.trees_, org.orders_, time.perf_counter() - start)
    dense = X.toarray() if hasattr(X, "toarray") else X
    for name, (method, metric) in SCIPY.items():
        start = time.perf_counter()
        trees, orders = scipy_trees(dense, method, metric)
        out[name] = (trees, orders, time.perf_counter() - start)
    if dense.ndim == 2:
        from sklearn.cluster import SpectralCoclustering

        k = min(n_classes or 10, *dense.shape)
        start = time.perf_counter()
        model = SpectralCoclustering(n_clusters=k, random_state=0).fit(dense - dense.min() + 1e-9)
        trees = [flat_tree(model.row_labels_), flat_tree(model.column_labels_)]
        out["sklearn SpectralCoclustering"] = (
            trees, [t.leaf_order for t in trees], time.perf_counter() - start,
        )  # fmt: skip
    return out


def measure_case(case, seeds):
    """{method: {measure: value}} for one dataset; with known orders, the mean over shuffles."""
    X = case.X
    n_classes = max((np.unique(v).shape[0] for v in case.labels.values()), default=None)
    acc = {}
    for seed in seeds if case.orders else [None]:
        perms = [np.arange(n) for n in X.shape]
        if seed is not None:
            rng = np.random.default_rng(seed)
            perms = [rng.permutation(n) for n in X.shape]
        Xs = X[perms[0]][:, perms[1]] if X.ndim == 2 else X[np.ix_(*perms)]
        dense = Xs.toarray() if hasattr(Xs, "toarray") else Xs
        for method, (trees, orders, secs) in kind_methods(Xs, n_classes).items():
            row = acc.setdefault(method, {c: [] for c in KIND_COLS})
            _, e5, l1 = compression(dense, trees)
            row["err5"].append(e5)
            row["l1"].append(l1)
            row["s"].append(secs)
            for axis, labels in case.labels.items():
                for col, v in zip(
                    ("ari_lvl", "ari_k", "ari_best"),
                    ari_measures(trees[axis], np.asarray(labels)[perms[axis]]),
                ):
                    row[col].append(v)
            for axis, cyclic in case.orders.items():
                row["rho"].append(cyclic_spearman(perms[axis][orders[axis]], cyclic))
    return {m: {c: float(np.mean(v)) if v else float("nan") for c, v in r.items()} for m, r in
            acc.items()}  # fmt: skip


def _print_row(kind, dataset, method, vals):
    cells = "".join(f"{vals.get(c, float('nan')):>9.3f}" for c in KIND_COLS)
    print(f"{kind:<11}{dataset:<17}{method:<30}{cells}", flush=True)


def kinds_criteria(results, cases):
    """The issue's "What it must show" checks for skorg's default, one line per dataset."""
    print("\n## criteria for skorg default (ARI at k = class count, as fcluster's maxclust)")
    scipy_names = list(SCIPY)
    series_rho = {}
    for name, rows in results.items():
        d, case = rows["skorg default"], cases[name]
        ratio = d["s"] / rows["skorg average"]["s"]
        checks = [f"time {ratio:.2f}x average"]
        if case.labels:
            dom = [m for m in scipy_names
                   if rows[m]["err5"] < d["err5"] and rows[m]["ari_k"] > d["ari_k"]]  # fmt: skip
            ref = max(rows["scipy average cosine"]["ari_k"], rows["scipy ward"]["ari_k"])
            best_ari = max(scipy_names, key=lambda m: rows[m]["ari_k"])
            checks += [
                "not dominated" if not dom else f"DOMINATED by {', '.join(dom)}",
                f"ari {d['ari_k']:.3f} {'>=' if d['ari_k'] >= 0.9 * ref else 'BELOW'} 0.9 x "
                f"{ref:.3f}",
                f"err5 {d['err5']:.3f} {'<=' if d['err5'] <= rows[best_ari]['err5'] else 'ABOVE'}"
                f" {rows[best_ari]['err5']:.3f} ({best_ari})",
            ]
        if case.orders:
            best = max(rows[m]["rho"] for m in rows)
            series_rho[name] = rows
            checks.append(f"rho {d['rho']:.3f} {'>=' if d['rho'] >= 0.9 * best else 'BELOW'} "
                          f"0.9 x best {best:.3f}")  # fmt: skip
        print(f"{name:<17}" + "; ".join(checks))
    series = [n for n in series_rho if cases[n].kind == "series"]
    if series:
        means = {m: np.mean([results[n][m]["rho"] for n in series]) for m in results[series[0]]}
        best_scipy = max(scipy_names, key=means.get)
        print(
            f"real series mean |Spearman|: default {means['skorg default']:.3f}, best SciPy OLO "
            f"{means[best_scipy]:.3f} ({best_scipy}): "
            + ("holds" if means["skorg default"] >= means[best_scipy] else "DOES NOT HOLD")
        )


def bench_kinds(names=None, seeds=(0,), kinds=None):
    """The benchmark of kinds: one table, grouped by kind, a per-kind summary, the criteria
    (``kinds``: only the datasets of these kinds)."""
    import warnings

    import scipy.sparse as sp
    from _kinds_data import CASES, EXTRA_SERIES, Missing

    warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)
    rng = np.random.default_rng(0)  # load the kernels (run `skorg warmup` once to compile)
    for X in (rng.random((20, 16)), sp.random(20, 16, 0.3, "csr", rng=rng), rng.random((8, 6, 5))):
        for params in KIND_SKORG.values():
            QuestionnaireOrganizer(**params).fit(X)
    print(f"\n## kinds of data (known orders: mean over shuffles {list(seeds)})")
    print(f"{'kind':<11}{'dataset':<17}{'method':<30}" + "".join(f"{c:>9}" for c in KIND_COLS))
    results, cases = {}, {}
    for name in names or CASES:
        try:
            case = {**CASES, **EXTRA_SERIES}[name]()
        except Missing as exc:
            print(f"{'':<11}{name:<17}skipped: {exc}")
            continue
        if kinds and case.kind not in kinds:
            continue
        cases[name], results[name] = case, measure_case(case, seeds)
        for method, vals in results[name].items():
            _print_row(case.kind, name, method, vals)
    print("\n## per kind: mean over its datasets")
    kinds = sorted({c.kind for c in cases.values()}, key=[c.kind for c in cases.values()].index)
    for kind in kinds:
        members = [n for n in results if cases[n].kind == kind]
        methods = dict.fromkeys(m for n in members for m in results[n])  # tensors: no spectral
        for method in methods:
            rows = [results[n][method] for n in members if method in results[n]]
            vals = {c: np.nanmean([r[c] for r in rows]) for c in KIND_COLS}
            _print_row(kind, f"{len(rows)} datasets", method, vals)
    kinds_criteria(results, cases)
    return results


def main(names):
    runs = {
        "digits": lambda: bench_labelled("digits"),
        "wine": lambda: bench_labelled("wine"),
        "breast_cancer": lambda: bench_labelled("breast_cancer"),
        # checks on kinds of data the default was not chosen on (run them by name)
        "iris": lambda: bench_labelled("iris"),
        "diabetes": lambda: bench_labelled("diabetes"),
        "digits_transposed": lambda: bench_labelled("digits_transposed"),
        "shuffled": bench_shuffled,
        "minilm": bench_minilm,
        "runtime": bench_runtime,
        "kinds": bench_kinds,
    }
    extra = ("iris", "diabetes", "digits_transposed", "kinds")
    if names and names[0] == "kinds":  # kinds [DATASET ...]: the suite, or some of its data
        if "extra_series" in names:
            from _kinds_data import EXTRA_SERIES

            i = names.index("extra_series")
            names = [*names[:i], *EXTRA_SERIES, *names[i + 1 :]]
        bench_kinds(names[1:] or None, tuple(range(N_SEEDS)), KINDS or None)
        return
    for name in names or [n for n in runs if n not in extra]:
        runs[name]()


ONLY = []  # --only "skorg a,skorg b": run just these skorg methods (and the default)
N_SEEDS = 1  # kinds --seeds N: shuffles 0..N-1 of the datasets with known orders
KINDS = []  # kinds --kind series,images: only the datasets of these kinds
BASELINES = True  # --no-baselines: skip SciPy and scikit-learn

if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--presets"]
    if "-h" in args or "--help" in args:
        print(__doc__)
        sys.exit(0)
    if "--no-baselines" in args:
        BASELINES = False
        args.remove("--no-baselines")
    if "--only" in args:
        i = args.index("--only")
        ONLY.extend(args[i + 1].split(","))
        del args[i : i + 2]
    if "--seeds" in args:
        i = args.index("--seeds")
        N_SEEDS = int(args[i + 1])
        del args[i : i + 2]
    if "--kind" in args:
        i = args.index("--kind")
        KINDS.extend(args[i + 1].split(","))
        del args[i : i + 2]
    main(args)
