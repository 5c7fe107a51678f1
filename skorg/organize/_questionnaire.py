"""The questionnaire iteration: alternating partition trees on every axis of a tensor.

The function reads as its steps: the settings (:mod:`._settings`), the state of the
iteration (:mod:`._state`), the initial trees, the sweeps and the result
(:mod:`._iteration`); each tree comes from the registry of builders and of the selection's
criteria (:mod:`._candidates`).
"""

from __future__ import annotations

from .._scratch import reusing_scratch
from ._iteration import finish, initial_axes, initial_step, run_sweeps
from ._presets import EARLY_STOPPING, PRESETS, SCHEDULES, QuestionnaireResult, resolve_params
from ._settings import check_data, resolve_settings
from ._state import IterationState

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
        (long axes) keeps X sparse: its tree-EMD features are built a block of rows at a
        time, and its initial cosine step densifies the rows once (both checked against the
        memory budget before they are allocated). Distances and affinities equal those of
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
    ordering : {"smoothest", "shortest", "emd_olo", "tree", "tree_olo"}, default="smoothest"
        How the organized order of each axis is derived. ``"smoothest"`` (the default)
        computes SciPy's single-linkage optimal leaf orderings of the tree EMD and of the
        Euclidean, cosine and correlation distances between the slices, keeps the one along
        which the slices are smoothest to second order (average linkage's where it is
        clearly smoother), and polishes it by short reversals
        (see :func:`skorg.organize.leaf_order`); it does not fold a series back on itself as
        the shortest path does (a yearly cycle, images blank at both borders).
        ``"shortest"`` (the default before) keeps, of the first two, the one whose path
        through the slices (the sum of Euclidean distances between neighbours) is shorter
        (the tree EMD's on a tie). On axes of the sparse path, which have no dense
        distances, both give ``"emd_olo"``. None of these follows the tree's folders;
        ``"tree_olo"`` does.
    preset : {"paper_3d_heads", "paper_2d_holder"}, optional
        The paper's settings (see :data:`PRESETS`).
    n_jobs : int, optional
        Threads for the distance kernels.
    affinity_mode : {"auto", "dense", "sparse"}, default="auto"
        ``"sparse"`` builds every axis from a k-nearest-neighbour affinity
        (:func:`~skorg.graphs.knn_affinity`, :func:`~skorg.metrics.knn_tree_emd_affinity`)
        and :func:`~skorg.trees.sparse_flexible_tree`: O(m k) memory instead of O(m^2),
        float32 features; its distances and affinities are sparse matrices and its order is
        the tree's leaf order. ``"auto"`` takes it for an axis of at least 4,096 points when
        the dense path's predicted memory passes the budget or its predicted time that of
        the k-NN path (the progress bar says which path each axis takes, and why).
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
    labels, X, embed = check_data(X, check_input)
    X, settings = resolve_settings(
        X,
        p,
        preset=preset,
        tree_method=tree_method,
        init_affinity_params=init_affinity_params,
        preprocess=preprocess,
        emd_dtype=emd_dtype,
        early_stopping=early_stopping,
        tol=tol,
        tie_axes=tie_axes,
        affinity_mode=affinity_mode,
        n_neighbors=n_neighbors,
        tree_params=tree_params,
        random_state=random_state,
        n_jobs=n_jobs,
    )
    settings.embed = embed
    state = IterationState.start(X, settings)
    for axis in initial_axes(settings):
        initial_step(state, axis)
    state.initial_trees = list(state.trees)
    run_sweeps(state)
    return finish(state, labels)
