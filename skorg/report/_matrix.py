"""The report of ``skorg organize``: a generic matrix or tensor on its learned trees."""

from __future__ import annotations

import time

import numpy as np

from . import _figures as figs
from ._errors import InputError
from ._html import Report, Table

__all__ = ["check_data", "load_array", "organize_report", "synthetic_comparison"]

MIN_SIDE = 4
_FRACTIONS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5)


def load_array(path, key=None, **options):
    """Read a matrix or tensor from a file with :func:`skorg.io.read_array`; the values only.

    ``.npy``, ``.npz`` (one array, or ``key``), ``.csv``/``.tsv``/``.txt`` (separator, header
    and index column detected), ``.parquet`` and ``.h5ad``; ``options`` go to
    :func:`~skorg.io.read_array`. A sparse matrix comes back dense. Errors are
    :class:`InputError` (or :class:`MissingExtraError` for a missing reader).
    """
    data = load_labelled(path, key=key, **options)
    X = data.X
    return X.toarray() if hasattr(X, "toarray") else X


def load_labelled(path, **options):
    """:func:`skorg.io.read_array`, its failures as the command line's errors."""
    from ..io import MissingDependencyError, ReadError, read_array
    from ._errors import MissingExtraError

    try:
        return read_array(path, **options)
    except ReadError as exc:  # its advice as the command line spells the options
        raise InputError(getattr(exc, "command_line", None) or str(exc)) from exc
    except MissingDependencyError as exc:
        raise MissingExtraError(str(exc)) from exc


def check_data(X, name="data"):
    """A finite float array with at least 2 axes of at least 4 entries each."""
    X = np.asarray(X)
    if X.dtype == object or not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
        raise InputError(f"{name} must be numeric, got dtype {X.dtype}")
    X = X.astype(np.float64)
    if X.ndim < 2:
        raise InputError(
            f"{name} must be a matrix or a tensor (2 or more axes), got shape {X.shape}"
        )
    if min(X.shape) < MIN_SIDE:
        raise InputError(
            f"every axis of {name} needs at least {MIN_SIDE} entries, got shape {X.shape}"
        )
    bad = int(np.count_nonzero(~np.isfinite(X)))
    if bad:
        raise InputError(f"{name} has {bad} NaN or infinite values; fill or remove them first")
    return X


def synthetic_comparison(data, *, n_iter=3):
    """Orders of the questionnaire and of SciPy against the hidden order of a shuffled matrix.

    Returns
    -------
    rows : list of dict
        ``method``, ``rho_rows``, ``rho_columns`` (``|Spearman|`` with the hidden orders),
        ``stress_over_true`` (Neumann stress relative to the true order) and ``seconds``.
    """
    from scipy.cluster.hierarchy import leaves_list, linkage

    from skorg.metrics import neumann_stress, order_spearman
    from skorg.organize import QuestionnaireOrganizer

    X = data.X
    truth = neumann_stress(X[np.ix_(data.row_true_order, data.col_true_order)])
    found = []
    for ordering in ("smoothest", "shortest", "emd_olo", "tree_olo", "tree"):
        start = time.perf_counter()
        org = QuestionnaireOrganizer(n_iter=n_iter, ordering=ordering).fit(X)
        found.append(
            (
                f"questionnaire, ordering={ordering}",
                org.row_order_,
                org.column_order_,
                time.perf_counter() - start,
            )
        )
    start = time.perf_counter()
    rows = leaves_list(linkage(X, "average", optimal_ordering=True))
    cols = leaves_list(linkage(X.T, "average", optimal_ordering=True))
    found.append(("scipy average + optimal leaf order", rows, cols, time.perf_counter() - start))
    return [
        {
            "method": name,
            "rho_rows": order_spearman(r, data.row_true_order),
            "rho_columns": order_spearman(c, data.col_true_order),
            "stress_over_true": neumann_stress(X[np.ix_(r, c)]) / truth,
            "seconds": seconds,
        }
        for name, r, c, seconds in found
    ]


