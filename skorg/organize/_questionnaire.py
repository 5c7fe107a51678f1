"""The questionnaire iteration: alternating partition trees on every axis of a tensor."""

from __future__ import annotations

from numbers import Integral, Real

import scipy.sparse as sp

from .._labels import axis_labels, data_of
from .._scratch import reusing_scratch
from .._sparse_input import canonical_sparse, check_sparse_matrix
from .._validation import check_finite_array, pow2_scale, unscale
from ..metrics import affinity_matrix
from ..trees import build_tree, flexible_tree
from ._dask_blocks import active_client, block_emd_feature_blocks
from ._dask_input import is_block_input, load_blocks
from ._preprocess import preprocess_data
from ._presets import (
    _INIT_AFFINITIES,
    EARLY_STOPPING,
    EMD_DTYPES,
    ORDERED_BUILDERS,
    PRESETS,
    QUESTIONNAIRE_ORDERINGS,
    SCHEDULES,
    SELECT_CANDIDATES,
    SELECT_MARGIN,
    QuestionnaireResult,
    resolve_params,
)
from ._sparse import sparse_axes, sparse_initial, sparse_rebuild
from ._steps import (
    _TIE,
    _compression_error_along,
    _emd_feature_dtype,
    _euclidean_distances,
    _final_orders,
    _objective,
    _partial_transform,
    _per_axis,
    _same_trees,
    _select_margin,
    _tree_methods,
    _unfold,
    _ward_tree,
)
from ._tied import (
    check_tie_axes,
    check_tied_params,
    partner_trees,
    tied_compression_error,
    tied_emd_points,
    tied_partial,
    tied_slices,
)

__all__ = ["EARLY_STOPPING", "PRESETS", "SCHEDULES", "QuestionnaireResult", "questionnaire"]


