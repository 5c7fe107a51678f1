"""The questionnaire's steps: the initial trees, one rebuild of an axis from the trees of the
others, the sweeps and their stopping rules, and the result.

Every step reads and writes an :class:`~._state.IterationState`; the trees themselves come
from :func:`~._candidates.make_tree` (the registry of builders and of ``"select"``'s
criteria).
"""

from __future__ import annotations

from .._validation import unscale
from ..metrics import affinity_matrix
from ._candidates import Geometry, make_tree
from ._presets import QuestionnaireResult
from ._sparse import sparse_initial, sparse_rebuild
from ._steps import _emd_feature_dtype, _final_orders, _objective, _same_trees, _unfold
from ._tied import partner_trees, tied_emd_points, tied_slices

__all__: list[str] = []


def initial_axes(settings):
    """The axes that get an initial tree (from the affinity of their slices): every axis
    for ``"jacobi"``, else all but the last (the first sweep starts there)."""
    n = settings.ndim
    return range(n) if settings.schedule == "jacobi" else range(n - 1)


def initial_step(state, axis):
    """The initial tree of ``axis``, from the initial affinity of its slices (the first axis
    of a tied pair builds the shared tree from both slices of every object; the second
    takes it)."""
    s = state.settings
    if s.follows_shared_tree(axis):
        return
    kind = s.params["init_affinity"]
    if s.builds_shared_tree(axis):
        A = affinity_matrix(tied_slices(state.X, s.tie), kind, **s.init_params)
        tree = make_tree(state, axis, Geometry(A), check=True)
    elif s.sparse[axis]:
        A, tree = sparse_initial(
            _unfold(state.Xe, axis), kind, s.init_params, s.constants[axis], s.n_neighbors,
            s.random_state, s.n_jobs, s.methods[axis],
        )  # fmt: skip
    else:
        A = affinity_matrix(_unfold(state.X, axis), kind, **s.init_params)
        tree = make_tree(state, axis, Geometry(A), check=True)
    state.affinities[axis] = A
    state.record(0, axis, tree)


def emd_geometry(state, axis, others):
    """The tree EMD of ``axis`` with the trees ``others`` (for the tied pair the sum of the
    EMDs along both axes, see :mod:`._tied`), its dual affinity, and for ``"ward"`` the
    features whose l1 distances are that EMD."""
    from ..metrics import multi_tree_emd_core, symmetric_dual_affinity_core

    s, Xe = state.settings, state.Xe
    steps = [(axis, others)]
    if s.builds_shared_tree(axis):
        steps.append((s.tie[1], partner_trees(others, s.tie)))
    d = None
    for along, trees_of in steps:
        feature_dtype = _emd_feature_dtype(s.emd_dtype, Xe.shape, along, trees_of)
        part = multi_tree_emd_core(
            Xe, trees_of, along, s.alphas, s.betas, False, None, feature_dtype, s.n_jobs, None
        )
        d = part if d is None else d + part
    A = symmetric_dual_affinity_core(d, s.epsilons[axis])
    points = None
    if s.methods[axis] == "ward":
        points = tied_emd_points(Xe, steps, s.alphas, s.betas, s.n_jobs)
    return Geometry(A, d, points)


def rebuild_step(state, axis, source_trees, iteration, from_initial=False):
    """Rebuild the tree of ``axis`` from the trees ``source_trees`` of the other axes
    (``from_initial``: they are the initial trees, whose results are kept for later
    sweeps). A step whose inputs equal those of the axis's last step takes its results."""
    s = state.settings
    if s.follows_shared_tree(axis):
        return
    others = [t if a != axis else None for a, t in enumerate(source_trees)]
    if s.sparse[axis]:
        d, A, tree = sparse_rebuild(
            state.Xe, others, axis, s.alphas, s.betas, s.epsilons[axis], s.constants[axis],
            s.n_neighbors, s.random_state, s.n_jobs, s.methods[axis], s.embed,
        )  # fmt: skip
        state.distances[axis], state.affinities[axis] = d, A
        state.record(iteration, axis, tree)
        return
    # everything this step reads: the trees of the EMD, and for "select" the current trees
    # along which the candidates' compression is measured
    key = tuple(others)
    if s.methods[axis] == "select":
        key += tuple(t if a != axis else None for a, t in enumerate(state.trees))
    if from_initial and axis in state.from_initial:  # the same inputs as in an earlier sweep
        d, A, tree = state.from_initial[axis]
    elif _same_trees(state.last_inputs.get(axis), key):
        # the inputs of this axis's last step, tree for tree (leaf orders too): its
        # distances, affinity and tree are bit for bit what this step would compute
        d, A, tree = state.distances[axis], state.affinities[axis], state.trees[axis]
    else:
        geometry = emd_geometry(state, axis, others)
        d, A = geometry.distances, geometry.affinity
        tree = make_tree(state, axis, geometry)
        if from_initial:
            state.from_initial[axis] = d, A, tree
    state.distances[axis] = d
    state.affinities[axis] = A
    state.last_inputs[axis] = key
    state.record(iteration, axis, tree)