def _check_names(names, shape):
    """One entry per axis: None, or one label per entry of that axis."""
    if names is None:
        return [None] * len(shape)
    names = list(names)
    if len(names) != len(shape):
        raise InputError(f"names has {len(names)} entries for data with {len(shape)} axes")
    out = []
    for axis, (labels, n) in enumerate(zip(names, shape)):
        if labels is not None:
            labels = np.asarray(labels, dtype=object)
            if labels.shape != (n,):
                raise InputError(
                    f"axis {axis} has {n} entries but {labels.size} names; give one name each"
                )
        out.append(labels)
    return out


def _slices(X):
    # 2-D views for the heatmaps: the matrix itself, or up to 3 slices along the last axes
    if X.ndim == 2:
        return [("matrix", X, None)]
    flat = X.reshape(X.shape[0], X.shape[1], -1)
    picks = np.unique(np.linspace(0, flat.shape[2] - 1, 3).round().astype(int))
    return [(f"slice {k} of the trailing axes", flat[:, :, k], k) for k in picks]


def _check_tie(tie_axes, shape):
    """The tied pair, or a one-line error naming the flag (before any fitting)."""
    if tie_axes is None:
        return None
    a, b = (int(v) for v in tie_axes)
    if not (0 <= a < len(shape) and 0 <= b < len(shape)) or a == b:
        raise InputError(
            f"--tie-axes {a},{b}: the data has axes 0 to {len(shape) - 1}; give two of them"
        )
    if shape[a] != shape[b]:
        raise InputError(
            f"--tie-axes {a},{b} needs two axes of equal length (they index the same "
            f"objects), got {shape[a]} and {shape[b]}"
        )
    return (a, b) if a < b else (b, a)


