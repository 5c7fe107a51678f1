"""The questionnaire iteration: alternating partition trees on every axis of a tensor."""

from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Integral

import numpy as np

from .._validation import check_finite_array, pow2_scale
from ..metrics import affinity_matrix
from ..trees import flexible_tree
from ._ordering import ORDERINGS, leaf_order
from ._sparse import sparse_axes, sparse_initial, sparse_rebuild

__all__ = ["PRESETS", "SCHEDULES", "QuestionnaireResult", "questionnaire"]

SCHEDULES = ("alternating", "jacobi", "reference_3d")
_INIT_AFFINITIES = ("cosine", "correlation", "gaussian")
EMD_DTYPES = ("float64", "float32")

PRESETS = {
    # the paper's organization of attention heads (query x key x head)
    "paper_3d_heads": {
        "init_affinity": "cosine",
        "tree_constant": 1.0,
        "emd_alpha": 0.0,
        "emd_beta": 1.0,
        "n_iter": 3,
    },
    # the paper's Hoelder organization of one matrix, before the paraproduct
    "paper_2d_holder": {
        "init_affinity": "cosine",
        "tree_constant": 1.0,
        "emd_alpha": 1.0,
        "emd_beta": 0.0,
        "n_iter": 10,
        "ordering": "tree",
    },
}

DEFAULTS = {
    "n_iter": 3,
    "init_affinity": "cosine",
    "emd_alpha": 0.0,
    "emd_beta": 1.0,
    "epsilon": 1.0,
    "tree_constant": 1.0,
    "schedule": "alternating",
    "ordering": "emd_olo",
}


@dataclass
class QuestionnaireResult:
    """What :func:`questionnaire` learned, one entry per axis.

    Attributes
    ----------
    trees : list of PartitionTree
        The final tree of every axis.
    orders : list of ndarray
        The organized order of every axis (see ``ordering``).
    affinities : list of ndarray
        The affinity each final tree was built from.
    distances : list of ndarray or None
        The tree EMD behind each final affinity (None for an axis whose tree
        comes from the initial affinity only).
    history : list of dict
        One entry per tree built, in order: ``iteration`` (0 for the initial
        trees), ``axis``, ``tree``, ``changed`` (False if the nested
        partitions equal the previous tree of that axis).
    params : dict
        The resolved parameters.
    """

    trees: list
    orders: list
    affinities: list
    distances: list
    history: list = field(default_factory=list)
    params: dict = field(default_factory=dict)


def resolve_params(preset=None, **given):
    """Merge explicit parameters (None = unset) over a preset and the defaults."""
    if preset is not None and preset not in PRESETS:
        raise ValueError(f"Unknown preset {preset!r}; expected one of {sorted(PRESETS)} or None.")
    params = dict(DEFAULTS)
    if preset is not None:
        params.update(PRESETS[preset])
    params.update({k: v for k, v in given.items() if v is not None})
    return params


def _per_axis(value, n_axes, name, positive=False):
    items = value if np.ndim(value) == 1 else [value]
    if any(isinstance(v, (str, bytes, bool, np.bool_)) or v is None for v in items):
        raise TypeError(f"{name} must be a number or a sequence of numbers, got {value!r}.")
    if np.ndim(value) > 1 or (np.ndim(value) == 1 and len(value) != n_axes):
        raise ValueError(
            f"{name} must be a number or a sequence of {n_axes} numbers, got {value!r}."
        )
    values = np.broadcast_to(np.asarray(value, dtype=np.float64), (n_axes,))
    if not np.all(np.isfinite(values)) or (positive and np.any(values <= 0)):
        kind = "positive numbers" if positive else "finite numbers"
        raise ValueError(f"{name} must hold {kind}, got {value!r}.")
    return [float(v) for v in values]


