"""Report figures that read well: robust colour limits, one colour per category, labels apart."""

import struct

import numpy as np
import pytest

from skorg.report import _figures as figs

pytest.importorskip("matplotlib")


def _png_size(figure):
    width, height = struct.unpack(">II", figure.png[16:24])
    return width, height


def test_robust_limits_cut_only_outliers():
    rng = np.random.default_rng(0)
    v = rng.random(400)
    lo, hi, extend = figs.robust_limits(v)
    assert (lo, hi, extend) == (v.min(), v.max(), "neither")  # spread data keeps its range
    w = v.copy()
    w[7] = 100.0
    lo, hi, extend = figs.robust_limits(w)
    assert extend == "max" and hi == pytest.approx(np.percentile(w, 99)) and lo == w.min()
    w[8] = -100.0
    assert figs.robust_limits(w)[2] == "both"
    assert figs.robust_limits(np.ones(5))[:2] == (0.5, 1.5)
    assert figs.robust_limits([np.nan, np.inf])[:2] == (0.0, 1.0)
    binary = np.zeros((17, 17))
    np.fill_diagonal(binary, 1.0)  # an attention map with one bright entry per row keeps it
    assert figs.robust_limits(binary)[:2] == (0.0, 1.0)
    # units do not matter
    np.testing.assert_allclose(
        figs.robust_limits(w * 1e-150)[:2], np.array(figs.robust_limits(w)[:2]) * 1e-150
    )


def test_fenced_range_leaves_out_a_far_point_only():
    y = np.random.default_rng(1).normal(0.0, 0.05, size=72)
    lo, hi = figs._fenced_range(y)
    assert lo <= y.min() and hi >= y.max()  # no outlier: every point inside
    y[5] = -0.84
    lo, hi = figs._fenced_range(y)
    inside = np.delete(y, 5)
    assert lo > -0.84 and lo <= inside.min() and hi >= inside.max()


def test_category_colors_one_entry_per_value_present():
    layers = np.array([0, 0, 1, 3, 3, 5, 1])  # layers 2 and 4 absent
    codes, cmap, norm, categories = figs.category_colors(layers)
    np.testing.assert_array_equal(categories, [0, 1, 3, 5])
    assert cmap.N == 4 and norm.Ncmap == 4 and len(norm.boundaries) == 5
    np.testing.assert_array_equal(categories[codes], layers)
    colors = {tuple(cmap(norm(c))) for c in range(4)}
    assert len(colors) == 4  # four distinct colours
    many = figs.category_colors(np.arange(30))[1]
    assert many.N == 30


def test_spread_labels_never_overlap():
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    fig = Figure(figsize=(7.0, 5.2))
    ax = fig.subplots()
    rng = np.random.default_rng(2)
    points = np.concatenate([rng.normal(0, 0.01, size=(12, 2)), rng.normal(1, 0.3, size=(8, 2))])
    ax.scatter(points[:, 0], points[:, 1])
    ax.set_xlim(-0.5, 2.0)
    ax.set_ylim(-0.5, 2.0)
    figs._spread_labels(ax, points, [f"L{i}H{i}" for i in range(20)])
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # places the annotations' texts
    renderer = canvas.get_renderer()
    # the text's own box (an annotation's extent would add its leader line)
    boxes = [Text.get_window_extent(t, renderer) for t in ax.texts]
    assert 8 <= len(boxes) <= 20  # the crowded cluster keeps a few labels, not all twelve
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b)


def test_head_tree_labels_are_written_sideways_when_many():
    from skorg.metrics import cosine_affinity
    from skorg.trees import flexible_tree

    H = np.random.default_rng(0).normal(size=(72, 8))
    tree = flexible_tree(cosine_affinity(H))
    names = [f"L{h // 12}H{h % 12}" for h in range(72)]
    layer = np.arange(72) // 12
    tall = figs.tree_plot(tree, leaf_labels=names, leaf_colors=layer, color_label="layer",
                          caption="x")  # fmt: skip
    width, height = _png_size(tall)
    # one label per 0.17 inch (about 8-point text at 100 dpi, unscaled on the page)
    assert height >= 0.17 * 72 * 100 and width <= 1100
    small = figs.tree_plot(flexible_tree(cosine_affinity(H[:12])), leaf_labels=names[:12],
                           caption="x")  # fmt: skip
    assert _png_size(small)[0] > _png_size(small)[1]  # few leaves: the usual top-down tree


def test_spread_labels_never_cover_a_marker():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    fig = Figure(figsize=(7.0, 5.2))
    ax = fig.subplots()
    rng = np.random.default_rng(3)
    points = np.concatenate([rng.normal(0, 0.05, size=(20, 2)), rng.uniform(-1, 2, (30, 2))])
    ax.scatter(points[:, 0], points[:, 1], s=36)
    ax.set_xlim(-1.2, 2.2)
    ax.set_ylim(-1.2, 2.2)
    labels = [f"L{i % 6}H{i}" if i % 2 == 0 else "" for i in range(50)]
    figs._spread_labels(ax, points, labels)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # places the annotations' texts
    renderer = canvas.get_renderer()
    centres = ax.transData.transform(points)
    radius = 3.0 * fig.dpi / 72.0  # s=36: a 6-point marker
    assert len(ax.texts) >= 12
    for text in ax.texts:
        box = Text.get_window_extent(text, renderer)  # the text, without its leader line
        inside = (
            (centres[:, 0] > box.x0 - radius) & (centres[:, 0] < box.x1 + radius)
            & (centres[:, 1] > box.y0 - radius) & (centres[:, 1] < box.y1 + radius)
        )  # fmt: skip
        assert not inside.any(), text.get_text()
