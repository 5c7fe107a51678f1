"""Every memory-access path of the one-axis tree Haar transform gives the same coefficients.

The transform dispatches on the layout (lanes one at a time, lifting over row segments,
64-lane blocks), on the tree (perfect binary trees in canonical order get the lifting
kernels) and on the size (small inputs stay on the calling thread). Each path must equal the
node-by-node block kernel bit for bit, and the dyadic Haar must equal PyWavelets' Haar.
"""

import re
import sys
from concurrent.futures import ThreadPoolExecutor
from unittest import mock

import numba
import numpy as np
import pytest
import pywt

import skorg.transforms._haar as haar_module
import skorg.transforms._haar_dispatch as haar_dispatch
from skorg._kernels import _haar as block_kernels
from skorg.transforms import haar_transform, inverse_haar_transform
from skorg.trees import PartitionTree, dyadic_tree


def _block_reference(X, tree, axis, inverse, order="bfs"):
    """The node-by-node 64-lane block kernel, called directly (one path for every case)."""
    plan = haar_dispatch._get_plan(tree, order)
    X = np.ascontiguousarray(X)
    n = X.shape[axis]
    A = int(np.prod(X.shape[:axis]))
    B = int(np.prod(X.shape[axis + 1 :]))
    out = np.empty_like(X)
    kernel = block_kernels.haar_inverse if inverse else block_kernels.haar_forward
    kernel(X.reshape(-1), out.reshape(-1), A, n, B, *plan.kernel_args(), numba.get_num_threads())
    return out


def _wide_tree(n, seed):
    """Nested partitions with wide folders and one-child chains (random labels)."""
    rng = np.random.default_rng(seed)
    levels = [np.zeros(n, dtype=int)]
    for _ in range(3):
        levels.append(levels[-1] * 5 + rng.integers(0, 5, size=n))
    levels.append(levels[-1])
    levels.append(np.arange(n))
    return PartitionTree.from_levels(np.array(levels))


def _trees(n, rng):
    return {
        "dyadic": dyadic_tree(n),
        "dyadic-shuffled": dyadic_tree(rng.permutation(n)),
        "wide": _wide_tree(n, n),
    }


# (shape, axis): lanes one at a time (B < 16: other trees from n = 24, perfect binary ones
# from 128 unless rows of the short-row kernel), long lanes by subtrees (n > 2^14; fewer
# lanes than threads: the subtrees in parallel), short lanes in transposed blocks (shorter
# ones, e.g. (1024, 12) along axis 1 on the wide tree), row segments (B >= 16; from
# n = 256 by subtrees, 2 and 16 of them here, and with fewer blocks than threads the
# subtrees in parallel; blocks of 4096 columns and a narrower last one), a 1-D vector
LAYOUTS = [
    ((6, 512), 1),
    ((2, 1 << 15), 1),
    ((1 << 15,), 0),
    ((3, 256, 5), 1),
    ((40, 64), 1),
    ((512, 20), 0),
    ((256, 17), 0),
    ((2048, 40), 0),
    ((256, 4200), 0),
    ((4, 64, 300), 1),
    # other trees across rows, depth first (skorg._kernels._haar_slots): one row's columns
    # shared out, two rows, and narrow rows on a tree of more than 32768 folders
    ((300, 1000), 0),
    ((2, 700, 260), 1),
    ((40000, 16), 0),
    ((1024,), 0),
    # short trailing runs: on perfect binary trees row segments from 16 values per row, from
    # 4 where n * B**2 >= 1024, and from 2 on up to 16 vectors per place; by subtrees on a
    # long axis; else lanes or transposed blocks
    ((64, 128, 8), 1),
    ((16, 64, 4), 1),
    ((2, 4096, 9), 1),
    ((1024, 12), 0),
    ((40, 16, 4), 1),
    ((30, 64, 2), 1),
    ((4096, 4), 0),
    ((8, 64, 2), 1),
    ((3, 32, 3), 1),
    ((100, 32, 6), 1),
    ((50, 2, 16), 1),
    # one vector at a time also for a handful of short vectors
    ((64, 128), 1),
    ((3, 40), 1),
    ((2, 24, 2), 1),
    # rows of up to 256 values on perfect binary trees: blocks of rows (skorg._kernels.
    # _haar_short), whole blocks and a shorter last one, one row, a 1-D vector of 2
    ((1100, 8), 1),
    ((33, 64), 1),
    ((9, 256), 1),
    ((5000, 2), 1),
    ((7, 3, 16), 2),
    ((2,), 0),
    # short vectors on other trees: four at a time from 24 points, transposed blocks below
    ((500, 24, 3), 1),
    ((300, 23), 1),
    ((200, 12), 1),
]


