"""Scratch arrays shared by the steps of one fit (skorg._scratch)."""

import threading

import numpy as np

import skorg.metrics._emd_core as emd_module
from skorg._scratch import reusing_scratch, scratch_empty
from skorg.organize import questionnaire


def test_outside_a_fit_every_request_is_a_new_array():
    a = scratch_empty("t", (3, 4), np.float64)
    b = scratch_empty("t", (3, 4), np.float64)
    assert a.shape == (3, 4) and a.dtype == np.float64
    assert not np.shares_memory(a, b)


def test_inside_a_fit_a_name_reuses_its_memory_while_it_is_large_enough():
    @reusing_scratch
    def fit():
        a = scratch_empty("t", (4, 5), np.float64)
        b = scratch_empty("t", (5, 4), np.float64)  # same size, other shape: same memory
        c = scratch_empty("t", (2, 3), np.float64)  # smaller: same memory
        d = scratch_empty("t", (6, 5), np.float64)  # larger: new memory, kept from now on
        e = scratch_empty("t", (6, 5), np.float64)
        f = scratch_empty("t", (6, 5), np.float32)  # other dtype: new memory
        g = scratch_empty("u", (6, 5), np.float64)  # other name: its own memory
        assert (b.shape, c.shape, d.shape) == ((5, 4), (2, 3), (6, 5))
        assert np.shares_memory(a, b) and np.shares_memory(a, c)
        assert not np.shares_memory(a, d) and np.shares_memory(d, e)
        assert f.dtype == np.float32 and not np.shares_memory(e, f)
        assert not np.shares_memory(g, e)
        return a

    first = fit()
    assert not np.shares_memory(first, fit())  # the pool goes with the call


def test_nested_calls_share_the_outer_pool():
    @reusing_scratch
    def inner():
        return scratch_empty("t", (8,), np.float64)

    @reusing_scratch
    def outer():
        return inner(), inner()

    a, b = outer()
    assert np.shares_memory(a, b)


def test_threads_have_their_own_pools():
    got = {}
    barrier = threading.Barrier(2)

    @reusing_scratch
    def fit(key):
        got[key] = scratch_empty("t", (1000,), np.float64)
        got[key][:] = key
        barrier.wait()  # both pools exist at once
        got[key] = got[key].copy() if np.all(got[key] == key) else None

    threads = [threading.Thread(target=fit, args=(k,)) for k in (1.0, 2.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got[1.0] is not None and got[2.0] is not None


def test_a_fit_gives_the_same_trees_with_and_without_the_reused_table(monkeypatch):
    rng = np.random.default_rng(0)
    # a 3-D fit runs the two-tree EMD on every axis, with tables of two shapes; the reused
    # (never cleared) table must give the bits the fresh one gives
    X = rng.standard_normal((20, 18, 24)).cumsum(axis=0).cumsum(axis=2)
    pooled = questionnaire(X, n_iter=3, emd_dtype="float64")
    monkeypatch.setattr(
        emd_module, "scratch_empty", lambda name, shape, dtype: np.empty(shape, dtype)
    )
    fresh = questionnaire(X, n_iter=3, emd_dtype="float64")
    for a, b in zip(pooled.trees, fresh.trees):
        assert a == b  # same nested partitions and leaf order
    for a, b in zip(pooled.distances, fresh.distances):
        np.testing.assert_array_equal(a, b)
