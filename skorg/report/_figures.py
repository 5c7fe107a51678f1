"""Figures of the report, drawn with matplotlib's object API (no pyplot, no global state).

Every function returns a :class:`~skorg.report.Figure`; without matplotlib it returns a
figure without image, which the report shows as a hint to install the ``plot`` extra.
"""

from __future__ import annotations

import numpy as np

from ._html import Figure, matplotlib_available

__all__ = [
    "heatmap_pairs",
    "line_plot",
    "scatter_embedding",
    "score_grids",
    "tree_plot",
]

_MAX_TICK_LABELS = 40


def _figure(width, height):
    from matplotlib.figure import Figure as MplFigure

    return MplFigure(figsize=(width, height), layout="constrained")


def _missing(caption):
    return Figure(None, caption)


def _ticks(ax, axis, labels, order):
    if labels is None or len(order) > _MAX_TICK_LABELS:
        return
    names = [str(labels[i]) for i in order]
    if axis == "x":
        ax.set_xticks(range(len(order)), names, rotation=90, fontsize=7)
    else:
        ax.set_yticks(range(len(order)), names, fontsize=7)


def heatmap_pairs(panels, *, caption, xlabel="column", ylabel="row", cmap="viridis"):
    """Original and organized heatmaps side by side, one row of panels per matrix.

    Parameters
    ----------
    panels : list of dict
        Keys ``title``, ``X`` (2-D array), ``row_order``, ``col_order`` and optionally
        ``row_labels``, ``col_labels`` (tick labels, shown when there are few).
    """
    if not matplotlib_available():
        return _missing(caption)
    n = len(panels)
    fig = _figure(10.5, 4.4 * n)
    axes = np.atleast_2d(fig.subplots(n, 2, squeeze=False))
    for row, panel in enumerate(panels):
        X = np.asarray(panel["X"], dtype=float)
        r_id, c_id = np.arange(X.shape[0]), np.arange(X.shape[1])
        views = [
            ("original order", X, r_id, c_id),
            (
                "organized",
                X[np.ix_(panel["row_order"], panel["col_order"])],
                panel["row_order"],
                panel["col_order"],
            ),
        ]
        vmin, vmax = np.nanmin(X), np.nanmax(X)
        for col, (label, M, ro, co) in enumerate(views):
            ax = axes[row, col]
            image = ax.imshow(
                M, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest"
            )
            ax.set_title(f"{panel['title']}: {label}", fontsize=10)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            _ticks(ax, "x", panel.get("col_labels"), co)
            _ticks(ax, "y", panel.get("row_labels"), ro)
        fig.colorbar(image, ax=axes[row, :].tolist(), shrink=0.85, label=panel.get("value", ""))
    return Figure.from_matplotlib(fig, caption)


def tree_plot(tree, *, caption, leaf_labels=None, leaf_colors=None, title="", color_label=""):
    """A partition tree drawn top-down: root at the top, leaves in the tree's leaf order.

    Every node sits above the middle of its folder, so folders read as brackets over
    contiguous runs of leaves (any number of children per node).
    """
    if not matplotlib_available():
        return _missing(caption)
    n = tree.n_points
    fig = _figure(min(16.0, max(7.0, 0.16 * n)), 4.6)
    ax = fig.subplots()
    x = (np.asarray(tree.start) + np.asarray(tree.end) - 1) / 2.0
    depth = tree.n_levels - 1
    y = depth - np.asarray(tree.level, dtype=float)
    for node in range(tree.n_nodes):
        for child in tree.children(node):
            ax.plot(
                [x[node], x[child], x[child]], [y[node], y[node], y[child]], color="#4a5a6a", lw=0.9
            )
    leaves = np.asarray(tree.leaf_order)
    if leaf_colors is not None:
        points = ax.scatter(
            np.arange(n),
            np.zeros(n),
            c=np.asarray(leaf_colors)[leaves],
            cmap="tab10",
            s=22,
            zorder=3,
        )
        if color_label:
            fig.colorbar(points, ax=ax, label=color_label, shrink=0.8)
    if leaf_labels is not None and n <= 96:
        ax.set_xticks(
            range(n),
            [str(leaf_labels[i]) for i in leaves],
            rotation=90,
            fontsize=7 if n <= 48 else 5.5,
        )
    else:
        ax.set_xlabel("leaves in tree order")
    ax.set_yticks(range(depth + 1), [str(depth - k) for k in range(depth + 1)])
    ax.set_ylabel("tree level (0 = root)")
    ax.set_title(title, fontsize=11)
    ax.set_xlim(-1, n)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return Figure.from_matplotlib(fig, caption)


def scatter_embedding(coords, *, caption, labels=None, colors=None, color_label="", title=""):
    """Two diffusion coordinates of every point, optionally labelled and coloured."""
    if not matplotlib_available():
        return _missing(caption)
    coords = np.asarray(coords, dtype=float)
    fig = _figure(7.0, 5.2)
    ax = fig.subplots()
    points = ax.scatter(
        coords[:, 0], coords[:, 1], c=colors, cmap="tab10", s=36, edgecolor="k", linewidth=0.3
    )
    if colors is not None and color_label:
        fig.colorbar(points, ax=ax, label=color_label)
    if labels is not None and len(labels) <= 96:
        for (u, v), text in zip(coords, labels, strict=True):
            ax.annotate(str(text), (u, v), fontsize=6, xytext=(2, 2), textcoords="offset points")
    ax.set_xlabel("diffusion coordinate 1")
    ax.set_ylabel("diffusion coordinate 2")
    ax.set_title(title, fontsize=11)
    return Figure.from_matplotlib(fig, caption)


def score_grids(grids, *, caption, xlabel="head", ylabel="layer"):
    """One small heatmap per score: ``grids`` maps a name to a (n_layers, n_heads) array."""
    if not matplotlib_available():
        return _missing(caption)
    k = len(grids)
    fig = _figure(3.6 * k, 3.4)
    axes = np.atleast_1d(fig.subplots(1, k, squeeze=False)[0])
    for ax, (name, grid) in zip(axes, grids.items(), strict=True):
        grid = np.asarray(grid, dtype=float)
        image = ax.imshow(grid, cmap="magma", aspect="auto", interpolation="nearest")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_xticks(range(grid.shape[1]))
        ax.set_yticks(range(grid.shape[0]))
        ax.tick_params(labelsize=7)
        fig.colorbar(image, ax=ax, shrink=0.8)
    return Figure.from_matplotlib(fig, caption)


def line_plot(
    x, series, *, caption, xlabel, ylabel, title="", logx=False, logy=False, reference=None
):
    """Curves sharing one x axis; ``series`` maps a legend name to y values."""
    if not matplotlib_available():
        return _missing(caption)
    fig = _figure(7.0, 4.4)
    ax = fig.subplots()
    markers = "osD^vP*X"
    for i, (name, values) in enumerate(series.items()):
        ax.plot(x, values, marker=markers[i % len(markers)], ms=4, label=name)
    if reference is not None:
        ax.axhline(reference[0], color="0.5", ls="--", lw=1, label=reference[1])
    if logx:
        ax.set_xscale("log")
    values_all = np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in series.values()])
    if logy and np.any(np.isfinite(values_all) & (values_all > 0)):
        # a log axis needs a positive value (constant data compresses without error)
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=11)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return Figure.from_matplotlib(fig, caption)
