"""Figures of the analyses as matplotlib figures (matplotlib is imported inside each function).

Each function returns a :class:`matplotlib.figure.Figure` built with the object API (no
pyplot, no global state), so it can be shown, saved or embedded in a report.
"""

from __future__ import annotations

import numpy as np

__all__ = ["plot_head_entropies", "plot_pruning_curves"]


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
