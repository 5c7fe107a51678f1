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


def robust_limits(values, low=1.0, high=99.0):
    """Colour limits that a few outliers do not squeeze.

    A side is cut at the ``low``-th (``high``-th) percentile only when the extreme value lies
    more than half the inter-percentile span beyond it; otherwise the extreme is kept, so
    well-spread data keeps its whole range. Returns ``(vmin, vmax, extend)`` with matplotlib's
    colour-bar ``extend`` ("neither", "min", "max" or "both") naming the sides cut.
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return 0.0, 1.0, "neither"
    vmin, vmax = float(v.min()), float(v.max())
    lo, hi = (float(q) for q in np.percentile(v, [low, high]))
    span = hi - lo
    cut_low = span > 0 and vmin < lo - 0.5 * span
    cut_high = span > 0 and vmax > hi + 0.5 * span
    vmin, vmax = (lo if cut_low else vmin), (hi if cut_high else vmax)
    if vmin == vmax:
        vmin, vmax = vmin - 0.5, vmax + 0.5
    extend = {(False, False): "neither", (True, False): "min", (False, True): "max"}
    return vmin, vmax, extend.get((bool(cut_low), bool(cut_high)), "both")


def _fenced_range(v, k=3.0):
    """Axis limits inside Tukey's far fences (quartiles -/+ ``k`` IQR), never past the data."""
    v = np.asarray(v, dtype=float)
    q1, q3 = np.percentile(v, [25.0, 75.0])
    iqr = q3 - q1
    lo, hi = float(v.min()), float(v.max())
    if iqr > 0:
        lo, hi = max(lo, q1 - k * iqr), min(hi, q3 + k * iqr)
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    margin = 0.06 * (hi - lo)
    return lo - margin, hi + margin


def category_colors(values):
    """One colour per distinct value present: ``(codes, cmap, norm, categories)``.

    ``codes[i]`` is the index of ``values[i]`` in ``categories`` (sorted); the colour map has
    exactly ``len(categories)`` colours, so a colour bar drawn from it has one entry per value
    that occurs (for example one per layer present), never the ten of a whole palette.
    """
    import matplotlib
    from matplotlib.colors import BoundaryNorm, ListedColormap

    categories, codes = np.unique(np.asarray(values), return_inverse=True)
    k = categories.shape[0]
    if k <= 10:
        colors = [matplotlib.colormaps["tab10"](i) for i in range(k)]
    elif k <= 20:
        colors = [matplotlib.colormaps["tab20"](i) for i in range(k)]
    else:
        colors = matplotlib.colormaps["viridis"](np.linspace(0.0, 1.0, k))
    cmap = ListedColormap(colors)
    norm = BoundaryNorm(np.arange(k + 1) - 0.5, k)
    return codes.reshape(-1), cmap, norm, categories


def _category_colorbar(fig, ax, cmap, norm, categories, label, **options):
    from matplotlib.cm import ScalarMappable

    bar = fig.colorbar(
        ScalarMappable(norm=norm, cmap=cmap),
        ax=ax,
        ticks=np.arange(categories.shape[0]),
        label=label,
        **options,
    )
    bar.ax.set_yticklabels([str(c) for c in categories])
    return bar