def sweep(state, iteration):
    """One sweep over the axes, last axis first, by the schedule: ``"alternating"`` from
    the latest trees, ``"jacobi"`` from the previous sweep's, ``"reference_3d"`` as
    alternating but the last axis from the initial trees."""
    s = state.settings
    order = [s.ndim - 1, *range(s.ndim - 1)]
    if s.schedule == "jacobi":
        previous = list(state.trees)
        for axis in order:
            rebuild_step(state, axis, previous, iteration)
        return
    for axis in order:
        if s.schedule == "reference_3d" and axis == s.ndim - 1:
            rebuild_step(state, axis, state.initial_trees, iteration, from_initial=True)
        else:
            rebuild_step(state, axis, state.trees, iteration)


def run_sweeps(state):
    """Up to ``n_iter`` sweeps, stopped early by ``early_stopping``: after a sweep that
    changed no tree (the next would rebuild the same trees from the same inputs), or with
    ``"objective"`` after one that did not lower the objective enough (the best sweep's
    trees are then restored)."""
    s = state.settings
    best = None  # (objective, snapshot) of the best sweep
    for iteration in range(1, s.n_iter + 1):
        start = len(state.history)
        sweep(state, iteration)
        state.n_done = iteration
        # exact equality (leaf order too): the next sweep's inputs are then bit for bit
        # those of this one
        changed = not all(state.identical[start:])
        if s.early_stopping == "objective":
            value = _objective(state.X, state.trees)
            state.history[-1]["objective"] = value
            if best is not None and not value < best[0] * (1.0 - s.tol):
                state.restore(best[1])
                state.stop_reason = "objective"
                return
            best = (value, state.snapshot())
        # the next sweep would see the same trees this one saw (and reference_3d the same
        # initial trees), so it would rebuild the same trees: stopping changes nothing
        if s.early_stopping != "never" and not changed and iteration < s.n_iter:
            state.stop_reason = "unchanged"
            return


def finish(state, labels):
    """The result: every axis's order (by ``ordering``), the distances in X's units, and
    the labels in the organized orders."""
    s = state.settings
    if any(t is None for t in state.trees):
        # n_iter == 0 with the alternating schedules: the last axis gets its initial tree
        initial_step(state, s.ndim - 1)
    orders = _final_orders(
        state.trees, state.distances, s.sparse, s.params["ordering"], state.slice_distances,
        state.slices,
    )  # fmt: skip
    # X's units, exact (or a clear error where they pass the float range: the trees are
    # those of X, but distances_ could only hold infinities)
    what = "The questionnaire's tree-EMD distances (distances_)"
    distances = [
        None if d is None else unscale(d, state.scale, state.Xe, what=what) for d in state.distances
    ]
    if s.tie is not None:  # one order (equal anyway: same tree, distances, slices), one EMD
        a, b = s.tie
        orders[b], distances[b] = orders[a].copy(), distances[a]
    names = [
        None if axis_names is None else axis_names[order]
        for axis_names, order in zip(labels or [None] * s.ndim, orders)
    ]
    return QuestionnaireResult(
        state.trees, orders, state.affinities, distances, state.history, s.params,
        state.n_done, state.stop_reason, names,
    )  # fmt: skip