@pytest.mark.parametrize(("shape", "axis"), LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("serial", [True, False])
def test_every_path_equals_the_block_kernel_bit_for_bit(shape, axis, dtype, serial):
    rng = np.random.default_rng(1)
    X = rng.normal(size=shape).astype(dtype)
    before = X.copy()
    size = 1 << 40 if serial else 0
    with mock.patch.object(haar_dispatch, "_SERIAL_SIZE", size):
        for name, tree in _trees(shape[axis], rng).items():
            for order in ("bfs", "reference"):
                C = haar_transform(X, tree, axis=axis, order=order)
                assert C.dtype == dtype
                expected = _block_reference(X, tree, axis, False, order)
                np.testing.assert_array_equal(C, expected, err_msg=f"{name} {order}")
                back = inverse_haar_transform(C, tree, axis=axis, order=order)
                np.testing.assert_array_equal(
                    back, _block_reference(C, tree, axis, True, order), err_msg=f"{name} {order}"
                )
                tol = 1e-12 if dtype == np.float64 else 1e-5
                np.testing.assert_allclose(back, X, atol=tol * np.abs(X).max())
    np.testing.assert_array_equal(X, before)  # the input is never written


@pytest.mark.parametrize(
    ("shape", "row_segments"),
    [((64, 128, 8), True), ((16, 64, 4), True), ((8, 512, 12), True), ((40, 16, 4), False),
     ((30, 64, 2), False), ((4, 512, 3), False), ((100, 2, 16), True), ((100, 32, 6), True),
     ((100, 32, 4), False), ((100, 8, 12), True), ((100, 4, 12), False), ((1, 4096, 4), True),
     ((16, 64, 2), True), ((17, 64, 2), False), ((8, 128, 3), False), ((1, 16, 2), True)],
)  # fmt: skip
def test_short_trailing_runs_take_the_row_segment_kernel_where_it_is_faster(shape, row_segments):
    kernels = haar_dispatch._segment_kernels
    X = np.random.default_rng(3).normal(size=shape)
    tree = dyadic_tree(shape[1])
    with mock.patch.object(
        kernels, "dyadic_blocks_range", wraps=kernels.dyadic_blocks_range
    ) as spy:
        C = haar_transform(X, tree, axis=1)
        inverse_haar_transform(C, tree, axis=1)
    assert spy.call_count == (2 if row_segments else 0)
    np.testing.assert_array_equal(C, _block_reference(X, tree, 1, False))
    # other trees keep the transposed blocks, which are faster there than row segments
    with mock.patch.object(
        kernels, "dyadic_blocks_range", wraps=kernels.dyadic_blocks_range
    ) as spy:
        haar_transform(X, _wide_tree(shape[1], 0), axis=1)
    assert spy.call_count == 0


@pytest.mark.parametrize(
    ("shape", "dyadic_lanes", "other_lanes"),
    [((64, 1024), True, True), ((64, 128), False, True), ((3, 40), False, True),
     ((1024, 64), False, True), ((8, 300), False, True), ((7,), False, True),
     ((2, 600), True, True), ((1024, 24), False, True), ((1024, 23), False, False),
     ((512, 16), False, False)],
)  # fmt: skip
def test_vectors_go_one_at_a_time_when_long_or_few(shape, dyadic_lanes, other_lanes):
    """Perfect binary trees take this kernel only on rows longer than the short-row
    kernel's (see the next test); other trees from 24 points, or on a handful of vectors."""
    kernels = haar_dispatch._row_kernels
    X = np.random.default_rng(4).normal(size=shape)
    n = shape[-1]
    for tree, expected in ((dyadic_tree(1 << (n.bit_length() - 1)), dyadic_lanes),
                           (_wide_tree(n, 1), other_lanes)):  # fmt: skip
        Y = X[..., : tree.n_points]
        with mock.patch.object(kernels, "haar_lanes_range", wraps=kernels.haar_lanes_range) as spy:
            C = haar_transform(Y, tree)
        assert spy.called == expected, (shape, tree.n_points)
        np.testing.assert_array_equal(C, _block_reference(Y, tree, Y.ndim - 1, False))


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize(
    ("shape", "axis", "short"),
    [((100, 2), 1, True), ((64, 128), 1, True), ((3, 256), 1, True), ((4,), 0, True),
     ((2, 5, 32), 2, True), ((4, 512), 1, False), ((64, 16), 0, False), ((16, 64, 2), 1, False),
     ((1,), 0, False)],
)  # fmt: skip
def test_short_rows_on_perfect_binary_trees_go_a_block_of_rows_at_a_time(
    shape, axis, short, inverse
):
    kernels = haar_dispatch._short_kernels
    rng = np.random.default_rng(5)
    X = rng.normal(size=shape)
    n = shape[axis]
    for tree in (dyadic_tree(n), dyadic_tree(rng.permutation(n))):
        func = inverse_haar_transform if inverse else haar_transform
        with mock.patch.object(kernels, "short_rows_range", wraps=kernels.short_rows_range) as spy:
            Y = func(X, tree, axis=axis)
        assert spy.called == short
        np.testing.assert_array_equal(Y, _block_reference(X, tree, axis, inverse))
    # other trees and the reference order of a shuffled tree are not perfect binary plans
    if n >= 4:
        with mock.patch.object(kernels, "short_rows_range") as spy:
            haar_transform(X, dyadic_tree(rng.permutation(n)), axis=axis, order="reference")
            haar_transform(X, _wide_tree(n, 2), axis=axis)
        assert not spy.called


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_vector_of_two_values_is_lifted_without_a_kernel_call_to_the_same_bits(dtype):
    """A 1-D vector of two values is lifted in Python floats (a compiled call costs more than
    the transform): the block kernel's bits in both leaf orders, with and without ``out``,
    and data outside the plain range (tiny, huge, zero, NaN) still on the general path."""
    kernels = haar_dispatch._short_kernels
    rng = np.random.default_rng(8)
    # the last two beyond the plain range 2**-401 .. 2**400: scaled on the general path
    cases = [rng.normal(size=2), [3.0, 3.0], [0.0, 5.0], [-(2.0**-401), 1e-200], [7e299, -1e300]]
    for i, values in enumerate(cases if dtype == np.float64 else cases[:3]):
        plain = i < 3
        X = np.array(values, dtype=dtype)
        before = X.copy()
        for tree in (dyadic_tree(2), dyadic_tree([1, 0])):
            with mock.patch.object(
                kernels, "short_rows_range", wraps=kernels.short_rows_range
            ) as spy:
                C = haar_transform(X, tree)
                back = inverse_haar_transform(C, tree)
                out = np.empty_like(X)
                assert haar_transform(X, tree, out=out) is out
            assert spy.called != plain
            assert C.dtype == back.dtype == dtype
            np.testing.assert_array_equal(C, _block_reference(X, tree, 0, False))
            np.testing.assert_array_equal(back, _block_reference(C, tree, 0, True))
            np.testing.assert_array_equal(out, C)
        np.testing.assert_array_equal(X, before)
    # the general path scales data beyond the plain range: the same coefficients, scaled
    tree = dyadic_tree(2)
    for scale in (2.0**-600, 2.0**600, 1e-150, 1e150):
        X = np.array([1.5, -4.0]) * scale
        np.testing.assert_allclose(haar_transform(X, tree) / scale, haar_transform(X / scale, tree))
    assert np.array_equal(haar_transform(np.zeros(2), tree), np.zeros(2))
    with pytest.raises(ValueError, match="NaN or infinity"):
        haar_transform(np.array([1.0, np.nan]), tree)
    with pytest.raises(ValueError, match="NaN or infinity"):
        inverse_haar_transform(np.array([np.inf, 1.0], dtype=dtype), tree)


def test_short_rows_in_parallel_equal_the_serial_kernel():
    kernels = haar_dispatch._short_kernels
    rng = np.random.default_rng(6)
    for n in (2, 16, 256):
        X = rng.normal(size=((1 << 18) // n + 5, n)).astype(np.float32)
        tree = dyadic_tree(rng.permutation(n))
        with mock.patch.object(kernels, "short_rows", wraps=kernels.short_rows) as spy:
            C = haar_transform(X, tree)
            back = inverse_haar_transform(C, tree)
        assert spy.call_count == (2 if numba.get_num_threads() > 1 else 0)
        with mock.patch.object(haar_dispatch, "_SERIAL_SIZE", 1 << 40):
            np.testing.assert_array_equal(C, haar_transform(X, tree))
            np.testing.assert_array_equal(back, inverse_haar_transform(C, tree))
        np.testing.assert_array_equal(C, _block_reference(X, tree, 1, False))


def test_perfect_binary_trees_take_the_lifting_kernels():
    rng = np.random.default_rng(2)
    assert haar_dispatch._get_plan(dyadic_tree(1024)).dyadic
    assert haar_dispatch._get_plan(dyadic_tree(rng.permutation(8))).dyadic
    # the reference order puts the folders of a level in another order: node-by-node path
    assert not haar_dispatch._get_plan(dyadic_tree(rng.permutation(8)), "reference").dyadic
    assert haar_dispatch._get_plan(dyadic_tree(np.arange(8)), "reference").dyadic
    for n in (1, 3, 6, 100):  # not a power of two: one-child chains
        assert not haar_dispatch._get_plan(dyadic_tree(n)).dyadic
    assert not haar_dispatch._get_plan(_wide_tree(64, 0)).dyadic


@pytest.mark.parametrize(("shape", "axis"), [((8, 1024), 1), ((512, 32), 0), ((4, 256, 3), 1)])
def test_fortran_order_is_transformed_without_a_copy_and_equals_c_order(shape, axis):
    rng = np.random.default_rng(3)
    X = rng.normal(size=shape)
    XF = np.asfortranarray(X)
    tree = dyadic_tree(rng.permutation(shape[axis]))
    C = haar_transform(X, tree, axis=axis)
    CF = haar_transform(XF, tree, axis=axis)
    assert CF.flags.f_contiguous
    np.testing.assert_array_equal(CF, C)
    back = inverse_haar_transform(CF, tree, axis=axis)
    assert back.flags.f_contiguous
    np.testing.assert_array_equal(back, inverse_haar_transform(C, tree, axis=axis))


@pytest.mark.parametrize(("shape", "axis"), [((4, 2048), 1), ((1024, 24), 0), ((8, 64), 1)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dyadic_tree_equals_pywavelets_haar(shape, axis, dtype):
    """Canonical order psi_0, then level by level: |coefficients| equal pywt.wavedec's.

    PyWavelets' full Haar decomposition returns [cA_L, cD_L, ..., cD_1]; concatenated, it is
    our coefficient vector up to the sign of each detail.
    """
    rng = np.random.default_rng(4)
    X = rng.normal(size=shape).astype(dtype)
    n = shape[axis]
    for tree, Xp in (
        (dyadic_tree(n), X),
        # a shuffled leaf order is the ordinary Haar of the data in that order
        (dyadic_tree(order := rng.permutation(n)), np.take(X, order, axis=axis)),
    ):
        C = haar_transform(X, tree, axis=axis)
        ref = np.concatenate(pywt.wavedec(Xp.astype(np.float64), "haar", axis=axis), axis=axis)
        tol = 1e-12 if dtype == np.float64 else 1e-5
        scale = np.abs(ref).max()
        np.testing.assert_allclose(np.abs(C), np.abs(ref), rtol=0, atol=tol * scale)
        # as sets of magnitudes too (the check, independent of the order)
        np.testing.assert_allclose(
            np.sort(np.abs(C), axis=None), np.sort(np.abs(ref), axis=None), atol=tol * scale
        )


def test_column_blocks_keep_their_level_buffers_in_l2():
    for n in (2, 64, 256, 1024, 1 << 16, 1 << 20):
        for B in (16, 100, 4096, 10_000, 1 << 20):
            width, chunk = haar_dispatch._block_plan(n, B)
            assert 1 <= width <= min(B, haar_dispatch._BLOCK_WIDTH)
            assert width == B or width == haar_dispatch._BLOCK_WIDTH  # whole rows up to there
            if chunk < n:  # by subtrees: a power of two that divides n, buffers within L2
                assert chunk >= 2 and chunk & (chunk - 1) == 0 and n % chunk == 0
                assert 8 * chunk * width <= haar_dispatch._CHUNK_BYTES
            else:
                assert chunk == n


@pytest.mark.parametrize("inverse", [False, True])
def test_column_blocks_by_subtrees_equal_level_by_level(inverse):
    # every subtree size, down to two leaves, gives the level-by-level sums bit for bit, in
    # float64 and float32, for the identity and a shuffled leaf order, on the serial kernel
    # and on the one that shares a block's subtrees out
    from skorg._kernels import _haar_segments

    rng = np.random.default_rng(5)
    n, B = 512, 24
    for dtype in (np.float64, np.float32):
        X = rng.normal(size=(n, B)).astype(dtype)
        for tree in (dyadic_tree(n), dyadic_tree(rng.permutation(n))):
            plan = haar_dispatch._get_plan(tree)
            args = (inverse, plan.leaf_order, plan.wplus, plan.wminus)
            expected = np.empty_like(X)
            _haar_segments.dyadic_blocks_range(
                X.ravel(), expected.ravel(), n, B, 16, n, 0, 2, *args
            )
            for chunk in (2, 4, 32, 256):
                got = np.empty_like(X)
                _haar_segments.dyadic_blocks_range(
                    X.ravel(), got.ravel(), n, B, 16, chunk, 0, 2, *args
                )
                np.testing.assert_array_equal(got, expected, err_msg=f"chunk {chunk}")
                got = np.empty_like(X)
                for b0 in (0, 16):
                    _haar_segments.dyadic_block_subtrees(
                        X.ravel(), got.ravel(), b0, B, min(16, B - b0), chunk, *args, 3
                    )
                np.testing.assert_array_equal(got, expected, err_msg=f"subtrees, chunk {chunk}")


def test_the_depth_first_kernel_keeps_a_few_rows_of_sums():
    # a folder's row lives from its making to its last use: about depth x fan-out rows at
    # once, not one per folder, so blocks can span whole rows and stay in L2
    rng = np.random.default_rng(3)
    levels = [np.zeros(4096, dtype=int)]
    for _ in range(5):
        levels.append(levels[-1] * 5 + rng.integers(0, 5, size=4096))
    levels.append(np.arange(4096))
    tree = PartitionTree.from_levels(np.array(levels))
    plan = haar_dispatch._get_plan(tree)
    post, pre, fslot, n_fslots, islot, n_islots, kstart, kend = plan.slot_args
    inner_children = [
        int(np.sum(np.arange(*plan.child_span[f]) < plan.first_leaf))
        for f in range(plan.first_leaf)
    ]
    bound = tree.n_levels * max(inner_children)
    assert max(n_fslots, n_islots) <= bound < plan.first_leaf // 50
    # every internal folder once in each order, children after (pre) or before (post) it
    assert sorted(post) == sorted(pre) == list(range(plan.first_leaf))
    where_post = np.empty(plan.first_leaf, dtype=int)
    where_post[post] = np.arange(plan.first_leaf)
    where_pre = np.empty(plan.first_leaf, dtype=int)
    where_pre[pre] = np.arange(plan.first_leaf)
    inner = np.arange(1, plan.first_leaf)
    parents = plan.parent[inner]
    assert np.all(where_post[inner] < where_post[parents])
    assert np.all(where_pre[inner] > where_pre[parents])
    # no slot is taken by two folders at once: forward, a folder holds its slot from its
    # making until its parent's; inverse, from its parent's visit until its own
    holder = {}
    for f in post:
        assert fslot[f] not in holder
        holder[fslot[f]] = f
        for c in range(*plan.child_span[f]):
            if c < plan.first_leaf:
                assert holder.pop(fslot[c]) == c
    holder = {islot[0]: 0}
    for f in pre:
        for c in range(*plan.child_span[f]):
            if c < plan.first_leaf:
                assert islot[c] not in holder
                holder[islot[c]] = c
        assert holder.pop(islot[f]) == f
    # each folder's coefficients are its run of cnode
    for f in range(plan.first_leaf):
        run = np.arange(kstart[f], kend[f])
        np.testing.assert_array_equal(np.flatnonzero(plan.cnode == f), run)
    assert haar_dispatch._use_slots(plan, 256) and not haar_dispatch._use_slots(plan, 64)


@pytest.mark.parametrize("serial", [True, False])
def test_the_depth_first_kernel_on_degenerate_trees(serial):
    # a star (one folder of leaves), one-child chains and a caterpillar (one point peeled
    # off per level) across rows of at least 256 columns: bit for bit the node-by-node kernel
    rng = np.random.default_rng(4)
    star = PartitionTree.from_levels(np.array([np.zeros(37, int), np.arange(37)]))
    chain = PartitionTree.from_levels(
        np.array([np.zeros(40, int), np.zeros(40, int), np.arange(40) // 2, np.arange(40)])
    )
    peeled = [np.zeros(30, int), *(np.minimum(np.arange(30), d) for d in range(1, 12))]
    caterpillar = PartitionTree.from_levels(np.array([*peeled, np.arange(30)]))
    size = 1 << 40 if serial else 0
    with mock.patch.object(haar_dispatch, "_SERIAL_SIZE", size):
        for tree in (star, chain, caterpillar):
            assert haar_dispatch._use_slots(haar_dispatch._get_plan(tree), 300)
            for dtype in (np.float64, np.float32):
                for shape, axis in (((tree.n_points, 300), 0), ((3, tree.n_points, 257), 1)):
                    X = rng.normal(size=shape).astype(dtype)
                    C = haar_transform(X, tree, axis=axis)
                    np.testing.assert_array_equal(C, _block_reference(X, tree, axis, False))
                    back = inverse_haar_transform(C, tree, axis=axis)
                    np.testing.assert_array_equal(back, _block_reference(C, tree, axis, True))


def _bits(A):
    """The bit patterns of a float array (signs of zero included), in any memory order."""
    return np.ascontiguousarray(A).view(np.uint8)


def _general_path(func, *args, **kwargs):
    """``func`` with the common-call shortcut switched off: the general path's checks."""
    with mock.patch.object(haar_module, "_plain_along", return_value=None):
        return func(*args, **kwargs)


@pytest.mark.parametrize(
    ("shape", "axis"), [((8,), 0), ((40, 64), 1), ((64, 40), 0), ((3, 16, 5), 1), ((2, 300), -1)]
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fortran", [False, True])
def test_common_calls_take_the_shortcut_and_equal_the_general_path(shape, axis, dtype, fortran):
    rng = np.random.default_rng(7)
    X = rng.normal(size=shape).astype(dtype)
    if fortran:
        X = np.asfortranarray(X)
    n = shape[axis]
    for tree in (dyadic_tree(n), _wide_tree(n, 3)):
        for order in ("bfs", "reference"):
            returned = []
            plain = haar_module._plain_along

            def recording(*args, plain=plain, returned=returned, **kwargs):
                returned.append(plain(*args, **kwargs))
                return returned[-1]

            with mock.patch.object(haar_module, "_plain_along", recording):
                C = haar_transform(X, tree, axis=axis, order=order)
                back = inverse_haar_transform(C, tree, axis=axis, order=order)
            assert len(returned) == 2 and all(r is not None for r in returned)
            expected = _general_path(haar_transform, X, tree, axis=axis, order=order)
            assert C.dtype == expected.dtype and C.flags.f_contiguous == expected.flags.f_contiguous
            np.testing.assert_array_equal(_bits(C), _bits(expected))
            expected = _general_path(inverse_haar_transform, C, tree, axis=axis, order=order)
            np.testing.assert_array_equal(_bits(back), _bits(expected))
            # into a given array of the input's memory order: the shortcut writes it in place
            out = np.zeros_like(X)
            with mock.patch.object(haar_module, "_check_data", side_effect=AssertionError):
                assert haar_transform(X, tree, axis=axis, order=order, out=out) is out
            np.testing.assert_array_equal(_bits(out), _bits(C))


class _Subclass(np.ndarray):
    """An ndarray subclass (as masked arrays or np.matrix are)."""


def _unusual_calls():
    """Case name -> a maker of fresh arguments (X, tree, keyword arguments)."""

    def data():
        return np.random.default_rng(8).normal(size=(6, 8))

    def with_value(value):
        X = data()
        X[2, 3] = value
        return X

    def shifted():
        Z = np.ones((6, 9))
        return Z[:, :8], {"out": Z[:, 1:]}

    def read_only_out():
        out = np.empty((6, 8))
        out.flags.writeable = False
        return out

    def the_input():
        X = data()
        return X, {"out": X}

    tree = dyadic_tree(8)
    simple = {
        "list": lambda: data().tolist(),
        "int dtype": lambda: (data() * 10).astype(np.int64),
        "big-endian": lambda: data().astype(">f8"),
        "float16": lambda: data().astype(np.float16),
        "strided view": lambda: np.repeat(data(), 2, axis=1)[:, ::2],
        "subclass": lambda: data().view(_Subclass),
        "all zero": lambda: np.zeros((6, 8)),
        "tiny": lambda: data() * 2.0**-500,
        "huge": lambda: data() * 2.0**450,
        "subnormal": lambda: data() * 2.0**-1060,
        "NaN": lambda: with_value(np.nan),
        "infinity": lambda: with_value(-np.inf),
        "empty": lambda: np.empty((0, 8)),
    }
    cases = {name: (lambda make=make: (make(), tree, {})) for name, make in simple.items()}
    options = {
        "numpy axis": {"axis": np.int64(1)},
        "axis out of range": {"axis": 2},
        "bool axis": {"axis": True},
        "unknown order": {"order": "dfs"},
        "out": {"out": lambda: np.empty((6, 8))},
        "out in Fortran order": {"out": lambda: np.empty((6, 8), order="F")},
        "read-only out": {"out": read_only_out},
        "float32 out": {"out": lambda: np.empty((6, 8), np.float32)},
        "out of another shape": {"out": lambda: np.empty((6, 9))},
        "out subclass": {"out": lambda: np.empty((6, 8)).view(_Subclass)},
        "out a list": {"out": lambda: [0.0] * 8},
    }
    for name, kwargs in options.items():
        cases[name] = lambda kwargs=kwargs: (
            data(),
            tree,
            {k: v() if callable(v) else v for k, v in kwargs.items()},
        )
    cases["out is the input"] = lambda: (lambda X, kw: (X, tree, kw))(*the_input())
    cases["out overlapping the input"] = lambda: (lambda X, kw: (X, tree, kw))(*shifted())
    cases["wrong length"] = lambda: (data(), dyadic_tree(6), {})
    cases["not a tree"] = lambda: (data(), "tree", {})
    cases["0-d"] = lambda: (np.float64(1.0), dyadic_tree(1), {})
    return cases


@pytest.mark.parametrize("case", sorted(_unusual_calls()))
@pytest.mark.parametrize("inverse", [False, True])
def test_unusual_calls_take_the_general_path_with_its_results_and_errors(case, inverse):
    make = _unusual_calls()[case]
    func = inverse_haar_transform if inverse else haar_transform
    X, tree, kwargs = make()
    if isinstance(X, np.ndarray) and isinstance(tree, PartitionTree):
        axis, order = kwargs.get("axis", -1), kwargs.get("order", "bfs")
        plain = haar_dispatch._plain_along(X, tree, axis, order, inverse, kwargs.get("out"))
        assert (plain is not None) == (case == "out")  # only a writable array apart from X
    X, tree, kwargs = make()
    try:
        expected = _general_path(func, X, tree, **kwargs)
    except (TypeError, ValueError) as error:
        X, tree, kwargs = make()
        with pytest.raises(type(error), match=re.escape(str(error))):
            func(X, tree, **kwargs)
        return
    X, tree, kwargs = make()
    result = func(X, tree, **kwargs)
    if kwargs.get("out") is not None:
        assert result is kwargs["out"]
    assert result.dtype == expected.dtype
    np.testing.assert_array_equal(result, expected)


def test_the_plan_cache_is_safe_to_share_between_threads():
    """More trees than the plan cache holds, transformed from 8 threads at once with
    frequent thread switches: every lookup may meet another thread's eviction, which must
    neither raise (a KeyError before the cache had a lock) nor give another tree's plan."""
    from skorg.transforms import _haar_plan

    n_trees = _haar_plan._PLAN_CACHE_SIZE + 6
    trees = [dyadic_tree(np.random.default_rng(i).permutation(8)) for i in range(n_trees)]
    X = np.arange(8.0)
    expected = [haar_transform(X, tree) for tree in trees]

    def work(seed):
        rng = np.random.default_rng(seed)
        for i in rng.integers(n_trees, size=3000):
            for inverse in (False, True):
                func = inverse_haar_transform if inverse else haar_transform
                got = func(expected[i] if inverse else X, trees[i])
                want = X if inverse else expected[i]
                if not np.allclose(got, want, rtol=1e-14, atol=1e-14):
                    return False
        return True

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(8) as pool:
            assert all(pool.map(work, range(8)))
    finally:
        sys.setswitchinterval(interval)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shuffled", [False, True])
def test_rows_beyond_the_caches_staged_equal_the_block_kernel(dtype, shuffled, monkeypatch):
    """Rows of a large array stage their forward coefficients in a buffer (skorg._kernels.
    _haar_rows): the same bits as the block kernel, with and without the staging, into a new
    array and into ``out=``."""
    n = 512
    tree = dyadic_tree(np.random.default_rng(1).permutation(n) if shuffled else n)
    X = np.random.default_rng(2).normal(size=(40, n)).astype(dtype)
    reference = _block_reference(X, tree, 1, False)
    for threshold in (0, 1 << 62):  # staged, then written straight
        monkeypatch.setattr(haar_dispatch, "_STAGE_MIN_BYTES", threshold)
        np.testing.assert_array_equal(haar_transform(X, tree, axis=1), reference)
        out = np.full_like(X, np.nan)
        assert haar_transform(X, tree, axis=1, out=out) is out
        np.testing.assert_array_equal(out, reference)


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize(
    ("shape", "threads"), [((128, 1024), 2), ((128, 1024), 3), ((32, 4096), 4)]
)
def test_too_few_column_blocks_are_narrowed_to_one_per_thread(shape, threads, inverse, monkeypatch):
    """A column block that no subtree split can share (n small, B up to a block wide) is split
    by columns into a block per thread at least, not run as one parallel task; the same
    coefficients as the block kernel."""
    kernels = haar_dispatch._segment_kernels
    monkeypatch.setattr(haar_dispatch, "available_threads", lambda: threads)
    X = np.random.default_rng(5).normal(size=shape)
    tree = dyadic_tree(shape[0])
    with mock.patch.object(kernels, "dyadic_blocks", wraps=kernels.dyadic_blocks) as spy:
        C = (inverse_haar_transform if inverse else haar_transform)(X, tree, axis=0)
    assert spy.call_count == 1
    n, B, width, chunk, n_blocks = spy.call_args.args[2:7]
    assert (n, B, chunk) == (shape[0], shape[1], shape[0])
    assert n_blocks >= threads and -(-B // width) == n_blocks and width % 8 == 0
    np.testing.assert_array_equal(C, _block_reference(X, tree, 0, inverse))
