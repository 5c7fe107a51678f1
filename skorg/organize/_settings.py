"""The questionnaire's first step: the data and every setting, checked and resolved per axis."""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real

import scipy.sparse as sp

from .._labels import axis_labels, data_of
from .._sparse_input import canonical_sparse, check_sparse_matrix
from .._validation import check_finite_array
from ._dask_blocks import active_client, block_emd_feature_blocks
from ._dask_input import is_block_input, load_blocks
from ._preprocess import preprocess_data
from ._presets import (
    _INIT_AFFINITIES,
    EARLY_STOPPING,
    EMD_DTYPES,
    PRESETS,
    QUESTIONNAIRE_ORDERINGS,
    SCHEDULES,
    SELECT_MARGIN,
)
from ._sparse import sparse_axes
from ._steps import _per_axis, _select_margin, _tree_methods
from ._tied import check_tie_axes, check_tied_params

__all__: list[str] = []


@dataclass
class Settings:
    """Everything a fit reads besides the data, one entry per axis where it varies.

    ``params`` is the dictionary the result reports (``QuestionnaireResult.params``);
    the other fields are the checked, per-axis forms the steps use.
    """

    params: dict
    ndim: int
    methods: list  # tree builder per axis ("select", a builder name or a callable)
    alphas: list
    betas: list
    epsilons: list
    constants: list  # flexible-tree constants
    init_params: dict
    sparse: list  # per axis: whether it takes the k-nearest-neighbour path
    tie: tuple | None  # the tied pair (a, b), a < b
    builder_params: dict  # tree_params without the selection's own keys
    select_margin: float
    emd_dtype: str
    early_stopping: str
    tol: float
    n_neighbors: int
    random_state: object
    n_jobs: int | None
    # the rows' tree-EMD features of the k-NN path, a block of rows per task on an active
    # dask.distributed cluster (data given in blocks); None: in this process
    embed: object = None

    @property
    def n_iter(self):
        return self.params["n_iter"]

    @property
    def schedule(self):
        return self.params["schedule"]

    def is_tied(self, axis):
        """Whether ``axis`` is one of the tied pair."""
        return self.tie is not None and axis in self.tie

    def builds_shared_tree(self, axis):
        """Whether ``axis`` is the first of the tied pair, which builds the shared tree."""
        return self.tie is not None and axis == self.tie[0]

    def follows_shared_tree(self, axis):
        """Whether ``axis`` is the second of the tied pair (it takes the first's tree)."""
        return self.tie is not None and axis == self.tie[1]


def check_data(X, check_input):
    """The labels of X (or None), its values (finite, at least 2-D, sparse canonical) and
    the k-NN path's row-feature step. A Dask array or a backed AnnData is gathered a block
    per task, its in-memory size checked against the memory budget first; with a
    dask.distributed Client active, the rows' tree-EMD features are computed there a block
    of rows per task (None: in this process)."""
    labels = axis_labels(X)
    X = data_of(X)
    embed = None
    if is_block_input(X):
        X = load_blocks(X)
        embed = block_emd_feature_blocks if active_client() is not None else None
    if sp.issparse(X):
        X = check_sparse_matrix(X, "X", min_rows=2) if check_input else canonical_sparse(X)
    elif check_input:
        X = check_finite_array(X, "X", min_ndim=2, min_rows=2)
    return labels, X, embed


def resolve_settings(
    X,
    p,
    *,
    preset,
    tree_method,
    init_affinity_params,
    preprocess,
    emd_dtype,
    early_stopping,
    tol,
    tie_axes,
    affinity_mode,
    n_neighbors,
    tree_params,
    random_state,
    n_jobs,
):
    """The data as the iteration sees it (preprocessed, densified for the kNN path) and its
    :class:`Settings`; ``p`` holds the parameters resolved over the preset and the defaults
    (:func:`~._presets.resolve_params`), ``tree_method`` the one given (None: unset)."""
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
    settings = Settings(
        params=p,
        ndim=ndim,
        methods=methods,
        alphas=alphas,
        betas=betas,
        epsilons=epsilons,
        constants=constants,
        init_params=init_params,
        sparse=sparse,
        tie=tie,
        builder_params=builder_params,
        select_margin=select_margin,
        emd_dtype=emd_dtype,
        early_stopping=early_stopping,
        tol=tol,
        n_neighbors=n_neighbors,
        random_state=random_state,
        n_jobs=n_jobs,
    )
    return X, settings
