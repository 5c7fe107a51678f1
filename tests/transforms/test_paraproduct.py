"""Paraproduct decomposition: identities, oracles, averaging and validation."""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skorg.transforms import (
    EntrywiseNonlinearity,
    get_nonlinearity,
    paraproduct_decomposition,
    tensor_average,
)
from skorg.trees import PartitionTree, dyadic_tree

BUILTINS = [
    "identity",
    "square",
    "exp",
    "tanh",
    "sigmoid",
    "softmax",
    "softmax_exp",
    "softmax_collapsed",
]
FIELDS = [
    "values",
    "coarse",
    "column_terms",
    "row_terms",
    "mixed_terms",
    "mixed_sum",
    "modelled",
    "first_order",
    "second_order",
    "mixed_norms",
    "scale_errors",
    "first_factor_max",
]


def _rel(x, ref):
    return np.linalg.norm(x) / np.linalg.norm(ref)


def _random_tree(n, rng, max_group=3):
    """Random nested partition on a random leaf order: runs of 1..max_group folders merge."""
    order = rng.permutation(n)
    levels = [np.arange(n)]
    while levels[-1].max() > 0:
        fine = levels[-1]
        n_groups = fine.max() + 1
        sizes = []
        while sum(sizes) < n_groups:
            sizes.append(int(rng.integers(1, max_group + 1)))
        sizes[-1] -= sum(sizes) - n_groups
        coarse_of_group = np.repeat(np.arange(len(sizes)), sizes)
        levels.append(coarse_of_group[fine])
    by_position = np.array(levels[::-1])
    labels = np.empty_like(by_position)
    labels[:, order] = by_position
    return PartitionTree.from_levels(labels)


def _custom():
    return EntrywiseNonlinearity(lambda t: np.sin(t) + t**2 / 4, name="custom")


def _logits(shape, rng):
    return rng.normal(size=shape)


