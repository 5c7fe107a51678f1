"""QuestionnaireOrganizer: the scikit-learn estimator around :func:`questionnaire`."""

from __future__ import annotations

from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_array, metadata_routing
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils._set_output import _get_output_config
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted, validate_data

from .._labels import axis_labels, check_output_columns, container_kind, data_of, reorder_like
from ._dask_blocks import block_score_ratios, check_blocks, lazy_reorder
from ._dask_input import is_block_input, load_blocks
from ._preprocess import PREPROCESS
from ._presets import (
    EARLY_STOPPING,
    EMD_DTYPES,
    ORGANIZER_TREE_METHODS,
    PRESETS,
    QUESTIONNAIRE_ORDERINGS,
    SCHEDULES,
)
from ._questionnaire import questionnaire

__all__ = ["QuestionnaireOrganizer"]


def _take_axes(X, orders, axes):
    for axis in axes:
        X = np.take(X, orders[axis], axis=axis)
    return X


def _inverse(order):
    inv = np.empty_like(order)
    inv[order] = np.arange(order.shape[0], dtype=order.dtype)
    return inv


class QuestionnaireOrganizer(TransformerMixin, BaseEstimator):
    """Learn a partition tree and an organized order on every axis of X.

    The questionnaire alternates between the axes: a tree on the rows gives
    a tree earth mover's distance between the columns, whose dual affinity
    gives a tree on the columns, which gives a distance between the rows, and
    so on (for tensors, every axis in turn from the trees of all others).
    The data becomes smooth on the learned trees, which the Haar wavelets of
    :mod:`skorg.transforms` measure.

    Parameters left at None take the value of ``preset``, else the default
    given below.

    Parameters
    ----------
    preset : {"paper_3d_heads", "paper_2d_holder"}, default=None
        The settings of Fasina et al. (2025): ``paper_3d_heads`` (cosine
        initial affinity, flexible trees with c = 1, alpha = 0, beta = 1,
        3 iterations) for query x key x head tensors; ``paper_2d_holder``
        (alpha = 1, beta = 0, 10 iterations, leaf orders of the trees) for a
        matrix organized before the paraproduct.
    n_iter : int, default=3
        Sweeps over the axes.
    init_affinity : {"cosine", "correlation", "gaussian"} or callable, default="cosine"
        Affinity of the initial trees.
    init_affinity_params : dict, default=None
        Extra arguments of the initial affinity.
    emd_alpha : float or list of float, default=0.0
        Level weight exponent of each axis's tree in the tree EMD
        (``alpha > 0`` emphasizes coarse folders).
    emd_beta : float or list of float, default=1.0
        Size weight exponent (``beta > 0`` emphasizes large folders).
    epsilon : float or list of float, default=1.0
        Dual affinity scale ``exp(-d / (epsilon * median d))``.
    tree_constant : float or list of float, default=1.0
        Flexible-tree constant (larger joins less).
    schedule : {"alternating", "jacobi", "reference_3d"}, default="alternating"
        Order of the updates; the last two reproduce the original code (see
        :func:`~skorg.organize.questionnaire`).
    ordering : {"smoothest", "shortest", "emd_olo", "tree", "tree_olo"}, default="smoothest"
        How each axis's organized order is derived: ``"smoothest"``, of four
        optimal leaf orderings (of the learned distances and of the slices'
        Euclidean, cosine and correlation distances) the one along which the
        slices are smoothest to second order (average linkage's where clearly
        smoother), polished by short reversals;
        ``"shortest"``, the shorter path through the slices of the first two;
        ``"emd_olo"``, the first of them; ``"tree"``, the tree's leaf order;
        ``"tree_olo"``, that order with children rearranged. Only the last
        two follow the tree's folders; see
        :func:`~skorg.organize.questionnaire`.
    random_state : int, RandomState instance or None, default=None
        Seed of the sparse path (None: 0); the dense algorithm draws no random
        numbers, so its results do not depend on it.
    n_jobs : int, default=None
        Threads for the distance kernels (None: numba's default).
    affinity_mode : {"auto", "dense", "sparse"}, default="auto"
        Dense (m, m) affinities, or k-nearest-neighbour affinities and sparse
        flexible trees (``"auto"``: per axis, from the predicted time and memory of the two
        paths, for axes of at least 4,096 points); see
        :func:`~skorg.organize.questionnaire`.
    n_neighbors : int, default=15
        Neighbours per point on the sparse path.
    emd_dtype : {"auto", "float64", "float32"}, default="auto"
        Precision of the tree-EMD features and sums; ``"float32"`` is faster
        (twice the SIMD width) with distances accurate to about 1e-6 relative.
        ``"auto"``: float32 for the large steps only (tensors from about
        256 x 256 x 128), float64 for the others; see
        :func:`~skorg.organize.questionnaire`.
    tree_method : str, callable or list of those, default="select"
        The tree builder of each axis (one for all, or one per axis):
        ``"flexible"``, ``"average"``, ``"complete"``, ``"single"``,
        ``"weighted"``, ``"ward"``, ``"ward_slices"``, ``"hybrid"``,
        ``"bisection"``, ``"select"`` or a callable
        ``f(distances=..., affinity=...) -> PartitionTree``; see
        :func:`~skorg.organize.questionnaire`, :func:`~skorg.trees.build_tree`
        and the user guide, "choosing a tree builder". The default,
        ``"select"``, keeps per axis and step Ward's tree of the slices
        unless average linkage of the tree EMD compresses X better by more
        than ``tree_params["select_margin"]`` (default 0.02, relative; the
        error after keeping the largest 5% of the Haar coefficients on all
        trees; 0: the lower error wins); it was chosen there. The presets
        pin ``"flexible"``.
    tree_params : dict, default=None
        Extra arguments of the tree builders (e.g. ``merge_tolerance``), and
        ``select_margin``.
    early_stopping : {"unchanged", "objective", "never"}, default="unchanged"
        Stop before ``n_iter`` sweeps when a sweep changed no tree (the result
        is the same as running on), or also when it did not lower the
        normalized Haar l1 norm of X on the trees by ``tol`` (relative; the
        best sweep's trees are kept); see :func:`~skorg.organize.questionnaire`.
    tol : float, default=1e-4
        Relative improvement that counts with ``early_stopping="objective"``.
    tie_axes : pair of int, default=None
        Two axes of equal length that index the same objects (``(0, 1)``: the rows and
        columns of an affinity, correlation or distance matrix, the queries and keys of a
        query x key x head tensor) get one tree and one order, learned from both axes'
        slices; see :func:`~skorg.organize.questionnaire` (Notes) and the user guide, "Tied
        axes". ``organize`` then applies one permutation to both.
    preprocess : {"auto", "log1p", "log1p_normalized", "binary", "tfidf"} or None, \
default="auto"
        A transform of X before it is organized (``transform`` still returns X's own
        values): None, X as given; ``"log1p"``; ``"log1p_normalized"`` (every row and
        column brought to the median total, then ``log1p``); ``"binary"`` (presence);
        ``"tfidf"`` (rows as documents); ``"auto"``, ``"log1p_normalized"`` for raw counts
        and None for any other data (and with a ``preset``); see
        :func:`~skorg.organize.questionnaire`.

    Attributes
    ----------
    trees_ : list of PartitionTree
        The final tree of every axis.
    orders_ : list of ndarray
        The organized order of every axis.
    row_tree_, column_tree_ : PartitionTree
        ``trees_[0]`` and ``trees_[1]``.
    row_order_, column_order_ : ndarray
        ``orders_[0]`` and ``orders_[1]``.
    affinities_ : list of ndarray
        The affinity behind each final tree.
    distances_ : list of ndarray or None
        The tree EMD behind each final affinity.
    history_ : list of dict
        Every tree built, in order (``iteration``, ``axis``, ``tree``,
        ``changed``, ``objective``, ``method``: the builder, or the candidate
        ``"select"`` kept).
    n_iter_ : int
        Sweeps run.
    stop_reason_ : {"n_iter", "unchanged", "objective"}
        Why the iteration ended.
    params_ : dict
        The resolved parameters.
    shape_ : tuple
        Shape of the training data.
    axis_names_ : list of ndarray
        The labels of every axis in the organized order: the index and columns of a pandas
        DataFrame, the column names of a polars DataFrame, the coordinates of an xarray
        DataArray; the positions (``orders_[a]``) for an axis without labels.
    row_names_, column_names_ : ndarray
        ``axis_names_[0]`` and ``axis_names_[1]``.
    n_features_in_ : int
        ``shape_[1]``.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Defined when X has string column names.

    See Also
    --------
    skorg.organize.questionnaire : the functional twin.
    skorg.transforms.TreeHaarTransform : Haar coefficients on a learned tree.

    Notes
    -----
    ``transform`` keeps the rows in input order and reorders every other axis
    (columns of a matrix), so the estimator composes in a Pipeline; its output
    features are the input features in the learned column order
    (``get_feature_names_out``), and ``set_output(transform="pandas")`` (or
    ``"polars"``) labels them so. ``inverse_transform`` puts the columns back.
    ``organize`` reorders every axis, rows included, and returns the input's
    kind: a DataFrame with reordered index and columns, a DataArray with
    reordered coordinates. A SciPy sparse matrix (CSR or CSC) is organized
    without a dense copy (see :func:`~skorg.organize.questionnaire` for the
    memory it needs). ``score`` is minus the
    mean normalized l1 norm of the Haar coefficients of each row on the
    column tree(s): higher means smoother on the learned geometry, and it
    works on held-out rows, so ``GridSearchCV`` can tune the EMD weights and
    epsilon without labels.

    References
    ----------
    R. R. Coifman and M. Gavish, "Harmonic analysis of digital data bases",
    2011. W. Ankenman, PhD thesis, Yale, 2014. O. Fasina et al., "Intrinsic
    and extrinsic organized attention", arXiv:2506.15541, 2025.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg import QuestionnaireOrganizer
    >>> x = np.linspace(0, 1, 20)
    >>> X = np.exp(-8 * np.subtract.outer(x, x) ** 2)[::-1][:, np.r_[10:20, 0:10]]
    >>> org = QuestionnaireOrganizer(n_iter=1).fit(X)
    >>> org.transform(X).shape
    (20, 20)
    >>> sorted(org.column_order_) == list(range(20))
    True
    >>> bool((org.inverse_transform(org.transform(X)) == X).all())
    True

    Labelled data keeps its labels:

    >>> import pandas as pd
    >>> df = pd.DataFrame(X, index=[f"r{i}" for i in range(20)],
    ...                   columns=[f"c{j}" for j in range(20)])
    >>> org = QuestionnaireOrganizer(n_iter=1).fit(df)
    >>> organized = org.organize(df)
    >>> list(organized.columns) == list(org.column_names_) == list(org.get_feature_names_out())
    True
    >>> bool(organized.loc["r3", "c7"] == df.loc["r3", "c7"])
    True
    """

    # score's basis is an option of the call, not metadata to route (no set_score_request)
    __metadata_request__score: ClassVar[dict] = {"basis": metadata_routing.UNUSED}

    _parameter_constraints: dict = {
        "preset": [StrOptions(set(PRESETS)), None],
        "n_iter": [Interval(Integral, 0, None, closed="left"), None],
        "init_affinity": [StrOptions({"cosine", "correlation", "gaussian"}), callable, None],
        "init_affinity_params": [dict, None],
        "emd_alpha": [Real, "array-like", None],
        "emd_beta": [Real, "array-like", None],
        "epsilon": [Interval(Real, 0, None, closed="neither"), "array-like", None],
        "tree_constant": [Interval(Real, 0, None, closed="neither"), "array-like", None],
        "schedule": [StrOptions(set(SCHEDULES)), None],
        "ordering": [StrOptions(set(QUESTIONNAIRE_ORDERINGS)), None],
        "random_state": ["random_state"],
        "n_jobs": [Integral, None],
        "affinity_mode": [StrOptions({"auto", "dense", "sparse"})],
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "emd_dtype": [StrOptions(set(EMD_DTYPES))],
        "tree_method": [StrOptions(set(ORGANIZER_TREE_METHODS)), callable, list, tuple, None],
        "tree_params": [dict, None],
        "early_stopping": [StrOptions(set(EARLY_STOPPING))],
        "tol": [Interval(Real, 0, 1, closed="left")],
        "tie_axes": [tuple, list, None],
        "preprocess": [StrOptions(set(PREPROCESS)), None],
    }

    def __init__(
        self,
        preset=None,
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
        random_state=None,
        n_jobs=None,
        affinity_mode="auto",
        n_neighbors=15,
        emd_dtype="auto",
        tree_method=None,
        tree_params=None,
        early_stopping="unchanged",
        tol=1e-4,
        tie_axes=None,
        preprocess="auto",
    ):
        self.preset = preset
        self.n_iter = n_iter
        self.init_affinity = init_affinity
        self.init_affinity_params = init_affinity_params
        self.emd_alpha = emd_alpha
        self.emd_beta = emd_beta
        self.epsilon = epsilon
        self.tree_constant = tree_constant
        self.schedule = schedule
        self.ordering = ordering
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.affinity_mode = affinity_mode
        self.n_neighbors = n_neighbors
        self.emd_dtype = emd_dtype
        self.tree_method = tree_method
        self.tree_params = tree_params
        self.early_stopping = early_stopping
        self.tol = tol
        self.tie_axes = tie_axes
        self.preprocess = preprocess

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def fit(self, X, y=None):
        """Learn the trees and orders of every axis.

        Parameters
        ----------
        X : array-like, sparse matrix or AnnData of shape (n_rows, n_columns) or (n_0, ..., n_d)
            Finite values, at least 2 entries on every axis. A pandas or polars DataFrame
            or an xarray DataArray gives its labels to ``axis_names_``; an AnnData gives
            ``X`` (sparse or dense) with its ``obs_names`` and ``var_names`` (see
            :func:`skorg.io.from_anndata` for a layer). Multiplying X by any positive
            factor (1e-150 to 1e150 are tested) gives the same trees and orders. A Dask
            array (dense or sparse blocks), an AnnData whose X is one, or a backed AnnData
            is read a block per task (on the ``dask.distributed`` cluster when a Client is
            active), its memory checked first; the fit equals that of the in-memory matrix
            (user guide, "Data in blocks").
        y : None
            Ignored.

        Returns
        -------
        self : QuestionnaireOrganizer
        """
        self._validate_params()
        labels = axis_labels(X)
        data = data_of(X)
        if is_block_input(data):  # Dask or backed AnnData: read by tasks, memory checked first
            data = load_blocks(data, dtype=None)
        X = validate_data(
            self,
            data,
            dtype=[np.float64, np.float32],
            accept_sparse=["csr", "csc"],
            allow_nd=True,
            ensure_min_samples=2,
            ensure_min_features=2,
        )
        for axis, length in enumerate(X.shape[2:], start=2):
            if length < 2:
                raise ValueError(f"Axis {axis} of X has length {length}; at least 2 are needed.")
        result = questionnaire(
            X.astype(np.float64, copy=False),
            n_iter=self.n_iter,
            init_affinity=self.init_affinity,
            init_affinity_params=self.init_affinity_params,
            emd_alpha=self.emd_alpha,
            emd_beta=self.emd_beta,
            epsilon=self.epsilon,
            tree_constant=self.tree_constant,
            schedule=self.schedule,
            ordering=self.ordering,
            preset=self.preset,
            n_jobs=self.n_jobs,
            affinity_mode=self.affinity_mode,
            n_neighbors=self.n_neighbors,
            random_state=self.random_state,
            emd_dtype=self.emd_dtype,
            tree_method=list(self.tree_method)
            if isinstance(self.tree_method, (list, tuple))
            else self.tree_method,
            tree_params=self.tree_params,
            early_stopping=self.early_stopping,
            tol=self.tol,
            tie_axes=self.tie_axes,
            preprocess=self.preprocess,
            check_input=False,
        )
        self.trees_ = result.trees
        self.orders_ = result.orders
        self.affinities_ = result.affinities
        self.distances_ = result.distances
        self.history_ = result.history
        self.params_ = result.params
        self.n_iter_ = result.n_iter
        self.stop_reason_ = result.stop_reason
        self.shape_ = X.shape
        self.row_tree_, self.column_tree_ = self.trees_[0], self.trees_[1]
        self.row_order_, self.column_order_ = self.orders_[0], self.orders_[1]
        if labels is None:
            labels = [None] * X.ndim
        self._labels = labels
        self.axis_names_ = [
            order.copy() if names is None else names[order]
            for names, order in zip(labels, self.orders_)
        ]
        self.row_names_, self.column_names_ = self.axis_names_[0], self.axis_names_[1]
        return self

    def _check_new(self, X, *, same_rows):
        check_is_fitted(self)
        data = data_of(X)
        if is_block_input(data):
            data = load_blocks(data, dtype=None)
        X = validate_data(
            self,
            data,
            dtype=[np.float64, np.float32],
            accept_sparse=["csr", "csc"],
            allow_nd=True,
            reset=False,
        )
        expected = self.shape_ if same_rows else self.shape_[1:]
        got = X.shape if same_rows else X.shape[1:]
        if got != expected:
            what = "shape" if same_rows else "shape after the first axis"
            raise ValueError(
                f"X has {what} {got}, but this QuestionnaireOrganizer was fitted on {expected}."
            )
        return X

    def transform(self, X):
        """Reorder every axis but the first (columns of a matrix); rows keep their order.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_columns, ...)

        Returns
        -------
        X_new : ndarray or sparse matrix of the same shape
            Columns named by :meth:`get_feature_names_out` (a DataFrame under
            ``set_output(transform="pandas")``).
        """
        if is_block_input(data_of(X)):  # a lazy Dask array, columns reordered (none read)
            Xd = check_blocks(self, data_of(X), same_rows=False)
            return lazy_reorder(Xd, self.orders_, range(1, Xd.ndim))
        X = self._check_new(X, same_rows=False)
        if X.ndim > 2 and _get_output_config("transform", self)["dense"] != "default":
            raise ValueError(
                "set_output(transform='pandas' or 'polars') needs 2-D data, but X has shape "
                f"{X.shape}; use the default output (ndarray) for tensors, or organize(X) "
                "on an xarray DataArray to keep labels."
            )
        if sp.issparse(X):
            return X[:, self.orders_[1]]
        return _take_axes(X, self.orders_, range(1, X.ndim))

    def inverse_transform(self, X):
        """Undo :meth:`transform`: every axis but the first back in its input order.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_columns, ...)
            Data whose columns are in the learned order (the output of
            ``transform``). A pandas or polars DataFrame must have the columns
            :meth:`get_feature_names_out` gives, and comes back as a DataFrame of
            the same kind with the columns in input order (index kept).

        Returns
        -------
        X_original : ndarray, sparse matrix or DataFrame of the same shape
        """
        check_is_fitted(self)
        if is_block_input(X):  # a lazy Dask array, columns back in input order
            Xd = check_blocks(self, X, same_rows=False)
            return lazy_reorder(Xd, [None, *map(_inverse, self.orders_[1:])], range(1, Xd.ndim))
        if getattr(self, "feature_names_in_", None) is not None:
            check_output_columns(X, self.get_feature_names_out(), self)
        arr = check_array(
            X,
            dtype=[np.float64, np.float32],
            accept_sparse=["csr", "csc"],
            allow_nd=True,
            ensure_min_samples=1,
        )
        if arr.shape[1:] != tuple(self.shape_[1:]):
            raise ValueError(
                f"X has shape after the first axis {arr.shape[1:]}, but this "
                f"QuestionnaireOrganizer was fitted on {tuple(self.shape_[1:])}."
            )
        inverse = [None] + [_inverse(order) for order in self.orders_[1:]]
        if sp.issparse(arr):
            return arr[:, inverse[1]]
        return reorder_like(_take_axes(arr, inverse, range(1, arr.ndim)), X, inverse)

    def get_feature_names_out(self, input_features=None):
        """Names of the output features: the input features in the learned column order.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            The input feature names; None takes ``feature_names_in_`` if defined,
            else ``["x0", "x1", ...]``.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self)
        names = _check_feature_names_in(self, input_features)
        return np.asarray(names, dtype=object)[self.column_order_]

    def organize(self, X):
        """Reorder every axis, rows included: the organized matrix or tensor.

        Parameters
        ----------
        X : array-like, sparse matrix, DataFrame, DataArray or AnnData of the training shape

        Returns
        -------
        X_organized : the kind of X
            An ndarray or sparse matrix; a pandas DataFrame with its index and
            columns reordered; a polars DataFrame with its rows and columns
            reordered; an xarray DataArray with its coordinates reordered.
        """
        if container_kind(X) != "anndata" and is_block_input(X):  # lazy, every axis
            return lazy_reorder(check_blocks(self, X, same_rows=True), self.orders_, range(X.ndim))
        arr = self._check_new(X, same_rows=True)
        if container_kind(X) == "anndata":
            return reorder_like(None, X, self.orders_)
        if sp.issparse(arr):
            return arr[self.orders_[0]][:, self.orders_[1]]
        return reorder_like(_take_axes(arr, self.orders_, range(arr.ndim)), X, self.orders_)

    def score(self, X, y=None, *, basis=None):
        """Organization quality of the rows of X on the learned trees (higher is better).

        Minus the mean over rows of ``||H x||_1 / (sqrt(m) ||x||_2)``, with H
        the Haar transform on the trees of axes 1.. (m entries per row); rows
        of zeros are skipped. Values lie in [-1, 0) and do not change when a row
        is multiplied by a positive factor (rows near 1e300 included).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_columns, ...)
        y : None
            Ignored.
        basis : None, "best", str, WaveletPacketBasis or sequence, default=None
            The basis of H on the trees of axes 1..: None, the tree Haar basis; ``"best"``,
            the best Haar-Walsh packet basis of the rows of X on every such axis (dense X;
            see :func:`~skorg.transforms.multi_best_wavelet_packet_basis`); a basis name or
            a :class:`~skorg.transforms.WaveletPacketBasis` for every axis, or one per axis
            of X (the first, the rows, None). The score can only rise from the Haar one
            with ``"best"``, which includes the Haar basis.

        Returns
        -------
        score : float
        """
        if is_block_input(data_of(X)) and (basis is None or not isinstance(basis, str)
                                           or basis != "best"):  # fmt: skip
            # each row's ratio on the cluster, a block of rows per task (none gathered)
            Xd = check_blocks(self, data_of(X), same_rows=False)
            ratios = block_score_ratios(Xd, self.trees_, _score_bases(Xd, self.trees_, basis))
            return 0.0 if ratios.size == 0 else float(-ratios.mean())
        X = self._check_new(X, same_rows=False).astype(np.float64, copy=False)
        bases = _score_bases(X, self.trees_, basis)
        if not sp.issparse(X):
            ratios = _row_ratios(X, self.trees_, bases)
        else:
            # rows densified a block at a time: one block of float64 stays within
            # sklearn's working_memory
            from sklearn import get_config

            budget = int(get_config()["working_memory"] * 2**20)
            step = max(1, budget // (16 * X.shape[1]))
            X = X.tocsr()
            ratios = np.concatenate(
                [
                    _row_ratios(X[lo : lo + step].toarray(), self.trees_, bases)
                    for lo in range(0, X.shape[0], step)
                ]
            )
        if ratios.size == 0:
            return 0.0
        return float(-ratios.mean())


def _score_bases(X, trees, basis):
    """The wavelet packet bases of :meth:`QuestionnaireOrganizer.score` (None: Haar)."""
    if basis is None:
        return None
    from ..transforms import multi_best_wavelet_packet_basis

    axes = [None, *trees[1:]]
    if isinstance(basis, str) and basis == "best":
        if sp.issparse(X):
            raise ValueError(
                "basis='best' needs dense X (the search reads every row); pass the bases of "
                "multi_best_wavelet_packet_basis on a dense sample instead."
            )
        from .._validation import scale_rows

        # the search minimizes the sum of the rows' l1 norms; on rows of unit norm that is
        # the sum of the ratios the score averages, so the score cannot fall below Haar's
        flat = scale_rows(X.reshape(X.shape[0], -1))
        norms = np.sqrt(np.einsum("ij,ij->i", flat, flat))
        unit = flat / np.where(norms > 0, norms, 1.0)[:, None]
        return multi_best_wavelet_packet_basis(unit.reshape(X.shape), axes)
    if not isinstance(basis, (list, tuple)):
        basis = [None, *([basis] * (len(axes) - 1))]
    return list(basis)


def _row_ratios(X, trees, bases=None):
    """``||H x||_1 / (sqrt(m) ||x||_2)`` of every nonzero row of a dense X."""
    from .._validation import scale_rows
    from ..transforms import multi_haar_transform, multi_wavelet_packet_transform

    # each row's ratio does not change when the row is scaled: extreme rows are scaled
    # (exactly) so that the squares of the norms cannot overflow or underflow
    shape = X.shape
    X = scale_rows(X.reshape(shape[0], -1)).reshape(shape)
    if bases is None:
        coefs = multi_haar_transform(X, [None, *trees[1:]])
    else:
        coefs = multi_wavelet_packet_transform(X, [None, *trees[1:]], bases)
    flat = coefs.reshape(X.shape[0], -1)
    rows = X.reshape(X.shape[0], -1)
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    keep = norms > 0
    return np.abs(flat[keep]).sum(axis=1) / (norms[keep] * np.sqrt(flat.shape[1]))