@reusing_scratch  # the EMD steps of one fit share their prefix table's memory
def questionnaire(
    X,
    *,
    n_iter=None,
    init_affinity=None,
    init_affinity_params=None,
    emd_alpha=None,
    emd_beta=None,
    epsilon=None,
    tree_constant=None,
    schedule=None,
    ordering=None,
    preset=None,
    n_jobs=None,
    affinity_mode="auto",
    n_neighbors=15,
    random_state=None,
    emd_dtype="auto",
    tree_method=None,
    tree_params=None,
    early_stopping="unchanged",
    tol=1e-4,
    tie_axes=None,
    preprocess="auto",
    check_input=True,
):
    """Learn a partition tree on every axis of a matrix or tensor.

    Functional twin of :class:`~skorg.QuestionnaireOrganizer`; parameters
    left at None take the value of ``preset``, else the default.

    Parameters
    ----------
    X : array-like of shape (n_0, n_1, ..., n_{d-1}), d >= 2, or sparse matrix
        Finite values; every axis needs at least 2 entries. A DataFrame, DataArray or
        AnnData gives its labels to ``result.names``, and ``result.organize(X)`` returns it
        reordered. A SciPy sparse matrix
        (CSR or CSC, scanpy's usual ``adata.X``) is never densified on the dense-affinity
        path: the initial affinities come from its Gram products and the tree EMD builds
        its features a block of folders at a time within sklearn's ``working_memory``
        (see :func:`~skorg.metrics.tree_emd`); memory is then a few (m, m) matrices per
        axis of length m, as for dense X, plus X itself. The k-nearest-neighbour path
        (long axes) densifies X once, only when the dense copy fits in ``working_memory``
        (otherwise it raises before starting). Distances and affinities equal those of
        ``X.toarray()`` to rounding (about 1e-15 relative), so the trees and orders are the
        same unless the data has exact ties, which rounding may break either way. The trees
        and orders do not depend on the units of X: the tree EMD steps see X scaled exactly
        (by a power of two) to largest magnitude in [0.5, 1), and the learned ``distances``
        are returned in X's units. A Dask array, or a backed AnnData, is gathered a block
        per task after its in-memory size is checked against the memory budget (user
        guide, "Data in blocks"); with a ``dask.distributed`` Client active, the rows'
        tree-EMD features of the k-NN path are computed there a block of rows per task.
        The result equals that of the in-memory matrix bit for bit.
    n_iter : int, default=3
        Number of sweeps over the axes.
    init_affinity : {"cosine", "correlation", "gaussian"} or callable, default="cosine"
        Affinity between the slices of the initial axes (the rows of each
        mode unfolding).
    init_affinity_params : dict, optional
        Extra arguments of the initial affinity (e.g. ``threshold``,
        ``missing_values``).
    emd_alpha, emd_beta : float or sequence of float, default=0.0 and 1.0
        Tree EMD folder weights ``(|F|/n)**beta * 2**(-alpha * level)`` of the
        tree of each axis (one value, or one per axis).
    epsilon : float or sequence of float, default=1.0
        Scale of the dual affinity ``exp(-d / (epsilon * median d))`` of each
        axis.
    tree_constant : float or sequence of float, default=1.0
        Flexible-tree constant of each axis.
    tree_method : str, callable or sequence of those, default="select"
        The tree builder of each axis (one, or one per axis), see
        :func:`~skorg.trees.build_tree`: ``"flexible"`` (the paper's flexible tree of the
        affinity), the linkage rules ``"average"``, ``"complete"``, ``"single"``,
        ``"weighted"`` (:func:`~skorg.trees.hierarchical_tree` of the tree EMD, or of
        ``1 - A / max A`` for the initial cosine affinity), ``"ward"`` (exact Ward of the
        tree-EMD features, the points whose l1 distances are the tree EMD, see
        :func:`~skorg.metrics.tree_emd_embedding`; the slices themselves for an initial
        tree, and the diffusion embedding of the EMD when the features would not fit in the
        memory budget), ``"ward_slices"`` (Ward of the slices of X along the axis in
        Euclidean distance, which does not depend on the other trees: SciPy's Ward tree),
        ``"hybrid"`` (:func:`~skorg.trees.hybrid_tree`), ``"bisection"``
        (:func:`~skorg.trees.bisection_tree` of the affinity), ``"select"`` or a callable
        ``f(distances=..., affinity=...) -> PartitionTree``. ``"select"`` (the default)
        builds, per axis and step, average linkage of the tree EMD and Ward of the slices
        and compares how well the Haar expansion of X (with the other axes' current trees)
        compresses on each: the relative l2 error after keeping the largest 5% of the
        coefficients. Ward's tree, which groups, is kept unless average linkage's error is
        lower by more than ``tree_params["select_margin"]`` (default 0.02, a relative
        margin; 0 keeps the lower error, the rule before the margin);
        ``history[k]["method"]`` records the choice. It was chosen by
        the organization-quality benchmark (user guide, "choosing a tree builder"); the
        presets pin ``"flexible"``. Axes on the sparse path take ``"flexible"`` (the default
        gives way to it there), ``"single"`` (the minimum spanning forest of the k-NN graph)
        or ``"ward"`` (Ward of its sparse diffusion embedding). Inside the iteration the
        linkage trees skip SciPy's optimal leaf ordering (the tree EMD sees partitions only);
        ``ordering`` gives the organized order.
    tree_params : dict, optional
        Extra arguments of the builders (for example ``{"merge_tolerance": 0.05}``), and
        ``"select_margin"`` for ``tree_method="select"``.
    early_stopping : {"unchanged", "objective", "never"}, default="unchanged"
        ``"unchanged"`` stops after a sweep that changed no tree (the next sweeps would
        rebuild the same trees from the same inputs, so the result equals that of all
        ``n_iter`` sweeps); ``"objective"`` also stops after a sweep that lowered the
        normalized Haar l1 norm of X on all trees by less than ``tol`` (relative) and returns
        the trees of the best sweep; ``"never"`` runs all ``n_iter`` sweeps.
    tol : float, default=1e-4
        Relative improvement of the objective that counts (``early_stopping="objective"``).
    tie_axes : pair of int, optional
        Two axes of equal length that index the same objects (the queries and keys of
        self-attention, ``(0, 1)`` of a query x key x head tensor; the rows and columns of an
        affinity, correlation or distance matrix): they get one tree and one order, learned
        from both (see Notes). Their per-axis settings (``emd_alpha``, ``emd_beta``,
        ``epsilon``, ``tree_constant``, ``tree_method``) must agree. Dense path only.
    preprocess : {"auto", "log1p", "log1p_normalized", "binary", "tfidf"} or None, \
default="auto"
        A transform of X before it is organized (the trees and orders are of the
        transformed data; the data returned by ``transform`` is X itself). None: X as
        given. ``"log1p"``: ``log(1 + X / u)`` with ``u`` the smallest nonzero magnitude
        (``log1p`` of counts, in any unit). ``"log1p_normalized"``: the same after every row
        and column is brought to the median total (a factor ``(m / total) ** (1 / ndim)``
        per axis), as for cells x genes or documents x words in either orientation.
        ``"binary"``: presence (X != 0). ``"tfidf"``: scikit-learn's TF-IDF of the rows as
        documents. ``"auto"``: ``"log1p_normalized"`` when X holds raw counts (non-negative
        integer multiples of one unit, at least a quarter zeros, the largest entry at least
        10 times the median nonzero one), else None; with a ``preset``, ``"auto"`` is None
        (the presets organize X as given). Raw counts as given are decided by a few large
        entries (the benchmark of kinds in the user guide, "choosing a tree builder").
        ``params["preprocess"]`` records the transform applied.
    schedule : {"alternating", "jacobi", "reference_3d"}, default="alternating"
        - ``"alternating"`` (Gauss-Seidel): initial trees on axes
          0..d-2, then each sweep rebuilds axis d-1, 0, 1, ..., d-2, each
          from the latest trees of the other axes.
        - ``"jacobi"``: initial trees on every axis; each sweep rebuilds
          every axis from the trees of the previous sweep (the published 2-D
          code, used by the paper's Hoelder organization).
        - ``"reference_3d"``: as alternating, except that axis d-1 is always
          built from the *initial* trees (the published 3-D code).

        The last two reproduce the original implementation; the first is the
        corrected default.
    ordering : {"shortest", "emd_olo", "tree", "tree_olo"}, default="shortest"
        How the organized order of each axis is derived. ``"shortest"`` (the default)
        computes SciPy's single-linkage optimal leaf ordering of the tree EMD
        (``"emd_olo"``) and of the Euclidean distances between the slices, and keeps the
        one whose path through the slices (the sum of Euclidean distances between
        neighbours) is shorter (the tree EMD's on a tie, and on axes of the sparse path,
        which have no dense distances). Neither follows the tree's folders; ``"tree_olo"``
        does (see :func:`skorg.organize.leaf_order` for the others).
    preset : {"paper_3d_heads", "paper_2d_holder"}, optional
        The paper's settings (see :data:`PRESETS`).
    n_jobs : int, optional
        Threads for the distance kernels.
    affinity_mode : {"auto", "dense", "sparse"}, default="auto"
        ``"sparse"`` builds every axis from a k-nearest-neighbour affinity
        (:func:`~skorg.graphs.knn_affinity`, :func:`~skorg.metrics.knn_tree_emd_affinity`)
        and :func:`~skorg.trees.sparse_flexible_tree`: O(m k) memory instead of O(m^2),
        float32 features; its distances and affinities are sparse matrices and its order is
        the tree's leaf order. ``"auto"`` takes it for axes longer than 10,000.
    n_neighbors : int, default=15
        Neighbours per point on the sparse path.
    random_state : int, RandomState or None, default=None
        Seed of the sparse path's neighbour search and samples (None: 0); the dense path
        draws no random numbers.
    emd_dtype : {"auto", "float64", "float32"}, default="auto"
        Precision of the tree-EMD features and of their pairwise sums on the dense path.
        ``"float32"`` runs the distance kernels at twice the SIMD width (about 1.5 to 2 times
        faster on large tensors) with distances accurate to about 1e-6 relative; the trees
        usually do not change. ``"auto"``: float32 for the steps whose pairwise sums are large
        (``m^2 |T_1| |T_2| / 2`` of at least ``2**28``: tensors from about 256 x 256 x 128,
        matrices from about 1024 x 1024), float64 for the others; ``"float64"`` everywhere
        gives distances exact to rounding. See "Speed and precision" in the user guide.
    check_input : bool, default=True

    Returns
    -------
    result : QuestionnaireResult

    Notes
    -----
    Tied axes (``tie_axes=(a, b)``): object ``i`` is described by the union of its slices at
    ``i`` along ``a`` and along ``b`` (for a query x key x head tensor ``T`` and ``(0, 1)``,
    ``T[i, :, :]`` and ``T[:, i, :]``). The initial affinity and the slices' Euclidean
    distances are those of the concatenated slices, and the tree EMD is

    .. math:: d(i, j) = d_a(i, j) + d_b(i, j),

    ``d_a`` the tree EMD along ``a`` with the shared tree on ``b`` (and the current trees on
    the other axes), ``d_b`` the same along ``b`` with the shared tree on ``a``: the EMD is
    an l1 distance between weighted folder means, so that of the union of the two feature
    sets is the sum. ``"select"`` scores a candidate on both axes. The one tree (the same
    object for both axes, listed under both in ``history``) and its order are valid for
    either axis, so a symmetric matrix stays symmetric. See the user guide, "Tied axes".

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.organize import questionnaire
    >>> x = np.linspace(0, 1, 24)
    >>> X = np.cos(3 * np.subtract.outer(x, x))[np.ix_(np.r_[12:24, 0:12], np.r_[5:24, 0:5])]
    >>> res = questionnaire(X, n_iter=1)
    >>> [t.n_points for t in res.trees]
    [24, 24]
    """
    from ..metrics import multi_tree_emd_core, symmetric_dual_affinity_core

    p = resolve_params(
        preset,
        n_iter=n_iter,
        init_affinity=init_affinity,
        emd_alpha=emd_alpha,
        emd_beta=emd_beta,
        epsilon=epsilon,
        tree_constant=tree_constant,
        schedule=schedule,
        ordering=ordering,
        tree_method=tree_method,
    )
    labels = axis_labels(X)
    X = data_of(X)
    embed = None  # the rows' EMD features of the k-NN path: per block on a Dask cluster
    if is_block_input(X):  # a Dask array or a backed AnnData: gathered by tasks, memory first
        X = load_blocks(X)
        embed = block_emd_feature_blocks if active_client() is not None else None
    if sp.issparse(X):
        X = check_sparse_matrix(X, "X", min_rows=2) if check_input else canonical_sparse(X)
    elif check_input:
        X = check_finite_array(X, "X", min_ndim=2, min_rows=2)
    if preset is not None and preprocess == "auto":
        preprocess = None  # the presets reproduce the papers' runs, on X as given
    X, applied = preprocess_data(X, preprocess)
    ndim = X.ndim
    kind = p["init_affinity"]
    if not callable(kind) and kind not in _INIT_AFFINITIES:
        raise ValueError(
            f"Unknown init_affinity {kind!r}; expected one of {_INIT_AFFINITIES} or a callable."
        )
    if isinstance(p["n_iter"], bool) or not isinstance(p["n_iter"], Integral) or p["n_iter"] < 0:
        raise ValueError(f"n_iter must be a non-negative integer, got {p['n_iter']!r}.")
    if p["schedule"] not in SCHEDULES:
        raise ValueError(f"Unknown schedule {p['schedule']!r}; expected one of {SCHEDULES}.")
    if p["ordering"] not in QUESTIONNAIRE_ORDERINGS:
        raise ValueError(
            f"Unknown ordering {p['ordering']!r}; expected one of {QUESTIONNAIRE_ORDERINGS}."
        )
    if emd_dtype not in EMD_DTYPES:
        raise ValueError(f"emd_dtype must be one of {EMD_DTYPES}, got {emd_dtype!r}.")
    if early_stopping not in EARLY_STOPPING:
        raise ValueError(f"early_stopping must be one of {EARLY_STOPPING}, got {early_stopping!r}.")
    if not (isinstance(tol, Real) and not isinstance(tol, bool) and 0 <= tol < 1):
        raise ValueError(f"tol must be a number in [0, 1), got {tol!r}.")
    alphas = _per_axis(p["emd_alpha"], ndim, "emd_alpha")
    betas = _per_axis(p["emd_beta"], ndim, "emd_beta")
    epsilons = _per_axis(p["epsilon"], ndim, "epsilon", positive=True)
    constants = _per_axis(p["tree_constant"], ndim, "tree_constant", positive=True)
    init_params = dict(init_affinity_params or {})
    sparse = sparse_axes(X.shape, affinity_mode, n_neighbors)
    tie = check_tie_axes(tie_axes, X.shape, sparse)
    # the default builder gives way to the flexible tree on axes that take the sparse path
    default_method = tree_method is None and (
        preset is None or "tree_method" not in PRESETS[preset]
    )
    methods = _tree_methods(p["tree_method"], ndim, sparse, default_method)
    if tie is not None:
        per_axis = {"emd_alpha": alphas, "emd_beta": betas, "epsilon": epsilons}
        check_tied_params(tie, {**per_axis, "tree_constant": constants, "tree_method": methods})
    builder_params = dict(tree_params or {})
    select_margin = _select_margin(builder_params.pop("select_margin", SELECT_MARGIN))
    p.update(
        tie_axes=tie,
        affinity_mode=affinity_mode,
        n_neighbors=n_neighbors,
        tree_params=builder_params,
        early_stopping=early_stopping,
        tol=tol,
        preprocess=applied,
    )

    chosen = {}  # axis -> the builder "select" took for its latest tree

    def params_of(method):
        if method in ORDERED_BUILDERS and "optimal_ordering" not in builder_params:
            # the tree EMD sees partitions only, and the final order comes from `ordering`:
            # SciPy's optimal leaf ordering (most of a linkage tree's cost) is left out
            return {"optimal_ordering": False, **builder_params}
        return builder_params

    # axis -> Euclidean distances between its slices and their Ward tree (neither depends on
    # the other trees, so each is computed once)
    slice_distances, slice_trees = {}, {}

    def distances_of_slices(axis):
        if tie is not None and axis in tie:  # the tied objects: both slices, side by side
            if tie[0] not in slice_distances:
                slice_distances[tie[0]] = _euclidean_distances(tied_slices(Xe, tie))
            return slice_distances[tie[0]]
        if axis not in slice_distances:
            slice_distances[axis] = _euclidean_distances(_unfold(Xe, axis))
        return slice_distances[axis]

    def build_one(method, axis, A, d, points):
        if method == "ward" and points is not None:
            return build_tree("ward", points=points, **params_of("ward"))
        if method == "ward" and d is not None:  # features beyond the memory budget
            return build_tree("ward", distances=d, **params_of("ward"))
        if method in ("ward", "ward_slices"):  # an initial "ward" tree: no features yet
            if axis not in slice_trees:
                slice_trees[axis] = _ward_tree(distances_of_slices(axis))
            return slice_trees[axis]
        return build_tree(
            method, distances=d, affinity=A, tree_constant=constants[axis], **params_of(method)
        )

    def make_tree(axis, A, d, check=False, points=None):
        method = methods[axis]
        if method == "flexible" and not builder_params:
            return flexible_tree(A, tree_constant=constants[axis], check_input=check)
        if method != "select":
            return build_one(method, axis, A, d, points)
        # every candidate builder on the axis's geometry; keep the one whose Haar expansion
        # compresses X best (the transform along the other axes is shared by all candidates)
        best = None
        tied = tie is not None and axis == tie[0]
        partial = tied_partial(X, trees, tie) if tied else _partial_transform(X, trees, axis)
        # Ward of the slices (the grouping) stays unless average linkage of the tree EMD
        # compresses by more than select_margin; 0 is the earlier rule (the lower error)
        candidates = SELECT_CANDIDATES[::-1] if select_margin > 0 else SELECT_CANDIDATES
        for name in candidates:
            tree = build_one(name, axis, A, d, points)
            if tied:  # the candidate on both tied axes
                value = tied_compression_error(partial, tree, tie)
            else:
                value = _compression_error_along(partial, tree, axis)
            # near-ties (within rounding) keep the earlier candidate: rescaled data, whose
            # objective differs in the last bits, then selects the same trees
            if best is None or value < best[0] * (1 - max(_TIE, select_margin)):
                best = (value, name, tree)
        chosen[axis] = best[1]
        return best[2]

    # The tree EMD steps see X scaled by a power of two to largest magnitude in [0.5, 1):
    # exact, so the trees are bit for bit those of any rescaled copy of X, and neither the
    # float32 features nor the squares of the kNN path can underflow or overflow.
    scale = pow2_scale(X.data if sp.issparse(X) else X, always=True)
    Xe = X * scale
    trees = [None] * ndim
    affinities = [None] * ndim
    distances = [None] * ndim
    history = []

    identical = []  # per tree built: equal to the axis's previous tree, leaf order included

    def record(iteration, axis, tree):
        prev = trees[axis]
        changed = prev is None or not tree.same_partitions(prev)
        identical.append(prev is not None and tree == prev)
        history.append(
            {
                "iteration": iteration,
                "axis": axis,
                "tree": tree,
                "changed": changed,
                "objective": None,
                "method": chosen.get(axis, methods[axis]),
            }
        )
        trees[axis] = tree
        if tie is not None and axis == tie[0]:  # the shared tree, recorded for both axes
            if axis in chosen:
                chosen[tie[1]] = chosen[axis]
            affinities[tie[1]], distances[tie[1]] = affinities[axis], distances[axis]
            record(iteration, tie[1], tree)

    def initial(axis):
        if tie is not None and axis == tie[1]:  # built with the first tied axis
            return
        if tie is not None and axis == tie[0]:
            A = affinity_matrix(tied_slices(X, tie), p["init_affinity"], **init_params)
            affinities[axis] = A
            record(0, axis, make_tree(axis, A, None, check=True))
            return
        if sparse[axis]:
            A, tree = sparse_initial(
                _unfold(Xe, axis), p["init_affinity"], init_params, constants[axis],
                n_neighbors, random_state, n_jobs, methods[axis],
            )  # fmt: skip
        else:
            A = affinity_matrix(_unfold(X, axis), p["init_affinity"], **init_params)
            tree = make_tree(axis, A, None, check=True)
        affinities[axis] = A
        record(0, axis, tree)

    init_axes = range(ndim) if p["schedule"] == "jacobi" else range(ndim - 1)
    for axis in init_axes:
        initial(axis)
    initial_trees = list(trees)
    from_initial = {}  # axis -> (d, A, tree) built from the initial trees ("reference_3d")
    last_inputs = {}  # axis -> the trees its last dense step read (see _same_trees)

    def rebuild(axis, source_trees, iteration):
        if tie is not None and axis == tie[1]:  # built with the first tied axis
            return
        others = [t if a != axis else None for a, t in enumerate(source_trees)]
        if sparse[axis]:
            d, A, tree = sparse_rebuild(
                Xe, others, axis, alphas, betas, epsilons[axis], constants[axis], n_neighbors,
                random_state, n_jobs, methods[axis], embed,
            )  # fmt: skip
            distances[axis], affinities[axis] = d, A
            record(iteration, axis, tree)
            return
        reuse = source_trees is initial_trees
        # everything this step reads: the trees of the EMD, and for "select" the current trees
        # along which the candidates' compression is measured
        key = tuple(others)
        if methods[axis] == "select":
            key += tuple(t if a != axis else None for a, t in enumerate(trees))
        if reuse and axis in from_initial:  # the same inputs as in an earlier sweep
            d, A, tree = from_initial[axis]
        elif _same_trees(last_inputs.get(axis), key):
            # the inputs of this axis's last step, tree for tree (leaf orders too): its
            # distances, affinity and tree are bit for bit what this step would compute
            d, A, tree = distances[axis], affinities[axis], trees[axis]
        else:
            # one EMD, or for tied axes the sum of the EMDs along both (see Notes)
            steps = [(axis, others)]
            if tie is not None and axis == tie[0]:
                steps.append((tie[1], partner_trees(others, tie)))
            d = None
            for along, trees_of in steps:
                feature_dtype = _emd_feature_dtype(emd_dtype, Xe.shape, along, trees_of)
                part = multi_tree_emd_core(
                    Xe, trees_of, along, alphas, betas, False, None, feature_dtype, n_jobs, None
                )
                d = part if d is None else d + part
            A = symmetric_dual_affinity_core(d, epsilons[axis])
            points = None
            if methods[axis] == "ward":
                points = tied_emd_points(Xe, steps, alphas, betas, n_jobs)
            tree = make_tree(axis, A, d, points=points)
            if reuse:
                from_initial[axis] = d, A, tree
        distances[axis] = d
        affinities[axis] = A
        last_inputs[axis] = key
        record(iteration, axis, tree)

    sweep = [ndim - 1, *range(ndim - 1)]
    n_done, stop_reason = 0, "n_iter"
    best = None  # (objective, trees, affinities, distances) of the best sweep
    for iteration in range(1, p["n_iter"] + 1):
        start = len(history)
        if p["schedule"] == "jacobi":
            previous = list(trees)
            for axis in sweep:
                rebuild(axis, previous, iteration)
        else:
            for axis in sweep:
                if p["schedule"] == "reference_3d" and axis == ndim - 1:
                    rebuild(axis, initial_trees, iteration)
                else:
                    rebuild(axis, trees, iteration)
        n_done = iteration
        # exact equality (leaf order too): the next sweep's inputs are then bit for bit those
        # of this one
        changed = not all(identical[start:])
        if early_stopping == "objective":
            value = _objective(X, trees)
            history[-1]["objective"] = value
            if best is not None and not value < best[0] * (1.0 - tol):
                trees[:], affinities[:], distances[:] = best[1], best[2], best[3]
                stop_reason = "objective"
                break
            best = (value, list(trees), list(affinities), list(distances))
        # the next sweep would see the same trees this one saw (and reference_3d the same
        # initial trees), so it would rebuild the same trees: stopping changes nothing
        if early_stopping != "never" and not changed and iteration < p["n_iter"]:
            stop_reason = "unchanged"
            break

    if any(t is None for t in trees):
        # n_iter == 0 with the alternating schedules: the last axis gets its initial tree
        initial(ndim - 1)

    orders = _final_orders(trees, distances, sparse, p["ordering"], distances_of_slices)
    # X's units, exact (or a clear error where they pass the float range: the trees are
    # those of X, but distances_ could only hold infinities)
    what = "The questionnaire's tree-EMD distances (distances_)"
    distances = [None if d is None else unscale(d, scale, Xe, what=what) for d in distances]
    if tie is not None:  # one order (equal anyway: same tree, distances, slices), one EMD
        orders[tie[1]], distances[tie[1]] = orders[tie[0]].copy(), distances[tie[0]]
    names = [
        None if axis_names is None else axis_names[order]
        for axis_names, order in zip(labels or [None] * ndim, orders)
    ]
    return QuestionnaireResult(
        trees, orders, affinities, distances, history, p, n_done, stop_reason, names
    )