# ----------------------------------------------------------------------------- telescoping
@pytest.mark.parametrize("name", [*BUILTINS, "custom"])
@pytest.mark.parametrize("shape", [(16, 32), (8, 64), (32, 32)])
def test_telescoping_identity_dyadic(name, shape):
    rng = np.random.default_rng(0)
    f = _logits(shape, rng)
    A = _custom() if name == "custom" else name
    res = paraproduct_decomposition(f, A, keep_terms=True)
    assert _rel(res.reconstruct() - res.values, res.values) < 1e-12
    # the mixed terms kept one by one add up to the stored sum
    assert_allclose(res.mixed_terms.sum(axis=(0, 1)), res.mixed_sum, rtol=0, atol=1e-13)
    assert_allclose(res.approximation + res.residual, res.values, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", [*BUILTINS, "custom"])
def test_telescoping_identity_trees(name):
    rng = np.random.default_rng(1)
    f = _logits((13, 20), rng)
    row_tree, column_tree = _random_tree(13, rng), _random_tree(20, rng, max_group=4)
    assert row_tree.n_levels != column_tree.n_levels  # exercises depth padding
    A = _custom() if name == "custom" else name
    res = paraproduct_decomposition(
        f, A, row_tree=row_tree, column_tree=column_tree, keep_terms=True
    )
    assert _rel(res.reconstruct() - res.values, res.values) < 1e-12
    assert res.depth == max(row_tree.n_levels, column_tree.n_levels) - 1


def test_softmax_values_are_softmax():
    f = np.random.default_rng(2).normal(size=(8, 16)) * 5
    res = paraproduct_decomposition(f, "softmax")
    expected = np.exp(f) / np.exp(f).sum(axis=1, keepdims=True)
    assert_allclose(res.values, expected, rtol=1e-14, atol=0)
    assert_allclose(paraproduct_decomposition(f, "softmax_exp").values, expected, rtol=1e-13)


def test_all_scales_omitted_part_collapses():
    # with every mixed scale expanded, the omitted part telescopes to three terms
    f = np.random.default_rng(3).normal(size=(16, 8))
    res = paraproduct_decomposition(f, "tanh")
    J = res.depth
    base = np.tanh(res.average(J, 0)) + np.tanh(res.average(0, J)) - np.tanh(res.average(0, 0))
    assert_allclose(res.omitted, base, rtol=0, atol=1e-13)


def test_omitted_part_is_the_complement_of_the_scale_set():
    f = np.random.default_rng(4).normal(size=(16, 16))
    scales = np.array([[1, 2], [3, 0], [2, 2]])
    res = paraproduct_decomposition(f, "sigmoid", scales=scales, keep_terms=True)
    outside = np.ones((res.depth, res.depth), bool)
    outside[scales[:, 0], scales[:, 1]] = False
    expected = (
        res.coarse
        + res.column_terms.sum(0)
        + res.row_terms.sum(0)
        + res.mixed_terms[outside].sum(0)
    )
    assert_allclose(res.omitted, expected, rtol=0, atol=1e-14)
    assert np.isnan(res.scale_errors[outside]).all()
    assert np.isfinite(res.scale_errors[~outside]).all()


# ----------------------------------------------------------------------------- averaging
def _brute_dyadic_average(f, j, jp):
    ny, nx = f.shape
    by, bx = ny >> jp, nx >> j
    out = np.empty_like(f)
    for r in range(0, ny, by):
        for c in range(0, nx, bx):
            out[r : r + by, c : c + bx] = f[r : r + by, c : c + bx].mean()
    return out


def _brute_tree_average(f, row_tree, column_tree, j, jp):
    rl = row_tree.labels(min(jp, row_tree.n_levels - 1))
    cl = column_tree.labels(min(j, column_tree.n_levels - 1))
    out = np.empty_like(f)
    for r in np.unique(rl):
        for c in np.unique(cl):
            block = np.ix_(rl == r, cl == c)
            out[block] = f[block].mean()
    return out


def test_tensor_average_dyadic_matches_block_means():
    f = np.random.default_rng(5).normal(size=(8, 16))
    for j in range(5):
        for jp in range(4):
            assert_allclose(tensor_average(f, j, jp), _brute_dyadic_average(f, j, jp), atol=1e-14)
    assert_array_equal(tensor_average(f, 4, 3), f)


def test_tensor_average_trees_match_folder_means():
    rng = np.random.default_rng(6)
    f = rng.normal(size=(11, 9))
    rt, ct = _random_tree(11, rng), _random_tree(9, rng)
    depth = max(rt.n_levels, ct.n_levels) - 1
    for j in range(depth + 1):
        for jp in range(depth + 1):
            got = tensor_average(f, j, jp, row_tree=rt, column_tree=ct)
            assert_allclose(got, _brute_tree_average(f, rt, ct, j, jp), atol=1e-14)


@pytest.mark.parametrize("name", BUILTINS)
@pytest.mark.parametrize("shape", [(16, 8), (32, 32), (4, 64)])
def test_tree_version_equals_dyadic_version_exactly(name, shape):
    f = np.random.default_rng(7).normal(size=shape)
    dyadic = paraproduct_decomposition(f, name)
    tree = paraproduct_decomposition(
        f, name, row_tree=dyadic_tree(shape[0]), column_tree=dyadic_tree(shape[1])
    )
    for field in FIELDS:
        assert_array_equal(getattr(tree, field), getattr(dyadic, field), err_msg=field)


def test_details_add_up():
    f = np.random.default_rng(8).normal(size=(8, 8))
    res = paraproduct_decomposition(f, "identity", keep_terms=True)
    for j in range(res.depth):
        for jp in range(res.depth):
            u, a, b, c = res.details(j, jp)
            assert_allclose(u + a + b + c, res.average(j + 1, jp + 1), atol=1e-14)
            assert_allclose(u + a, res.average(j + 1, jp), atol=1e-14)
            assert_allclose(u + b, res.average(j, jp + 1), atol=1e-14)


# ----------------------------------------------------------------------------- oracles
def test_linear_oracle_is_exact():
    f = np.random.default_rng(9).normal(size=(16, 8))
    res = paraproduct_decomposition(f, "identity", keep_terms=True)
    for j in range(res.depth):
        for jp in range(res.depth):
            _, _, _, c = res.details(j, jp)
            assert_array_equal(res.mixed_terms[j, jp], c)
    assert_array_equal(res.residual, np.zeros_like(f))
    assert_array_equal(res.second_order, np.zeros_like(f))
    affine = EntrywiseNonlinearity(lambda t: 3 * t + 1, lambda t: np.full_like(t, 3.0))
    res = paraproduct_decomposition(f, affine, keep_terms=True)
    for j in range(res.depth):
        for jp in range(res.depth):
            assert_allclose(res.mixed_terms[j, jp], 3 * res.details(j, jp)[3], atol=1e-13)


def test_square_oracle_is_exact():
    f = np.random.default_rng(10).normal(size=(8, 16))
    res = paraproduct_decomposition(
        f, "square", scales=[[0, 0], [1, 2], [3, 1], [2, 2]], keep_terms=True
    )
    scale = np.linalg.norm(res.values)
    residual = np.zeros_like(f)
    for j in range(res.depth):
        for jp in range(res.depth):
            u, a, b, c = res.details(j, jp)
            D = 2 * u * c + 2 * a * b + c**2 + 2 * a * c + 2 * b * c
            assert np.linalg.norm(res.mixed_terms[j, jp] - D) < 1e-13 * scale
            if any((res.scales == (j, jp)).all(axis=1)):
                residual += c**2 + 2 * a * c + 2 * b * c
    assert np.linalg.norm(res.residual - residual) < 1e-13 * scale


def _row_softmax(x):
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def test_softmax_derivatives_agree_with_finite_differences():
    rng = np.random.default_rng(11)
    u, h, k = rng.normal(size=(3, 5, 7))
    A = get_nonlinearity("softmax")
    eps = 1e-5
    fd1 = (_row_softmax(u + eps * h) - _row_softmax(u - eps * h)) / (2 * eps)
    assert_allclose(A.first(u, h), fd1, rtol=0, atol=1e-10)
    fd2 = (A.first(u + eps * k, h) - A.first(u - eps * k, h)) / (2 * eps)
    assert_allclose(A.second(u, h, k), fd2, rtol=0, atol=1e-10)
    assert_allclose(A.second(u, h, k), A.second(u, k, h), rtol=0, atol=1e-15)
    # Jacobian diag(s) - s s^T row by row; every entry in [-1/4, 1/4]
    s = _row_softmax(u)
    for i in range(u.shape[0]):
        jac = np.diag(s[i]) - np.outer(s[i], s[i])
        assert_allclose(A.first(u, h)[i], jac @ h[i], atol=1e-15)
        assert np.abs(jac).max() <= 0.25
        assert np.isclose(A.first_factor_max(u[i : i + 1]), np.abs(jac).max(), rtol=1e-15)
    # the fused method used by the decomposition matches the separate ones
    _, t2, _ = A.terms(u, s, h, k, rng.normal(size=u.shape))
    assert_allclose(t2, A.second(u, h, k), atol=1e-15)


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid", "square"])
def test_entrywise_derivatives_and_finite_difference_fallback(name):
    A = get_nonlinearity(name)
    fd = EntrywiseNonlinearity(A.func)  # no derivatives given: finite differences
    x = np.linspace(-3, 3, 41).reshape(1, -1)
    one = np.ones_like(x)
    assert_allclose(fd.first(x, one), A.first(x, one), rtol=1e-8, atol=1e-9)
    assert_allclose(fd.second(x, one, one), A.second(x, one, one), rtol=1e-5, atol=1e-6)
    eps = 1e-6
    assert_allclose(
        A.first(x, one), (A.value(x + eps) - A.value(x - eps)) / (2 * eps), rtol=1e-7, atol=1e-9
    )


def test_plain_callable_becomes_entrywise():
    A = get_nonlinearity(np.sin)
    x = np.array([[0.3, -1.2]])
    assert_allclose(A.first(x, np.ones_like(x)), np.cos(x), rtol=1e-9)


# ----------------------------------------------------------------------------- theory
def _smooth(n):
    x = (np.arange(n) + 0.5) / n
    return 2 * np.sin(2 * np.pi * x)[:, None] * np.cos(3 * x)[None, :] + np.outer(x, x)


@pytest.mark.parametrize("name", ["softmax", "tanh"])
def test_residual_smaller_for_smooth_than_for_noise(name):
    n = 64
    smooth = _smooth(n)
    noise = np.random.default_rng(12).normal(size=(n, n))
    noise *= np.linalg.norm(smooth) / np.linalg.norm(noise)
    band = np.arange(2, 6)
    r_smooth = paraproduct_decomposition(smooth, name, scales=band).relative_error
    r_noise = paraproduct_decomposition(noise, name, scales=band).relative_error
    # measured ratios about 0.04 (softmax) and 0.05 (tanh): margin 2x
    assert r_smooth < 0.1 * r_noise
    # and it decreases as noise is removed
    errs = [
        paraproduct_decomposition(smooth + s * noise, name, scales=band).relative_error
        for s in (1.0, 0.3, 0.1, 0.03)
    ]
    assert all(e1 > e2 for e1, e2 in itertools.pairwise(errs))


@pytest.mark.parametrize("name", ["softmax", "tanh"])
def test_fine_scale_residual_shrinks_under_refinement(name):
    # the same smooth function sampled finer: fine-scale details shrink like 2**-j, the
    # second-order remainder faster (measured factor ~8 per doubling; asserted 4)
    errs = []
    for n in (32, 64, 128):
        J = int(np.log2(n))
        res = paraproduct_decomposition(_smooth(n), name, scales=np.arange(J - 3, J))
        errs.append(res.relative_error)
    assert errs[1] < errs[0] / 4 and errs[2] < errs[1] / 4


def test_true_softmax_expansion_is_row_shift_invariant():
    rng = np.random.default_rng(13)
    f = rng.normal(size=(16, 16))
    g = f + rng.normal(size=(16, 1)) * 10
    a, b = paraproduct_decomposition(f), paraproduct_decomposition(g)
    for field in ("values", "first_order", "second_order", "modelled", "omitted"):
        assert_allclose(getattr(a, field), getattr(b, field), rtol=0, atol=1e-13)


@pytest.mark.parametrize("M", [1e3, 1e5, 1e8])
@pytest.mark.parametrize("name", ["softmax", "softmax_exp", "softmax_collapsed"])
def test_large_logits_stay_finite(M, name):
    f = np.zeros((8, 8))
    f[4:, 4:] = M
    f2 = M * _smooth(32)
    for logits in (f, f2):
        res = paraproduct_decomposition(logits, name)
        for field in ("values", "first_order", "second_order", "approximation", "residual"):
            assert np.isfinite(getattr(res, field)).all(), field
        assert np.isfinite(res.scale_errors).all()
        assert _rel(res.reconstruct() - res.values, res.values) < 1e-12


def test_exp_overflow_is_a_clear_error():
    with pytest.raises(ValueError, match="not finite"):
        paraproduct_decomposition(np.full((4, 4), 1000.0), "exp")


# ----------------------------------------------------------------------------- options
def test_scale_sets():
    f = np.random.default_rng(14).normal(size=(128, 128))
    res = paraproduct_decomposition(f, "tanh", scales="paper", keep_terms=False)
    assert_array_equal(res.scales, [[4, 4]])
    assert res.mixed_terms is None
    res = paraproduct_decomposition(f[:16, :16], "tanh", scales=[1, 2], keep_terms=True)
    assert_array_equal(res.scales, [[1, 1], [1, 2], [2, 1], [2, 2]])
    assert_allclose(res.modelled, res.mixed_terms[1:3, 1:3].sum(axis=(0, 1)), atol=1e-14)
    empty = paraproduct_decomposition(f[:16, :16], "tanh", scales="paper")
    assert empty.scales.shape == (0, 2)
    assert_array_equal(empty.approximation, empty.values)


def test_resize_options():
    f = np.random.default_rng(15).normal(size=(20, 12))
    crop = paraproduct_decomposition(f, "tanh", resize="crop")
    assert crop.shape == (16, 8) and crop.original_shape == (20, 12)
    assert_array_equal(crop.values, paraproduct_decomposition(f[:16, :8], "tanh").values)
    pad = paraproduct_decomposition(f, "tanh", resize="pad")
    padded = np.pad(f, ((0, 12), (0, 4)), mode="edge")
    assert pad.shape == (32, 16)
    assert_array_equal(pad.first_order, paraproduct_decomposition(padded, "tanh").first_order)
    tree = paraproduct_decomposition(f, "tanh")
    explicit = paraproduct_decomposition(
        f, "tanh", row_tree=dyadic_tree(20), column_tree=dyadic_tree(12)
    )
    assert_array_equal(tree.first_order, explicit.first_order)
    with pytest.raises(ValueError, match="powers of two"):
        paraproduct_decomposition(f, "tanh", resize="error")
    with pytest.raises(ValueError, match="cannot be combined"):
        paraproduct_decomposition(f, "tanh", resize="crop", row_tree=dyadic_tree(20))


def test_attention_sized_map_needs_no_cropping():
    f = np.random.default_rng(16).normal(size=(197, 197))
    res = paraproduct_decomposition(f, "softmax", scales=np.arange(3, 8), keep_terms=False)
    assert res.shape == (197, 197) and res.depth == 8
    assert _rel(res.reconstruct() - res.values, res.values) < 1e-12


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"f": np.array([[1.0, np.nan], [0.0, 1.0]])}, ValueError, "NaN"),
        ({"f": np.ones(4)}, ValueError, "2D array"),
        ({"f": np.ones((0, 4))}, ValueError, "minimum of 1"),
        ({"nonlinearity": "relu"}, ValueError, "Unknown nonlinearity"),
        ({"nonlinearity": 3}, TypeError, "nonlinearity must be"),
        ({"scales": "coarse"}, ValueError, "scales must be"),
        ({"scales": [0, 5]}, ValueError, "scales must lie in 0..1"),
        ({"scales": np.zeros((2, 3), int)}, ValueError, "shape"),
        ({"scales": [0.5]}, TypeError, "integers"),
        ({"resize": "stretch"}, ValueError, "resize must be"),
        ({"row_tree": dyadic_tree(5)}, ValueError, "row_tree has 5 points"),
        ({"column_tree": np.arange(4)}, TypeError, "PartitionTree"),
    ],
)
def test_validation_errors(kwargs, err, match):
    args = {"f": np.ones((4, 4)), "nonlinearity": "tanh", **kwargs}
    f = args.pop("f")
    with pytest.raises(err, match=match):
        paraproduct_decomposition(f, **args)


def test_tensor_average_validation():
    with pytest.raises(ValueError, match="powers of two"):
        tensor_average(np.ones((3, 4)), 0, 0)
    with pytest.raises(ValueError, match="non-negative"):
        tensor_average(np.ones((4, 4)), -1, 0)


def test_one_by_one_matrix():
    res = paraproduct_decomposition([[2.0]], "softmax")
    assert res.depth == 0 and res.scales.shape == (0, 2)
    assert_array_equal(res.values, [[1.0]])
    assert_array_equal(res.approximation, [[1.0]])


def test_repr_mentions_errors():
    res = paraproduct_decomposition(np.eye(4), "tanh")
    assert "relative_error" in repr(res) and "tanh" in repr(res)
