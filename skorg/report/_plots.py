"""Figures of the analyses as matplotlib figures (matplotlib is imported inside each function).

Each function returns a :class:`matplotlib.figure.Figure` built with the object API (no
pyplot, no global state), so it can be shown, saved or embedded in a report.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "plot_head_entropies",
    "plot_paraproduct_reconstructions",
    "plot_pruning_curves",
    "plot_scale_coefficients",
    "plot_top_coefficients",
]


def _new_figure(width, height):
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("figures need matplotlib: `pip install skorg[plot]`.") from exc
    return Figure(figsize=(width, height), layout="constrained")


def plot_pruning_curves(result, *, ylabel="task metric", title="pruning curves"):
    """Pruning curves with their confidence bands over inputs.

    Parameters
    ----------
    result : PruningResult
        From :func:`skorg.attention.prune_curves`; bands are drawn where it holds intervals
        (a per-input metric), and the areas of the random orders as a grey spread.
    ylabel, title : str

    Returns
    -------
    fig : matplotlib.figure.Figure
        One axes with a line per order and, with intervals, one filled band per order.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.attention import PruningResult
    >>> from skorg.report import plot_pruning_curves
    >>> r = PruningResult(np.array([0, 0.5, 1.0]), 1.0, {"a": np.array([1, 0.8, 0.2])},
    ...                   {"a": 0.7}, {"a": 0.0}, 0.9)
    >>> fig = plot_pruning_curves(r)
    >>> len(fig.axes[0].lines)  # the curve and the threshold line
    2
    """
    fig = _new_figure(7.0, 4.4)
    ax = fig.subplots()
    markers = "osD^vP*X"
    level = getattr(result, "confidence_level", 0.95)
    for i, (name, values) in enumerate(result.curves.items()):
        label = f"{name} (AUC {result.auc[name]:.3f}"
        band = result.intervals.get(name, {}).get("curve")
        if band is not None:
            ci = result.intervals[name]["auc"]
            label += f" [{ci.low:.3f}, {ci.high:.3f}]"
        (line,) = ax.plot(
            result.fractions, values, marker=markers[i % len(markers)], ms=4, label=label + ")"
        )
        if band is not None:
            ax.fill_between(
                result.fractions, band.low, band.high, color=line.get_color(), alpha=0.18, lw=0
            )
    ax.axhline(
        result.threshold * result.baseline,
        color="0.5",
        ls="--",
        lw=1,
        label=f"{result.threshold:.0%} of unpruned",
    )
    ax.set_xlabel("fraction of heads removed")
    ax.set_ylabel(ylabel)
    extra = f"; bands: {level:.0%} bootstrap intervals over inputs" if result.intervals else ""
    ax.set_title(title + extra, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def plot_head_entropies(values, *, labels=None, title="per-head entropy"):
    """Per-head entropies under several trees, heads sorted by the first series (Fig. 5).

    Parameters
    ----------
    values : mapping of name -> array of shape (n_heads,) or (n_samples, n_heads)
        Per-sample values are drawn as the mean with its 2.5-97.5% range over samples.
    labels : sequence of str, optional
        Head names (shown when there are at most 40 heads).
    title : str

    Returns
    -------
    fig : matplotlib.figure.Figure
        One axes with a line per series.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.report import plot_head_entropies
    >>> fig = plot_head_entropies({"organized": np.array([[1.0, 2.0], [1.5, 2.5]]),
    ...                            "token order": np.array([[2.0, 3.0], [2.5, 3.5]])})
    >>> len(fig.axes[0].lines)
    2
    """
    series = {k: np.atleast_2d(np.asarray(v, dtype=float)) for k, v in values.items()}
    if not series:
        raise ValueError("values holds no series.")
    first = next(iter(series.values()))
    order = np.argsort(first.mean(axis=0), kind="stable")
    fig = _new_figure(8.0, 4.2)
    ax = fig.subplots()
    x = np.arange(order.size)
    for name, v in series.items():
        mean = v.mean(axis=0)[order]
        (line,) = ax.plot(x, mean, marker="o", ms=3, label=name)
        if v.shape[0] > 1:
            low, high = np.quantile(v[:, order], [0.025, 0.975], axis=0)
            ax.fill_between(x, low, high, color=line.get_color(), alpha=0.15, lw=0)
    if labels is not None and order.size <= 40:
        ax.set_xticks(x, [str(labels[i]) for i in order], rotation=90, fontsize=7)
    ax.set_xlabel("head (sorted by the first series)")
    ax.set_ylabel("l1 entropy")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_paraproduct_reconstructions(f, *, row_tree=None, column_tree=None, title=""):
    """softmax(f) beside its exact, true-derivative, paper and collapsed reconstructions.

    The paper's Fig. 2 for one head: the telescoping sum (exact), the paraproduct with the
    true softmax derivatives, the paper's ``A' = A'' = exp`` and the collapsed Eq. 18
    (``A' = A'' = 1``), each with its relative error in the panel title.

    Parameters
    ----------
    f : array-like of shape (n_queries, n_keys)
        Logits of one head.
    row_tree, column_tree : PartitionTree, optional
        The organized trees (default: dyadic trees on the given order).
    title : str

    Returns
    -------
    fig : matplotlib.figure.Figure
        Five image axes (softmax and the four reconstructions, titled with the variant keys
        of the tables): one colour scale for those within 5% of softmax's range, and an own
        colour bar for each reconstruction beyond it (linear, or symmetric log past 100
        times softmax's range), so that no panel saturates.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.report import plot_paraproduct_reconstructions
    >>> f = np.random.default_rng(0).normal(size=(8, 8))
    >>> fig = plot_paraproduct_reconstructions(f)
    >>> [len(ax.images) for ax in fig.axes[:5]]
    [1, 1, 1, 1, 1]
    """
    from skorg.transforms import paraproduct_decomposition

    from ._paraproduct import VARIANT_LABELS

    f = np.asarray(f, dtype=np.float64)
    kw = {"row_tree": row_tree, "column_tree": column_tree, "keep_terms": False}
    true = paraproduct_decomposition(f, "softmax", **kw)
    target = true.values

    def named(key):  # the reports' one name of each variant, on two lines
        return f"{key}\n{VARIANT_LABELS[key]}"

    panels = [("softmax(f)", target), (named("exact"), true.reconstruct())]
    panels.append((named("softmax"), true.approximation))
    for name in ("softmax_exp", "softmax_collapsed"):
        panels.append((named(name), paraproduct_decomposition(f, name, **kw).approximation))
    norm = np.linalg.norm(target)
    fig = _new_figure(15.0, 3.4)
    axes = fig.subplots(1, 5)
    # one colour scale for softmax and the reconstructions within 5% of its range, covering
    # all of them; a reconstruction beyond that (Eq. 18's, typically) gets its own scale, so
    # that no panel saturates (a symmetric log scale when it spans over 100 times softmax's)
    lo, hi = float(target.min()), float(target.max())
    span = hi - lo if hi > lo else 1.0
    near = [
        not (float(M.min()) < lo - 0.05 * span or float(M.max()) > hi + 0.05 * span)
        for _, M in panels
    ]
    vmin = min(float(M.min()) for (_, M), ok in zip(panels, near) if ok)
    vmax = max(float(M.max()) for (_, M), ok in zip(panels, near) if ok)
    shared = []
    for ax, (label, M), ok in zip(axes, panels, near):
        if ok:
            image = ax.imshow(M, cmap="viridis", vmin=vmin, vmax=vmax, interpolation="nearest")
            shared.append(ax)
        else:
            image = ax.imshow(M, cmap="viridis", norm=_own_norm(M, span), interpolation="nearest")
            fig.colorbar(image, ax=ax, shrink=0.8, label="own scale")
        err = np.linalg.norm(M - target) / norm if norm > 0 else 0.0
        ax.set_title(label if M is target else f"{label}\nrel. error {err:.2g}", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(axes[0].images[0], ax=shared, shrink=0.8, label="attention weight")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def _own_norm(M, reference_span):
    """Colour limits at the panel's own extremes (nothing saturates); symmetric log when its
    range is over 100 times the reference's, linear within that reference range of 0."""
    from matplotlib.colors import Normalize, SymLogNorm

    lo, hi = float(M.min()), float(M.max())
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    if hi - lo > 100 * reference_span:
        return SymLogNorm(linthresh=reference_span, vmin=lo, vmax=hi, base=10)
    return Normalize(vmin=lo, vmax=hi)


def plot_scale_coefficients(f, *, row_tree=None, column_tree=None, title=""):
    """Size of the mixed expansion terms ``D_{j,j'}`` of softmax(f) across scales (Fig. 4).

    Parameters
    ----------
    f : array-like of shape (n_queries, n_keys)
    row_tree, column_tree : PartitionTree, optional
    title : str

    Returns
    -------
    fig : matplotlib.figure.Figure
        One image axes: ``log10 ||D_{j,j'}||`` relative to ``||softmax(f)||`` over the
        column scale ``j`` and the row scale ``j'``.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.report import plot_scale_coefficients
    >>> fig = plot_scale_coefficients(np.random.default_rng(0).normal(size=(8, 8)))
    >>> len(fig.axes[0].images)
    1
    """
    from skorg.transforms import paraproduct_decomposition

    res = paraproduct_decomposition(
        np.asarray(f, dtype=np.float64), "softmax", row_tree=row_tree, column_tree=column_tree,
        keep_terms=False,
    )  # fmt: skip
    norm = np.linalg.norm(res.values)
    rel = res.mixed_norms / (norm if norm > 0 else 1.0)
    with np.errstate(divide="ignore"):
        shown = np.where(rel > 0, np.log10(np.where(rel > 0, rel, 1.0)), np.nan)
    fig = _new_figure(5.2, 4.2)
    ax = fig.subplots()
    image = ax.imshow(shown.T, origin="lower", cmap="magma", interpolation="nearest")
    fig.colorbar(image, ax=ax, label="log10 ||D_{j,j'}|| / ||softmax(f)||")
    ax.set_xlabel("column (key) scale j")
    ax.set_ylabel("row (query) scale j'")
    ax.set_title(title or "mixed terms across scales", fontsize=10)
    return fig


def plot_top_coefficients(networks, *, k=400, title="largest tri-Haar coefficients"):
    """Sorted magnitudes of the largest tri-Haar coefficients of several networks (Fig. 6).

    Parameters
    ----------
    networks : mapping of name -> (X, trees)
        A query x key x head tensor and its three trees.
    k : int, default=400
        Coefficients shown per network.
    title : str

    Returns
    -------
    fig : matplotlib.figure.Figure
        One axes with a line per network: ``|C|`` divided by ``||X||`` in decreasing order.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.report import plot_top_coefficients
    >>> from skorg.trees import dyadic_tree
    >>> X = np.random.default_rng(0).random((4, 4, 2))
    >>> trees = [dyadic_tree(n) for n in X.shape]
    >>> fig = plot_top_coefficients({"a": (X, trees), "b": (X ** 2, trees)}, k=10)
    >>> len(fig.axes[0].lines)
    2
    """
    from skorg.transforms import trihaar_transform

    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}.")
    fig = _new_figure(6.5, 4.2)
    ax = fig.subplots()
    for name, (X, trees) in networks.items():
        X = np.asarray(X, dtype=np.float64)
        C = np.abs(trihaar_transform(X, *trees)).reshape(-1)
        norm = np.linalg.norm(X)
        top = np.sort(C)[::-1][:k] / (norm if norm > 0 else 1.0)
        ax.plot(np.arange(1, top.size + 1), top, label=name)
    ax.set_yscale("log")
    ax.set_xlabel("rank of the coefficient")
    ax.set_ylabel("|coefficient| / ||X||")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig
