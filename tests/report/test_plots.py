import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from skorg.report import (
    plot_head_entropies,
    plot_paraproduct_reconstructions,
    plot_pruning_curves,
    plot_scale_coefficients,
    plot_top_coefficients,
)
from skorg.stats import bootstrap_of_means
from skorg.transforms import trihaar_transform
from skorg.trees import dyadic_tree


def _result():
    from skorg.attention import PruningResult

    rng = np.random.default_rng(0)
    fractions = np.array([0.0, 0.5, 1.0])
    per = {n: np.clip(1 - fractions[:, None] * rng.random((3, 10)), 0.01, 1) for n in "ab"}
    per["a"][0] = per["b"][0] = 1.0
    curves = {n: v.mean(axis=1) for n, v in per.items()}
    auc = {n: float(np.trapezoid(c, fractions)) for n, c in curves.items()}
    intervals = {
        n: {
            "curve": bootstrap_of_means(v.T, method="percentile", n_resamples=200),
            "auc": bootstrap_of_means(np.trapezoid(v, fractions, axis=0), n_resamples=200),
        }
        for n, v in per.items()
    }
    return PruningResult(
        fractions, 1.0, curves, auc, {"a": 0.0, "b": 0.0}, 0.9, per_input=per, intervals=intervals
    )


def test_pruning_curves_have_a_line_and_a_band_per_order():
    r = _result()
    fig = plot_pruning_curves(r)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert len(ax.lines) == 3  # two orders and the threshold
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2
    np.testing.assert_allclose(ax.lines[0].get_ydata(), r.curves["a"])
    assert "[" in ax.get_legend().get_texts()[0].get_text()  # the interval of the area


def test_head_entropies_sorted_by_the_first_series_with_bands():
    v = np.array([[3.0, 1.0, 2.0], [3.2, 1.2, 2.2]])
    fig = plot_head_entropies({"organized": v, "token order": v + 1}, labels=["x", "y", "z"])
    ax = fig.axes[0]
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [1.1, 2.1, 3.1])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["y", "z", "x"]
    assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 2


def test_reconstruction_panels_and_their_errors():
    f = np.random.default_rng(1).normal(size=(8, 8)) * 3
    fig = plot_paraproduct_reconstructions(f)
    axes = fig.axes[:5]
    assert [len(ax.images) for ax in axes] == [1] * 5
    e = np.exp(f - f.max(1, keepdims=True))
    np.testing.assert_allclose(axes[0].images[0].get_array(), e / e.sum(1, keepdims=True))
    exact_err = float(axes[1].get_title().rsplit(" ", 1)[1])
    assert exact_err < 1e-12  # the telescoping identity


def test_scale_coefficients_is_a_depth_by_depth_image():
    from skorg.transforms import paraproduct_decomposition

    f = np.random.default_rng(2).normal(size=(8, 8))
    fig = plot_scale_coefficients(f)
    shown = np.asarray(fig.axes[0].images[0].get_array())
    assert shown.shape == (3, 3)  # 8 points: 3 scale steps per axis
    res = paraproduct_decomposition(f, "softmax")
    np.testing.assert_allclose(shown, np.log10(res.mixed_norms / np.linalg.norm(res.values)).T)


def test_top_coefficients_are_the_sorted_trihaar_magnitudes():
    rng = np.random.default_rng(3)
    X = rng.random((4, 4, 2))
    trees = [dyadic_tree(n) for n in X.shape]
    fig = plot_top_coefficients({"x": (X, trees), "constant": (np.ones((4, 4, 2)), trees)}, k=5)
    lines = fig.axes[0].lines
    C = np.sort(np.abs(trihaar_transform(X, *trees)).ravel())[::-1][:5] / np.linalg.norm(X)
    np.testing.assert_allclose(lines[0].get_ydata(), C)
    assert lines[1].get_ydata()[0] == pytest.approx(1.0)  # one coefficient holds all the norm
    with pytest.raises(ValueError, match="k must"):
        plot_top_coefficients({"x": (X, trees)}, k=0)


def test_no_reconstruction_panel_saturates_its_colours():
    f = np.random.default_rng(2).normal(size=(16, 16)) * 8  # Eq. 18 far outside [0, 1]
    fig = plot_paraproduct_reconstructions(f)
    titles = [ax.get_title().split("\n")[0] for ax in fig.axes[:5]]
    assert titles == ["softmax(f)", "exact", "softmax", "softmax_exp", "softmax_collapsed"]
    for ax in fig.axes[:5]:
        image = ax.images[0]
        data = np.asarray(image.get_array())
        assert image.norm.vmin <= data.min() and data.max() <= image.norm.vmax, ax.get_title()
    collapsed = fig.axes[4].images[0]
    assert collapsed.norm is not fig.axes[0].images[0].norm  # its own scale, with a bar
    assert len(fig.axes) > 6