def _unfold(X, axis):
    return np.moveaxis(X, axis, 0).reshape(X.shape[axis], -1)


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
    emd_dtype="float64",
    check_input=True,
):
    """Learn a partition tree on every axis of a matrix or tensor.

    Functional twin of :class:`~skorg.QuestionnaireOrganizer`; parameters
    left at None take the value of ``preset``, else the default.

    Parameters
    ----------
    X : array-like of shape (n_0, n_1, ..., n_{d-1}), d >= 2
        Finite values; every axis needs at least 2 entries. The trees and orders do not
        depend on the units of X: the tree EMD steps see X scaled exactly (by a power of two)
        to largest magnitude in [0.5, 1), and the learned ``distances`` are returned in X's
        units.
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
    ordering : {"emd_olo", "tree", "tree_olo"}, default="emd_olo"
        How the organized order of each axis is derived; see
        :func:`skorg.organize.leaf_order`.
    preset : {"paper_3d_heads", "paper_2d_holder"}, optional
        The paper's settings (see :data:`PRESETS`).
    n_jobs : int, optional
        Threads for the distance kernels.
    affinity_mode : {"auto", "dense", "sparse"}, default="auto"
        ``"sparse"`` builds every axis from a k-nearest-neighbour affinity
        (:func:`~skorg.metrics.knn_affinity`, :func:`~skorg.metrics.knn_tree_emd_affinity`)
        and :func:`~skorg.trees.sparse_flexible_tree`: O(m k) memory instead of O(m^2),
        float32 features; its distances and affinities are sparse matrices and its order is
        the tree's leaf order. ``"auto"`` takes it for axes longer than 10,000.
    n_neighbors : int, default=15
        Neighbours per point on the sparse path.
    random_state : int, RandomState or None, default=None
        Seed of the sparse path's neighbour search and samples (None: 0); the dense path
        draws no random numbers.
    emd_dtype : {"float64", "float32"}, default="float64"
        Precision of the tree-EMD features and of their pairwise sums on the dense path.
        ``"float32"`` runs the distance kernels at twice the SIMD width (about 1.5 to 2 times
        faster on large tensors) with distances accurate to about 1e-6 relative; the trees
        usually do not change.
    check_input : bool, default=True

    Returns
    -------
    result : QuestionnaireResult

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
    from ..metrics._emd import _multi_tree_emd, _symmetric_dual_affinity

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
    )
    if check_input:
        X = check_finite_array(X, "X", min_ndim=2, min_rows=2)
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
    if p["ordering"] not in ORDERINGS:
        raise ValueError(f"Unknown ordering {p['ordering']!r}; expected one of {ORDERINGS}.")
    if emd_dtype not in EMD_DTYPES:
        raise ValueError(f"emd_dtype must be one of {EMD_DTYPES}, got {emd_dtype!r}.")
    feature_dtype = np.dtype(emd_dtype)
    alphas = _per_axis(p["emd_alpha"], ndim, "emd_alpha")
    betas = _per_axis(p["emd_beta"], ndim, "emd_beta")
    epsilons = _per_axis(p["epsilon"], ndim, "epsilon", positive=True)
    constants = _per_axis(p["tree_constant"], ndim, "tree_constant", positive=True)
    init_params = dict(init_affinity_params or {})
    sparse = sparse_axes(X.shape, affinity_mode, n_neighbors)
    p.update(affinity_mode=affinity_mode, n_neighbors=n_neighbors)

    # The tree EMD steps see X scaled by a power of two to largest magnitude in [0.5, 1):
    # exact, so the trees are bit for bit those of any rescaled copy of X, and neither the
    # float32 features nor the squares of the kNN path can underflow or overflow.
    scale = pow2_scale(X, always=True)
    Xe = X * scale
    trees = [None] * ndim
    affinities = [None] * ndim
    distances = [None] * ndim
    history = []

    def record(iteration, axis, tree):
        prev = trees[axis]
        changed = prev is None or not tree.same_partitions(prev)
        history.append({"iteration": iteration, "axis": axis, "tree": tree, "changed": changed})
        trees[axis] = tree

    def initial(axis):
        if sparse[axis]:
            A, tree = sparse_initial(
                _unfold(Xe, axis), p["init_affinity"], init_params, constants[axis],
                n_neighbors, random_state, n_jobs,
            )  # fmt: skip
        else:
            A = affinity_matrix(_unfold(X, axis), p["init_affinity"], **init_params)
            tree = flexible_tree(A, tree_constant=constants[axis])
        affinities[axis] = A
        record(0, axis, tree)

    init_axes = range(ndim) if p["schedule"] == "jacobi" else range(ndim - 1)
    for axis in init_axes:
        initial(axis)
    initial_trees = list(trees)
    from_initial = {}  # axis -> (d, A, tree) built from the initial trees ("reference_3d")

    def rebuild(axis, source_trees, iteration):
        others = [t if a != axis else None for a, t in enumerate(source_trees)]
        if sparse[axis]:
            d, A, tree = sparse_rebuild(
                Xe, others, axis, alphas, betas, epsilons[axis], constants[axis], n_neighbors,
                random_state, n_jobs,
            )  # fmt: skip
            distances[axis], affinities[axis] = d, A
            record(iteration, axis, tree)
            return
        reuse = source_trees is initial_trees
        if reuse and axis in from_initial:  # the same inputs as in an earlier sweep
            d, A, tree = from_initial[axis]
        else:
            d = _multi_tree_emd(
                Xe, others, axis, alphas, betas, False, None, feature_dtype, n_jobs, None
            )
            A = _symmetric_dual_affinity(d, epsilons[axis])
            tree = flexible_tree(A, tree_constant=constants[axis], check_input=False)
            if reuse:
                from_initial[axis] = d, A, tree
        distances[axis] = d
        affinities[axis] = A
        record(iteration, axis, tree)

    sweep = [ndim - 1, *range(ndim - 1)]
    for iteration in range(1, p["n_iter"] + 1):
        if p["schedule"] == "jacobi":
            previous = list(trees)
            for axis in sweep:
                rebuild(axis, previous, iteration)
            continue
        for axis in sweep:
            if p["schedule"] == "reference_3d" and axis == ndim - 1:
                rebuild(axis, initial_trees, iteration)
            else:
                rebuild(axis, trees, iteration)

    if any(t is None for t in trees):
        # n_iter == 0 with the alternating schedules: the last axis gets its initial tree
        initial(ndim - 1)

    orders = [
        leaf_order(t, None if sp_axis else d, p["ordering"])
        for t, d, sp_axis in zip(trees, distances, sparse)
    ]
    with np.errstate(over="ignore"):  # EMD values beyond the float64 range: inf, as exact
        distances = [None if d is None else d / scale for d in distances]  # X's units, exact
    return QuestionnaireResult(trees, orders, affinities, distances, history, p)