def _spread_labels(ax, points, labels, fontsize=7, marker_radius=3.5):
    """Annotate points so that no label covers a marker or an earlier label.

    Every candidate spot (beside the point, then further out with a leader line) is tried in
    turn; a label is placed at the first whose box is clear of every marker (of radius
    ``marker_radius`` points) and of every label already placed, and is left out when none
    is. Positions are in points of the laid-out axes, so they do not depend on the data's
    units.
    """
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    fig = ax.get_figure()
    fig.draw_without_rendering()  # the layout, hence the axes' size
    extent = ax.get_window_extent()
    ax_w, ax_h = extent.width * 72.0 / fig.dpi, extent.height * 72.0 / fig.dpi  # in points
    pts = np.column_stack(
        [(np.asarray(points)[:, 0] - x0) / (x1 - x0 or 1.0) * ax_w,
         (np.asarray(points)[:, 1] - y0) / (y1 - y0 or 1.0) * ax_h]
    )  # fmt: skip
    height = 1.25 * fontsize
    gap = marker_radius + 2.0
    # (dx, dy) of the text's anchor from its point, and which side of the anchor it lies on
    spots = [
        (gap, 1.0, "left"), (-gap, 1.0, "right"), (gap, -height - 1.0, "left"),
        (-gap, -height - 1.0, "right"), (gap + 4, height + 4, "left"),
        (-gap - 4, height + 4, "right"), (gap + 4, -2 * height - 4, "left"),
        (-gap - 4, -2 * height - 4, "right"), (gap + 14, 2 * height + 6, "left"),
        (-gap - 14, -3 * height - 6, "right"),
    ]  # fmt: skip
    placed = []  # boxes (left, bottom, right, top) in points
    r = marker_radius
    for (u, v), text in zip(pts, labels, strict=True):
        if not text:
            continue
        width = 0.62 * fontsize * len(str(text))
        for dx, dy, side in spots:
            left = u + dx - (width if side == "right" else 0.0)
            box = (left, v + dy, left + width, v + dy + height)
            if box[0] < 0 or box[2] > ax_w or box[1] < 0 or box[3] > ax_h:
                continue
            on_marker = np.any(
                (pts[:, 0] > box[0] - r) & (pts[:, 0] < box[2] + r)
                & (pts[:, 1] > box[1] - r) & (pts[:, 1] < box[3] + r)
            )  # fmt: skip
            on_label = any(
                box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed
            )
            if on_marker or on_label:
                continue
            placed.append(box)
            far = abs(dy) > height + 2
            ax.annotate(
                str(text), (x0 + u / ax_w * (x1 - x0), y0 + v / ax_h * (y1 - y0)),
                fontsize=fontsize, xytext=(dx, dy), textcoords="offset points", ha=side,
                va="bottom", arrowprops={"arrowstyle": "-", "lw": 0.4} if far else None,
            )  # fmt: skip
            break


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
        ``row_labels``, ``col_labels`` (tick labels, shown when there are few),
        ``label`` (of the organized view, default "organized") and ``more``: further
        organized views beside it, each ``(label, row_order, col_order)`` (for example the
        tied and the untied organization of one head), on the same colour scale.
    """
    if not matplotlib_available():
        return _missing(caption)
    n = len(panels)
    n_views = 2 + max(len(p.get("more", ())) for p in panels)
    fig = _figure(5.25 * n_views, 4.4 * n)
    axes = np.atleast_2d(fig.subplots(n, n_views, squeeze=False))
    for row, panel in enumerate(panels):
        X = np.asarray(panel["X"], dtype=float)
        r_id, c_id = np.arange(X.shape[0]), np.arange(X.shape[1])
        views = [
            ("original order", X, r_id, c_id),
            (
                panel.get("label", "organized"),
                X[np.ix_(panel["row_order"], panel["col_order"])],
                panel["row_order"],
                panel["col_order"],
            ),
        ]
        views += [(label, X[np.ix_(ro, co)], ro, co) for label, ro, co in panel.get("more", ())]
        # percentiles, not the extremes: one outlier must not squeeze every other value
        vmin, vmax, extend = robust_limits(X)
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
        fig.colorbar(
            image,
            ax=axes[row, :].tolist(),
            shrink=0.85,
            label=panel.get("value", ""),
            extend=extend,
        )
    return Figure.from_matplotlib(fig, caption)


def tree_plot(tree, *, caption, leaf_labels=None, leaf_colors=None, title="", color_label=""):
    """A partition tree: root at the top and leaves along the bottom, or, for more than 40
    labelled leaves, root at the left and the leaves down the page, so that every label is
    written horizontally at a legible size.

    Every node sits in the middle of its folder, so folders read as brackets over contiguous
    runs of leaves (any number of children per node). ``leaf_colors`` are categories (such
    as the layer of each head): one colour, and one colour-bar entry, per value present.
    """
    if not matplotlib_available():
        return _missing(caption)
    n = tree.n_points
    sideways = leaf_labels is not None and n > 40
    if sideways:
        fig = _figure(7.5, max(4.0, 0.17 * n + 1.2))
    else:
        fig = _figure(min(16.0, max(7.0, 0.16 * n)), 4.6)
    ax = fig.subplots()
    pos = (np.asarray(tree.start) + np.asarray(tree.end) - 1) / 2.0
    depth = tree.n_levels - 1
    height = depth - np.asarray(tree.level, dtype=float)

    def xy(along, up):  # leaves along x and levels up y, or levels along x, leaves down y
        return (up, along) if sideways else (along, up)

    for node in range(tree.n_nodes):
        for child in tree.children(node):
            u, v = xy(
                np.array([pos[node], pos[child], pos[child]]),
                np.array([height[node], height[node], height[child]]),
            )
            ax.plot(u, v, color="#4a5a6a", lw=0.9)
    leaves = np.asarray(tree.leaf_order)
    if leaf_colors is not None:
        codes, cmap, norm, categories = category_colors(np.asarray(leaf_colors)[leaves])
        u, v = xy(np.arange(n), np.zeros(n))
        ax.scatter(u, v, c=codes, cmap=cmap, norm=norm, s=22, zorder=3)
        if color_label:
            shrink = 0.35 if sideways else 0.8
            _category_colorbar(fig, ax, cmap, norm, categories, color_label, shrink=shrink)
    levels = (range(depth + 1), [str(depth - k) for k in range(depth + 1)])
    if sideways:
        ax.set_yticks(range(n), [str(leaf_labels[i]) for i in leaves], fontsize=8)
        ax.set_ylim(n, -1)  # first leaf at the top
        ax.set_xticks(*levels)
        ax.set_xlabel("tree level (0 = root)")
        ax.set_xlim(depth + 0.3, -0.3)  # root at the left, leaves at the right
        ax.yaxis.tick_right()
        hidden = ("top", "left")
    else:
        if leaf_labels is not None:
            ax.set_xticks(range(n), [str(leaf_labels[i]) for i in leaves], rotation=90, fontsize=8)
        else:
            ax.set_xlabel("leaves in tree order")
        ax.set_yticks(*levels)
        ax.set_ylabel("tree level (0 = root)")
        ax.set_xlim(-1, n)
        hidden = ("top", "right")
    ax.set_title(title, fontsize=11)
    for side in hidden:
        ax.spines[side].set_visible(False)
    return Figure.from_matplotlib(fig, caption)


def scatter_embedding(coords, *, caption, labels=None, colors=None, color_label="", title=""):
    """Two diffusion coordinates of every point, optionally labelled and coloured.

    The axes stop at Tukey's far fences of each coordinate (quartiles -/+ 3 IQR, with a
    margin): a point beyond them is drawn on the border as a triangle (the title says how
    many), so one outlier does not squeeze the rest. ``colors`` are categories, one
    colour-bar entry per value present. Labels that would overlap are moved aside or left
    out.
    """
    if not matplotlib_available():
        return _missing(caption)
    coords = np.asarray(coords, dtype=float)
    fig = _figure(7.0, 5.2)
    ax = fig.subplots()
    limits = [_fenced_range(coords[:, k]) for k in range(2)]
    # far points sit just inside the border, where their whole marker shows
    shown = coords.copy()
    outside = np.zeros(coords.shape[0], dtype=bool)
    for k, (lo, hi) in enumerate(limits):
        beyond = (coords[:, k] < lo) | (coords[:, k] > hi)
        inset = 0.03 * (hi - lo)
        shown[beyond, k] = np.clip(coords[beyond, k], lo + inset, hi - inset)
        outside |= beyond
    style = {"s": 36, "edgecolor": "k", "linewidth": 0.3}
    if colors is not None:
        codes, cmap, norm, categories = category_colors(colors)
        style.update(c=codes, cmap=cmap, norm=norm)
    if (~outside).any():
        sub = {k: (v[~outside] if k == "c" else v) for k, v in style.items()}
        ax.scatter(shown[~outside, 0], shown[~outside, 1], **sub)
    if outside.any():
        sub = {k: (v[outside] if k == "c" else v) for k, v in style.items()}
        ax.scatter(shown[outside, 0], shown[outside, 1], marker="^", **sub)
        title = f"{title} ({int(outside.sum())} far outside: triangles on the border)"
    ax.set_xlim(*limits[0])
    ax.set_ylim(*limits[1])
    if colors is not None and color_label:
        _category_colorbar(fig, ax, cmap, norm, categories, color_label)
    if labels is not None and len(labels) <= 96:
        _spread_labels(ax, shown, labels)
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
        vmin, vmax, extend = robust_limits(grid, 2.0, 98.0)
        image = ax.imshow(
            grid, cmap="magma", aspect="auto", interpolation="nearest", vmin=vmin, vmax=vmax
        )
        ax.set_title(name, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_xticks(range(grid.shape[1]))
        ax.set_yticks(range(grid.shape[0]))
        ax.tick_params(labelsize=7)
        fig.colorbar(image, ax=ax, shrink=0.8, extend=extend)
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
