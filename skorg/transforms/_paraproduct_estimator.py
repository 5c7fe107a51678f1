"""scikit-learn transformer for the tensor paraproduct of a nonlinearity."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils import check_array
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ..trees import PartitionTree
from ._nonlinearities import NONLINEARITIES, Nonlinearity, get_nonlinearity
from ._paraproduct import _check_matrix, _decompose, _resize

__all__ = ["ParaproductDecomposer"]

_OUTPUTS = (
    "approximation",
    "paraproduct",
    "first_order",
    "second_order",
    "residual",
    "omitted",
    "values",
)

# Reasons for the sklearn common checks this transformer fails by design (used by the tests).
EXPECTED_FAILED_CHECKS = {
    "check_methods_subset_invariance": (
        "X is one logit matrix: every output row depends on the other rows through the "
        "row averages P_{j,j'}, so transforming a subset of rows is a different decomposition."
    ),
    "check_methods_sample_order_invariance": (
        "Dyadic blocks are runs of consecutive rows, so reordering rows changes the blocks "
        "and the decomposition (the row order is the organisation being analysed)."
    ),
}


class ParaproductDecomposer(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Tensor paraproduct of a nonlinearity (default: row-wise softmax) of logit matrices.

    ``X`` is one matrix of logits with rows = queries (2-D, the sklearn case:
    ``(n_samples, n_features)`` = ``(n_queries, n_keys)``) or a stack of heads
    ``(n_heads, n_queries, n_keys)``. Each matrix is decomposed with
    :func:`paraproduct_decomposition`; :meth:`transform` returns one chosen
    part of the decomposition with the input's shape, rows in input order.

    Parameters
    ----------
    nonlinearity : str, Nonlinearity or callable, default="softmax"
        See :func:`paraproduct_decomposition` (``softmax``, ``softmax_exp``,
        ``softmax_collapsed``, ``identity``, ``square``, ``exp``, ``tanh``,
        ``sigmoid``, or a user function).
    scales : {"all", "paper"} or array-like of int, default="all"
        The ``(j, j')`` pairs expanded.
    output : str, default="approximation"
        What :meth:`transform` returns: ``"approximation"`` (the omitted part
        plus the paraproduct, i.e. ``A(X)`` minus the residual),
        ``"paraproduct"``, ``"first_order"``, ``"second_order"``,
        ``"residual"``, ``"omitted"`` or ``"values"`` (``A(X)``).
    row_tree, column_tree : PartitionTree, optional
        Trees on the queries and keys (the non-dyadic version); ``row_tree``
        fixes the number of rows ``transform`` accepts.
    resize : {"tree", "pad", "error"}, default="tree"
        Handling of sides that are not powers of two without trees: balanced
        binary trees on any size (``"tree"``; powers of two take the dyadic
        path), edge padding (``"pad"``, output cropped back; the decomposition is
        then of the padded matrix) or an error.
    keep_terms : bool, default=False
        Keep every mixed term ``D_{j,j'}`` in ``results_``.

    Attributes
    ----------
    results_ : list of ParaproductResult
        One decomposition per matrix of the training ``X``.
    relative_error_ : ndarray of shape (n_matrices,)
        ``||residual|| / ||A(X)||`` per matrix.
    relative_omitted_ : ndarray of shape (n_matrices,)
        ``||omitted|| / ||A(X)||`` per matrix.
    n_features_in_ : int
        Number of columns (keys).
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Defined when ``X`` has string column names.

    See Also
    --------
    paraproduct_decomposition : The functional twin (one matrix, every term).
    softmax_invariance_check : The reviewers' test of the paper's Eq. 18.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.transforms import ParaproductDecomposer
    >>> X = np.add.outer(np.arange(8.0), np.arange(8.0)) / 8
    >>> dec = ParaproductDecomposer(output="values").fit(X)
    >>> bool(np.allclose(dec.transform(X).sum(axis=1), 1.0))
    True
    >>> dec.relative_error_.shape
    (1,)
    """

    _parameter_constraints: ClassVar[dict] = {
        "nonlinearity": [StrOptions(set(NONLINEARITIES)), Nonlinearity, callable],
        "scales": [StrOptions({"all", "paper"}), "array-like"],
        "output": [StrOptions(set(_OUTPUTS))],
        "row_tree": [PartitionTree, None],
        "column_tree": [PartitionTree, None],
        "resize": [StrOptions({"tree", "pad", "error"})],
        "keep_terms": ["boolean"],
    }

    def __init__(
        self,
        nonlinearity="softmax",
        *,
        scales="all",
        output="approximation",
        row_tree=None,
        column_tree=None,
        resize="tree",
        keep_terms=False,
    ):
        self.nonlinearity = nonlinearity
        self.scales = scales
        self.output = output
        self.row_tree = row_tree
        self.column_tree = column_tree
        self.resize = resize
        self.keep_terms = keep_terms

    def _validate(self, X, reset):
        # np.asarray, not np.ndim: array-likes may refuse __array_function__
        ndim = X.ndim if hasattr(X, "ndim") else np.asarray(X).ndim
        if ndim not in (2, 3):
            shape = X.shape if hasattr(X, "shape") else np.asarray(X).shape
            # (scikit-learn's checks look for "Reshape your data" on 1-D input)
            hint = " Reshape your data: X.reshape(1, -1) for one query." if ndim < 2 else ""
            raise ValueError(
                "X must be one logit matrix of shape (n_queries, n_keys) or a stack of them "
                f"of shape (n_heads, n_queries, n_keys); got a {ndim}-D array of shape "
                f"{shape}.{hint}"
            )
        if ndim == 3:
            X = check_array(X, allow_nd=True, dtype=np.float64, input_name="X")
            if reset:
                self.n_features_in_ = X.shape[-1]
                if hasattr(self, "feature_names_in_"):
                    del self.feature_names_in_
            elif X.shape[-1] != self.n_features_in_:
                raise ValueError(
                    f"X has {X.shape[-1]} features (keys), but {type(self).__name__} is "
                    f"expecting {self.n_features_in_} features as input."
                )
            return X
        return validate_data(self, X, reset=reset, dtype=np.float64)

    def _decompose_all(self, X):
        A = get_nonlinearity(self.nonlinearity)
        mats = [X] if X.ndim == 2 else list(X)
        results = []
        for m in mats:
            m = _check_matrix(m, "X")
            f, row_tree, column_tree = _resize(m, self.resize, self.row_tree, self.column_tree)
            results.append(
                _decompose(f, A, self.scales, row_tree, column_tree, self.keep_terms, m.shape)
            )
        return results

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Decompose the training matrix (or stack); store the results.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_keys) or (n_heads, n_queries, n_keys)
        y : None
            Ignored.

        Returns
        -------
        self : ParaproductDecomposer
        """
        X = self._validate(X, reset=True)
        self._set_results(self._decompose_all(X))
        return self

    def _set_results(self, results):
        self.results_ = results
        self.relative_error_ = np.array([r.relative_error for r in results])
        self.relative_omitted_ = np.array([r.relative_omitted for r in results])

    def _output(self, results, X):
        parts = []
        for r in results:
            part = getattr(r, self.output)
            parts.append(part[: r.original_shape[0], : r.original_shape[1]])
        return parts[0] if X.ndim == 2 else np.stack(parts)

    def transform(self, X):
        """Return the chosen part of the decomposition of each matrix.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_keys) or (n_heads, n_queries, n_keys)

        Returns
        -------
        Xt : ndarray of the shape of X
            ``output`` of the decomposition, rows in input order.
        """
        check_is_fitted(self)
        X = self._validate(X, reset=False)
        return self._output(self._decompose_all(X), X)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """Fit to ``X`` and return ``transform(X)`` without decomposing twice."""
        X = self._validate(X, reset=True)
        results = self._decompose_all(X)
        self._set_results(results)
        return self._output(results, X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
