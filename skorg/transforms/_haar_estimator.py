"""TreeHaarTransform: the tree Haar transform of the rows of X as an sklearn transformer."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
    clone,
)
from sklearn.utils import check_array
from sklearn.utils._param_validation import HasMethods, StrOptions
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted, validate_data

from .._labels import check_output_columns, frame_like
from ..trees import PartitionTree, dyadic_tree
from ._haar import haar_support
from ._haar_dispatch import _along
from ._haar_plan import _get_plan

__all__ = ["TreeHaarTransform"]


class TreeHaarTransform(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Haar coefficients of every sample along a partition tree on the features.

    ``transform(X)`` returns, for each row of X (kept in input order), its coefficients in
    the orthonormal Haar basis of a tree on the columns, in the canonical order (psi_0,
    then the folders in BFS order, ``i`` within a folder). The map is orthogonal, so
    ``inverse_transform`` recovers X and Euclidean distances between samples are kept.

    Parameters
    ----------
    tree : {"dyadic", "flexible"}, PartitionTree or estimator, default="dyadic"
        The tree on the columns.

        - ``"dyadic"``: the balanced dyadic tree on the current column order (useful after
          a step that organizes the columns);
        - ``"flexible"``: the flexible tree of the cosine affinity between the columns,
          learned in ``fit``;
        - a fitted :class:`~skorg.trees.PartitionTree` on the ``n_features`` columns;
        - an estimator with ``fit`` that exposes ``column_tree_`` once fitted, such as
          :class:`~skorg.QuestionnaireOrganizer`: a clone is fitted on X in ``fit`` and its
          column tree is used.

    Attributes
    ----------
    tree_ : PartitionTree
        The tree on the columns used by ``transform``.
    organizer_ : estimator
        The fitted clone, when ``tree`` is an estimator.
    support_ : ndarray of shape (n_features,)
        Support size of every basis vector, in output order.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Defined when X has string column names.

    See Also
    --------
    skorg.transforms.haar_transform : The functional twin.
    skorg.transforms.l1_entropy : Sparsity of the coefficients.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.transforms import TreeHaarTransform
    >>> X = np.array([[1.0, 1.0, 3.0, 3.0], [2.0, 2.0, 2.0, 2.0]])
    >>> TreeHaarTransform().fit_transform(X).round(6)
    array([[4., 2., 0., 0.],
           [4., 0., 0., 0.]])

    With pandas output the coefficients are named and invert back to the input's names:

    >>> import pandas as pd
    >>> df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    >>> haar = TreeHaarTransform().set_output(transform="pandas").fit(df)
    >>> list(haar.transform(df).columns)
    ['treehaartransform0', 'treehaartransform1', 'treehaartransform2', 'treehaartransform3']
    >>> haar.inverse_transform(haar.transform(df)).round(6).equals(df)
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        "tree": [StrOptions({"dyadic", "flexible"}), PartitionTree, HasMethods(["fit"])],
    }

    def __init__(self, tree="dyadic"):
        self.tree = tree

    def _learn_tree(self, X):
        return learn_column_tree(self, X)

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None):
        """Set (or learn) the column tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : TreeHaarTransform
        """
        X = validate_data(self, X, dtype=[np.float64, np.float32])
        self.tree_ = self._learn_tree(X)
        self.support_ = haar_support(self.tree_)
        self._n_features_out = X.shape[1]
        return self

    def transform(self, X):
        """Haar coefficients of every row of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        C : ndarray of shape (n_samples, n_features)
            Same dtype as X (float32 or float64).
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        return _along(X, _get_plan(self.tree_), 1, inverse=False)

    def inverse_transform(self, X):
        """Rows of data from their Haar coefficients.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Coefficients as returned by ``transform``. A pandas or polars DataFrame
            (``set_output(transform="pandas")``) must have the columns
            :meth:`get_feature_names_out` gives.

        Returns
        -------
        X_original : ndarray or DataFrame of shape (n_samples, n_features)
            A DataFrame of the input's kind, with the input feature names
            (``feature_names_in_``, else ``x0, x1, ...``) and X's index, when X is one.
        """
        check_is_fitted(self)
        check_output_columns(X, self.get_feature_names_out(), self)
        coefs = check_array(X, dtype=[np.float64, np.float32])
        if coefs.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {coefs.shape[1]} features, but TreeHaarTransform is expecting "
                f"{self.n_features_in_} features as input."
            )
        out = _along(coefs, _get_plan(self.tree_), 1, inverse=True)
        return frame_like(out, X, _check_feature_names_in(self, None))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


def learn_column_tree(estimator, X):
    """The column tree of ``estimator.tree`` for X (see :class:`TreeHaarTransform`); an
    estimator passed as the tree is cloned, fitted and kept as ``estimator.organizer_``."""
    tree = estimator.tree
    if isinstance(tree, PartitionTree):
        if tree.n_points != X.shape[1]:
            raise ValueError(
                f"tree has {tree.n_points} points but X has {X.shape[1]} features; pass a "
                "tree on the columns of X."
            )
        return tree
    if isinstance(tree, str):
        if tree == "dyadic" or X.shape[1] < 3:
            return dyadic_tree(X.shape[1])
        from ..metrics import cosine_affinity
        from ..trees import flexible_tree

        return flexible_tree(cosine_affinity(X.T))
    estimator.organizer_ = clone(tree).fit(X)
    learned = getattr(estimator.organizer_, "column_tree_", None)
    if not isinstance(learned, PartitionTree) or learned.n_points != X.shape[1]:
        raise ValueError(
            f"The estimator passed as tree ({type(tree).__name__}) must expose a "
            f"PartitionTree on the {X.shape[1]} columns as column_tree_ after fit."
        )
    return learned
