"""Regression tests for arguments that used to be accepted or failed unclearly: each now
gives the right answer or an error that names the argument."""

import numpy as np
import pytest
import scipy.sparse as sp

from skorg.metrics import (
    cosine_affinity,
    diffusion_embedding,
    knn_affinity,
    landmark_diffusion_eigenpairs,
    order_spearman,
    sparse_diffusion_eigenpairs,
    tree_emd,
)
from skorg.organize import leaf_order
from skorg.transforms import haar_transform
from skorg.trees import dyadic_tree


def _gauss(n):
    x = np.arange(float(n))
    return np.exp(-(np.subtract.outer(x, x) ** 2) / 8)


def test_order_spearman_needs_permutations_and_is_deterministic():
    with pytest.raises(ValueError, match="order must be a permutation"):
        order_spearman([0, 0, 0, 0], [0, 1, 2, 3])
    with pytest.raises(TypeError, match="order must hold integer"):
        order_spearman([0.5, 1, 2, 3], [0, 1, 2, 3])
    assert order_spearman([3, 2, 1, 0], [0, 1, 2, 3]) == 1.0
    assert order_spearman([1, 0, 2, 3], [0, 1, 2, 3]) == order_spearman([1, 0, 2, 3], [0, 1, 2, 3])


def test_leaf_order_checks_the_distances_against_the_tree():
    with pytest.raises(ValueError, match="tree is a tree on 10 points"):
        leaf_order(dyadic_tree(10), np.zeros((7, 7)))
    with pytest.raises(ValueError, match="distances must be square"):
        leaf_order(dyadic_tree(7), np.zeros((7, 6)))
    with pytest.raises(ValueError, match="distances"):
        leaf_order(dyadic_tree(3), np.full((3, 3), np.nan))


def test_haar_axis_must_be_an_integer():
    with pytest.raises(TypeError, match="axis must be an integer"):
        haar_transform(np.ones((2, 4)), dyadic_tree(4), axis="0")


@pytest.mark.parametrize("t", [-1.0, np.nan, np.inf, "1"])
def test_diffusion_time_must_be_finite_and_non_negative(t):
    with pytest.raises(ValueError, match="diffusion_time"):
        diffusion_embedding(_gauss(6), 1, diffusion_time=t)


@pytest.mark.parametrize("tol", [np.nan, -1.0, "small"])
def test_sparse_diffusion_tol(tol):
    with pytest.raises(ValueError, match="tol"):
        sparse_diffusion_eigenpairs(sp.csr_matrix(_gauss(8)), 3, tol=tol)


@pytest.mark.parametrize(
    ("landmarks", "match"),
    [([0, 0, 2], "distinct"), ([-1, 1, 2], r"in \[0, 8\)"), ([0.5, 1, 2], "integer")],
)
def test_landmarks_must_be_distinct_valid_indices(landmarks, match):
    A = _gauss(8)
    with pytest.raises((ValueError, TypeError), match=match):
        landmark_diffusion_eigenpairs(A[:, [0, 1, 2]], np.asarray(landmarks), 2)


@pytest.mark.parametrize("func", [cosine_affinity, knn_affinity])
def test_nan_threshold_is_refused(func):
    X = np.random.default_rng(0).random((6, 3))
    with pytest.raises(ValueError, match="threshold"):
        func(X, threshold=np.nan)


def test_sparse_input_where_dense_is_needed_is_named():
    # the tree EMD takes sparse matrices (no dense copy) and equals the dense result
    np.testing.assert_allclose(
        tree_emd(sp.csr_matrix(np.eye(4)), dyadic_tree(4)), tree_emd(np.eye(4), dyadic_tree(4))
    )
    with pytest.raises(TypeError, match=r"X is a sparse matrix.*toarray"):
        haar_transform(sp.csr_matrix(np.eye(4)), dyadic_tree(4))


def test_huge_emd_exponents_are_refused_not_overflowed():
    with pytest.raises(ValueError, match=r"alpha=.*beta=.*float range"):
        tree_emd(np.ones((4, 3)), dyadic_tree(4), alpha=-1e308)


def test_finite_peak_is_the_largest_magnitude_without_temporaries():
    import scipy.sparse as sp

    from skorg._validation import finite_peak, pow2_scale

    rng = np.random.default_rng(0)
    X = rng.standard_normal((7, 5))
    assert finite_peak(X) == np.max(np.abs(X))
    assert finite_peak(-np.abs(X)) == np.max(np.abs(X))
    assert finite_peak(np.arange(-9, 4)) == 9.0 and finite_peak(np.array([True, False])) == 1.0
    assert finite_peak(np.empty((0, 3))) == 0.0
    for bad, expected in ((np.nan, "nan"), (np.inf, "inf"), (-np.inf, "inf")):
        Y = X.copy()
        Y[3, 2] = bad
        assert str(finite_peak(Y)) == expected
    Y = X.copy()
    Y[0, 0], Y[1, 1] = np.inf, np.nan
    assert np.isnan(finite_peak(Y))
    # sparse: the stored entries, duplicates summed, the argument left as it was
    coo = sp.coo_matrix((np.array([2.0, -5.0, -1.0]), (np.array([0, 1, 1]), np.array([0, 2, 2]))))
    assert finite_peak(coo) == 6.0 and coo.nnz == 3
    assert finite_peak(sp.csr_matrix((3, 3))) == 0.0
    assert pow2_scale(X * 2.0**600) == 2.0 ** -(int(np.frexp(np.max(np.abs(X)) * 2.0**600)[1]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 2, 7, 4096, (1 << 21) + 5])
