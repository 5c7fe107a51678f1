"""The in-place schedule of the packet dictionary: every level bit for bit, and its costs."""

import numpy as np
import pytest

from skorg._kernels import _packet_slots as K
from skorg.transforms import wavelet_packet_dictionary
from skorg.transforms._packet_core import _cost_table, _rows, _schedule
from skorg.transforms._packet_plan import get_packet_plan
from skorg.trees import dyadic_tree, linkage_tree
from tests.transforms.test_packets import IDS, TREES, random_tree

MORE = [
    dyadic_tree(64),
    random_tree(150, np.random.default_rng(3), max_children=5),
    linkage_tree(np.random.default_rng(4).standard_normal((120, 3)), method="average"),
]
ALL = [*TREES, *MORE]
ALL_IDS = [*IDS, "dyadic-64", "random-150", "linkage-120"]


def _levels_in_place(rows, plan, width):
    """Run the schedule up to every level on one block; the buffer, read through the slots,
    for every level."""
    sl = plan.slots
    out = []
    for j in range(plan.n_levels - 1, -1, -1):
        keep = sl.lev >= j  # the schedule without the pairs of the levels below j
        buf = np.zeros((plan.n, width + K.PAD))
        K.load_block(rows, 0, 1.0, buf, width)
        part = np.zeros((plan.n_levels, plan.n))
        w = np.ascontiguousarray(sl.w[keep])
        lev, pa, pb = sl.lev[keep], sl.pair_a[keep], sl.pair_b[keep]
        K.block_costs(buf, width, lev, pa, pb, w, 0, 1.0, part)
        out.append(buf[sl.slot_of[j], : rows.shape[1]])
        assert not buf[:, width:].any()  # the padding is never touched
    return out[::-1]


@pytest.mark.parametrize("tree", ALL, ids=ALL_IDS)
def test_every_level_in_place_is_the_dictionary_bit_for_bit(tree):
    n = tree.n_points
    rng = np.random.default_rng(n)
    X = rng.standard_normal((5, n)) * np.exp(3 * rng.standard_normal(n))
    D = wavelet_packet_dictionary(X, tree)
    plan = get_packet_plan(tree)
    levels = _levels_in_place(_rows(X, plan, 1), plan, K.WIDTH)
    for j in range(plan.n_levels):
        # the same butterflies in the same rounding: equal values (a copied -0.0 may read
        # +0.0 in the dictionary, which array_equal does not tell apart)
        np.testing.assert_array_equal(levels[j], D[j].T)


@pytest.mark.parametrize("tree", ALL, ids=ALL_IDS)
@pytest.mark.parametrize("cost", ["l1", 0.5, 3.0, "entropy"])
def test_cost_table_is_the_cost_of_every_dictionary_entry(tree, cost):
    n = tree.n_points
    rng = np.random.default_rng(n + 1)
    for B in (1, 63, 64, 65, 130):  # one block, exactly one, one and a bit, three
        X = rng.standard_normal((B, n)) * np.exp(rng.standard_normal(n))
        plan = get_packet_plan(tree)
        rows = _rows(X, plan, 1)
        before = rows.copy()
        table, scale, energy = _cost_table(rows, plan, cost)
        np.testing.assert_array_equal(rows, before)  # a built-in cost leaves the rows alone
        D = wavelet_packet_dictionary(X, tree) * scale
        a = np.abs(D)
        if cost == "l1":
            want = a.sum(axis=1)
        elif cost == "entropy":
            e = a * a
            want = np.where(e > 0, -e * np.log(np.where(e > 0, e, 1.0)), 0.0).sum(axis=1)
            assert energy == pytest.approx(float(np.sum((X * scale) ** 2)), rel=1e-13)
        else:
            want = (a**cost).sum(axis=1)
        np.testing.assert_allclose(table, want, rtol=1e-12, atol=1e-300)


def test_serial_and_parallel_kernels_sum_alike_whatever_the_group():
    rng = np.random.default_rng(0)
    tree = linkage_tree(rng.standard_normal((300, 4)), method="average")
    plan = get_packet_plan(tree)
    sl = plan.slots
    rows = _rows(rng.standard_normal((300, 700)), plan, 0)
    for fused in (True, False):
        tables = []
        for run, group in (
            (K.dictionary_costs_serial, 1),
            (K.dictionary_costs, 1),
            (K.dictionary_costs, 3),
            (K.dictionary_costs, 11),
            (K.dictionary_costs, 64),
        ):
            table = np.zeros((plan.n_levels, plan.n))
            bufs = np.empty((group, plan.n, K.WIDTH + K.PAD))
            part = np.empty((group, plan.n_levels, plan.n))
            run(rows, 0.5, _schedule(sl, fused), 0, 1.0, K.WIDTH, bufs, part, table)
            tables.append(table)
        for other in tables[1:]:
            np.testing.assert_array_equal(other, tables[0])


@pytest.mark.parametrize("tree", ALL, ids=ALL_IDS)
def test_the_fused_schedule_gives_the_same_rows_and_costs(tree):
    n = tree.n_points
    rng = np.random.default_rng(n + 2)
    plan = get_packet_plan(tree)
    sl = plan.slots
    rows = _rows(rng.standard_normal((K.WIDTH, n)) * np.exp(rng.standard_normal(n)), plan, 1)
    out = []
    for fused in (True, False):
        buf = np.zeros((n, K.WIDTH + K.PAD))
        K.load_block(rows, 0, 1.0, buf, K.WIDTH)
        part = np.full((plan.n_levels, n), np.nan)
        if fused:
            quads = (sl.op_quad, sl.op_ref, sl.lev, sl.pair_a, sl.pair_b, sl.w)
            K.block_costs_fused(buf, K.WIDTH, *quads, sl.quad_lev, sl.quad_slots, sl.quad_w, part)
        else:
            K.block_costs(buf, K.WIDTH, sl.lev, sl.pair_a, sl.pair_b, sl.w, 0, 1.0, part)
        out.append((buf, part))
    np.testing.assert_array_equal(out[0][0], out[1][0])  # level 0, bit for bit
    # the same entries written, their sums equal up to the order of the vector sums
    np.testing.assert_array_equal(np.isnan(out[0][1]), np.isnan(out[1][1]))
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-14, atol=0)
    if tree.n_points == 64:  # a perfect dyadic tree: every pair is in a quad
        assert sl.op_quad.all() and 4 * sl.quad_lev.shape[0] == sl.lev.shape[0]


def test_the_schedule_runs_every_region_after_the_regions_inside_it():
    rng = np.random.default_rng(5)
    tree = random_tree(80, rng, max_children=4)
    plan = get_packet_plan(tree)
    sl = plan.slots
    # every slot is written at most once per level, and its levels decrease along the run
    last_level = np.full(plan.n, plan.n_levels, dtype=np.intp)
    seen = set()
    for j, a, b in zip(sl.lev, sl.pair_a, sl.pair_b):
        for s in (int(a), int(b)):
            assert (int(j), s) not in seen
            seen.add((int(j), s))
            assert j < last_level[s]
            last_level[s] = j
    # the pairs are exactly the entries that change: two slots per pair, all the paired
    # butterflies of the plan
    n_paired = int(np.sum(plan.wb != 0.0))
    assert 2 * sl.lev.shape[0] == n_paired