def organize_report(
    X,
    *,
    preset=None,
    n_iter=None,
    compress=None,
    denoise=False,
    name="data",
    comparison=None,
    progress=None,
    random_state=0,
    names=None,
    read_as=None,
    tie_axes=None,
):
    """Organize ``X`` and describe the result.

    Parameters
    ----------
    X : array-like with 2 or more axes
    preset, n_iter
        Passed to :class:`~skorg.QuestionnaireOrganizer`.
    compress : float, optional
        Keep this fraction of the Haar coefficients on the organized trees and return the
        reconstruction as output ``"compressed"``.
    denoise : bool, default=False
        Soft-threshold the Haar coefficients (universal threshold) and return output
        ``"denoised"``.
    name : str
        What the data is called in the report.
    comparison : list of dict, optional
        Rows of :func:`synthetic_comparison`, shown in their own section.
    progress : Progress, optional
    names : list of (array-like or None), optional
        Labels of every axis (row names, column names, ...), as
        :class:`skorg.io.LabelledArray` holds them; they go into the orders table
        (``orders.csv``), the summary and the heatmap ticks.
    random_state : int, default=0
        Seed of the random trees that serve as the unorganized reference.
    read_as : str, optional
        How a text table was read (:meth:`skorg.io.LabelledArray.describe_layout`: the
        separator, decimal mark, header line and index column, and why); a line of the
        summary and ``meta["read as"]`` of ``results.json``.
    tie_axes : pair of int, optional
        One tree and one order for these two axes (see
        :class:`~skorg.QuestionnaireOrganizer`); every number of the report is on the tied
        trees, and the heatmaps show the untied organization beside them.

    Returns
    -------
    report : Report
    outputs : dict of name -> ndarray
        ``"organized"``, the tree levels ``"levels_<axis>"`` and ``"order_<axis>"`` of every
        axis, and the optional ``"compressed"`` and ``"denoised"``.
    """
    from skorg.organize import QuestionnaireOrganizer
    from skorg.transforms import haar_compress, haar_denoise, l1_entropy, mixed_holder_exponent
    from skorg.trees import dyadic_tree

    step = progress.step if progress is not None else (lambda label: None)
    X = check_data(X, name)
    names = _check_names(names, X.shape)
    if compress is not None and not 0.0 < compress <= 1.0:
        raise InputError(f"--compress must be a fraction in (0, 1], got {compress}")
    start = time.perf_counter()
    tie = _check_tie(tie_axes, X.shape)
    step(f"organizing a {' x '.join(map(str, X.shape))} array")
    org = QuestionnaireOrganizer(preset=preset, n_iter=n_iter, tie_axes=tie).fit(X)
    organized = org.organize(X)
    untied = None
    if tie is not None:  # shown beside the tied organization
        untied = QuestionnaireOrganizer(preset=preset, n_iter=n_iter).fit(X)
    seconds = time.perf_counter() - start

    step("Haar sparsity and compression")
    rng = np.random.default_rng(random_state)
    tree_sets = {
        "organized trees": org.trees_,
        "dyadic trees, given order": [dyadic_tree(np.arange(n)) for n in X.shape],
        "dyadic trees, random order": [dyadic_tree(rng.permutation(n)) for n in X.shape],
    }
    sparsity = []
    for label, trees in tree_sets.items():
        row = {
            "trees": label,
            "l1_entropy": l1_entropy(X, trees, normalize=True),
            "l1_entropy_support_400": l1_entropy(X, trees, selection="support", normalize=True),
        }
        if X.ndim == 2:
            try:
                row["holder_alpha"] = mixed_holder_exponent(X, trees).alpha
            except ValueError:
                # constant (or all-zero) data has no Hoelder fit: said in the report
                row["holder_alpha"] = float("nan")
        sparsity.append(row)
    curves = {
        label: [haar_compress(X, trees, fraction=f).relative_error for f in _FRACTIONS]
        for label, trees in tree_sets.items()
    }

    outputs = {"organized": organized}
    for axis, (tree, order) in enumerate(zip(org.trees_, org.orders_, strict=True)):
        outputs[f"levels_{axis}"] = tree.to_levels()
        outputs[f"order_{axis}"] = np.asarray(order)
    extra_rows = []
    if compress is not None:
        approx = haar_compress(X, org.trees_, fraction=compress)
        outputs["compressed"] = approx.X
        extra_rows.append(
            {
                "output": "compressed.npy",
                "kept_coefficients": approx.n_kept,
                "relative_error": approx.relative_error,
            }
        )
    if denoise:
        approx = haar_denoise(X, org.trees_)
        outputs["denoised"] = approx.X
        extra_rows.append(
            {
                "output": "denoised.npy",
                "kept_coefficients": approx.n_kept,
                "relative_error": approx.relative_error,
            }
        )

    step("drawing the report")
    degenerate = []
    if np.ptp(X) == 0:
        degenerate.append(
            f"{name} is constant (every entry {X.flat[0]:g}): every order is as good as any "
            "other, the Haar detail coefficients are all zero and there is no Hoelder fit."
        )
    report = Report(
        f"skorg organize: {name}",
        summary=[
            *degenerate,
            f"{name}: shape {X.shape}, organized in {seconds:.1f} s "
            f"(preset {org.preset or 'default'})"
            + (
                "."
                if tie is None
                else f"; axes {tie[0]} and {tie[1]} tied (one tree and one order for both): "
                "every number below is on the tied trees, the heatmaps show the untied "
                "organization beside them."
            ),
            *([f"Read as: {read_as}."] if read_as else []),
            "Normalized l1 entropy of all Haar coefficients (lower is sparser, i.e. smoother "
            "on the trees): "
            + ", ".join(f"{r['trees']} {r['l1_entropy']:.2f}" for r in sparsity)
            + ".",
            "Relative error keeping 5% of the Haar coefficients: "
            + ", ".join(f"{k} {v[2]:.3f}" for k, v in curves.items())
            + ".",
            *[
                f"Axis {a} organized: {', '.join(str(n) for n in labels[org.orders_[a][:6]])}"
                + (", ..." if len(labels) > 6 else "")
                + "."
                for a, labels in enumerate(names)
                if labels is not None
            ],
        ],
        meta={"shape": "x".join(map(str, X.shape)), "preset": org.preset or "default"},
    )
    if read_as:
        report.meta["read as"] = read_as
    s = report.section("Organized and original data")
    s.text(
        "Rows and columns in the order given and in the leaf orders of the learned trees. "
        "Smooth structure hidden by a shuffled order shows up on the organized side."
    )
    more = []
    if untied is not None:
        more = [("organized, untied", untied.orders_[0], untied.orders_[1])]
    panels = [
        {
            "title": label,
            "X": M,
            "row_order": org.orders_[0],
            "col_order": org.orders_[1],
            "row_labels": names[0],
            "col_labels": names[1],
            "value": "value",
            "label": "organized" if tie is None else f"organized, axes {tie[0]},{tie[1]} tied",
            "more": more,
        }
        for label, M, _ in _slices(X)
    ]
    s.figure(
        figs.heatmap_pairs(
            panels,
            xlabel="axis 1 (columns)",
            ylabel="axis 0 (rows)",
            caption="Given order (left) and organized (right)."
            if tie is None
            else "Given order (left), organized with the tied axes (middle: the trees behind "
            "every number of this report) and without (right).",
        )
    )
    named = any(labels is not None for labels in names)
    order_rows = [
        {"axis": a, "position": p, "index": int(i)}
        | ({"name": "" if names[a] is None else str(names[a][i])} if named else {})
        for a, o in enumerate(org.orders_)
        for p, i in enumerate(o)
    ]
    s.table(
        Table(
            "orders",
            order_rows,
            caption="Organized order of every axis (position -> original index"
            + (", and its name)" if named else ")"),
            max_rows=8,
        )
    )

    s = report.section("Trees")
    s.text(
        "One partition tree per axis; folders per level (root first): "
        + "; ".join(f"axis {a}: {t.level_sizes().tolist()}" for a, t in enumerate(org.trees_))
        + "."
    )
    for a, tree in enumerate(org.trees_[:3]):
        s.figure(
            figs.tree_plot(
                tree,
                title=f"tree on axis {a}",
                caption=f"Partition tree on axis {a}, leaves in tree order.",
            )
        )

    s = report.section("Haar sparsity")
    s.text(
        "l1_entropy: sum of |Haar coefficients| on the trees over the Frobenius norm (all "
        "coefficients); l1_entropy_support_400: the 400 coefficients of largest support. "
        "Organizing concentrates the energy in coarse coefficients, so compare each column "
        "between tree sets, not across columns."
        + (
            " holder_alpha: the fitted mixed Hoelder exponent (larger is smoother)."
            if X.ndim == 2
            else ""
        )
    )
    s.table(Table("haar_sparsity", sparsity, caption="Sparsity of the data on each set of trees"))
    s.figure(
        figs.line_plot(
            list(_FRACTIONS),
            curves,
            xlabel="fraction of coefficients kept",
            ylabel="relative reconstruction error",
            logx=True,
            logy=True,
            title="Haar compression",
            caption="Keeping the largest Haar coefficients on each set of trees.",
        )
    )
    s.table(
        Table(
            "haar_compression",
            [
                {"fraction_kept": f, **{k: v[i] for k, v in curves.items()}}
                for i, f in enumerate(_FRACTIONS)
            ],
            caption="Relative error after keeping a fraction of the coefficients",
        )
    )
    if extra_rows:
        s.table(Table("outputs", extra_rows, caption="Written compressed / denoised data"))
    if comparison is not None:
        s = report.section("Recovering the hidden order")
        s.text(
            "The data is a shuffled smooth matrix with a known hidden order. rho: |Spearman| "
            "between the found and the hidden order (1 is perfect); stress_over_true: Neumann "
            "stress of the reordered matrix over that of the true order (1 is as smooth as "
            "the truth)."
        )
        s.table(
            Table(
                "order_recovery",
                comparison,
                caption="Questionnaire orderings against SciPy's optimal leaf ordering",
            )
        )
    return report, outputs