def test_plain_magnitude_is_exactly_where_scaled_copy_leaves_the_data(dtype, n):
    """plain_magnitude(X) is True exactly when X is finite and scaled_copy, with the limit of
    X's dtype (safe_exponent), returns X itself (peak not zero): at the boundaries 2**-401
    and 2**400 of the float64 range and 2**-41 and 2**40 of the float32 one, for zeros,
    subnormals, NaN and infinities at any place, C and Fortran order."""
    from skorg._validation import finite_peak, plain_magnitude, safe_exponent, scaled_copy

    rng = np.random.default_rng(n)
    info = np.finfo(dtype)
    values = [0.0, -0.0, info.smallest_subnormal, info.tiny, 1.0, -3.5, info.max]
    if dtype == np.float64:
        values += [2.0**-401, np.nextafter(2.0**-401, 0), 2.0**400, np.nextafter(2.0**400, 0)]
        values += [-(2.0**-401), 2.0**-900, 2.0**900]
    else:
        f32 = np.float32
        values += [2.0**-41, np.nextafter(f32(2.0**-41), f32(0)), 2.0**40]
        values += [np.nextafter(f32(2.0**40), f32(0)), -(2.0**-41), 2.0**-100, 2.0**100]
    values += [np.nan, np.inf, -np.inf]
    for value in values:
        for where in {0, n // 2, n - 1}:
            X = np.zeros(n, dtype=dtype)
            X[where] = value  # the peak, or NaN
            peak = finite_peak(X)
            limit = safe_exponent(dtype)
            kept = scaled_copy(X, peak=peak, limit=limit)[0] is X
            expected = bool(np.isfinite(peak)) and peak > 0 and kept
            assert plain_magnitude(X) is expected, (value, where)
    M = np.asfortranarray(rng.normal(size=(3, max(n // 3, 1))).astype(dtype))
    assert plain_magnitude(M) is True
    M[-1, 0] = np.nan
    assert plain_magnitude(M) is False


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [(1 << 20) + 3, (1 << 21) + 5])
def test_the_one_pass_peak_kernel_equals_the_two_reductions(dtype, n):
    # large contiguous float arrays take the compiled one-pass kernel (serial below 2**21
    # values, parallel above); it must give what max and min give, bit for bit
    from skorg import _validation
    from skorg._validation import finite_peak

    assert n >= _validation._PEAK_BITS[np.dtype(dtype)][2]

    def two_reductions(Y):
        hi, lo = float(np.max(Y)), float(np.min(Y))
        return float("nan") if hi != hi or lo != lo else max(hi, -lo)

    rng = np.random.default_rng(n)
    X = rng.standard_normal(n).astype(dtype)
    info = np.finfo(dtype)
    cases = {"normal": X, "negative peak last": np.append(X[:-1], -info.max)}
    for name, where, value in (
        ("inf", 5, np.inf),
        ("-inf", n - 1, -np.inf),
        ("nan", 0, np.nan),
        ("nan last", n - 1, np.nan),
    ):
        Y = X.copy()
        Y[where] = value
        cases[name] = Y
    Y = X.copy()
    Y[7], Y[n // 2] = -np.inf, np.nan
    cases["inf and nan"] = Y
    for where in (1, n // 2, n // 2 + 1, n - 2):  # about the parts' first values
        Y = X.copy()
        Y[where] = -info.max / 2
        cases[f"peak at {where}"] = Y
    cases["negative zeros"] = np.full(n, -0.0, dtype=dtype)
    cases["subnormal"] = np.full(n, info.smallest_subnormal, dtype=dtype)
    for name, Y in cases.items():
        before = Y.copy()
        got, expected = finite_peak(Y), two_reductions(Y)
        assert got == expected or (np.isnan(got) and np.isnan(expected)), name
        np.testing.assert_array_equal(Y, before)  # the argument is not changed
    # Fortran order takes the kernel too; a strided view and a byte-swapped array do not
    M = np.asfortranarray(X[: n - n % 8].reshape(-1, 8))
    assert finite_peak(M) == two_reductions(M)
    assert finite_peak(X[::3]) == two_reductions(X[::3])
    swapped = X.astype(X.dtype.newbyteorder(">"))
    assert finite_peak(swapped) == two_reductions(X)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_peaks_in_one_pass_equal_the_two_reductions(dtype):
    # scale_rows takes the per-row peaks of a large C-ordered array from the compiled pass
    # over the bit patterns; rows with a NaN fall back to the reductions, which skip it
    from skorg import _validation
    from skorg._validation import scale_rows

    rng = np.random.default_rng(5)
    X = rng.standard_normal((700, 1500)).astype(dtype)
    assert X.size >= _validation._PEAK_BITS[np.dtype(dtype)][2]
    X[3, 10] = np.nan
    X[4, :] = np.nan
    X[5, 7], X[5, 9] = np.inf, np.nan
    X[6, 1] = -np.inf
    X[7] = -0.0
    X[8] = np.finfo(dtype).smallest_subnormal
    X[9, -1] = -np.finfo(dtype).max
    X[10] *= dtype(2.0**-140) if dtype is np.float32 else 2.0**-900  # rows that need scaling
    X[11] *= 2.0**500 if dtype is np.float64 else 1.0
    before = X.copy()
    got = _validation._row_peaks(X)
    expected = _validation._row_peaks_reduced(X)
    np.testing.assert_array_equal(got, expected)  # NaN where a row is all NaN, on both
    np.testing.assert_array_equal(X, before)
    assert got.dtype == np.float64 and np.isnan(got[4]) and got[5] == np.inf
    # scale_rows gives the same bits either way (the reductions on a strided view)
    np.testing.assert_array_equal(scale_rows(X), scale_rows(X[:, ::-1])[:, ::-1])
    Y = scale_rows(X)
    if dtype is np.float64:
        assert np.abs(Y[10]).max() >= 0.5 and np.abs(Y[11]).max() < 1.0
