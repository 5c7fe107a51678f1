"""TreeWaveletPacketTransform: the best Haar-Walsh packet basis of the rows of X as an
sklearn transformer."""

from __future__ import annotations

from numbers import Real
from typing import ClassVar

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils import check_array
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted, validate_data

from .._labels import check_output_columns, frame_like
from .._validation import pow2_scale
from ..trees import PartitionTree
from ._haar_estimator import learn_column_tree
from ._packet_basis import DIRECTIONS
from ._packet_core import _apply, _rows, _search
from ._packet_plan import get_packet_plan

__all__ = ["TreeWaveletPacketTransform"]


class TreeWaveletPacketTransform(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Coefficients of every sample in the best Haar-Walsh packet basis of a column tree.

    ``fit`` learns (or takes) a tree on the columns, as :class:`TreeHaarTransform` does, and
    chooses the basis of its Haar-Walsh packet dictionary in which the training rows are
    sparsest (their costs summed: one basis for all rows). ``transform(X)`` returns, for
    each row of X (kept in input order), its coefficients in that basis, in the basis's
    order. The map is orthogonal, so ``inverse_transform`` recovers X and Euclidean
    distances between samples are kept.

    Parameters
    ----------
    tree : {"dyadic", "flexible"}, PartitionTree or estimator, default="dyadic"
        The tree on the columns, as in :class:`TreeHaarTransform`.
    cost : {"l1", "entropy"}, float or callable, default="l1"
        The additive cost the basis minimizes (see
        :func:`~skorg.transforms.best_wavelet_packet_basis`).
    direction : {"both", "coarse-to-fine", "fine-to-coarse", "time-frequency"}, \
default="both"
        Which bases the search considers (see
        :func:`~skorg.transforms.best_wavelet_packet_basis`); all but
        ``"coarse-to-fine"`` include the Haar basis, so the fitted cost is never above the
        Haar one.

    Attributes
    ----------
    tree_ : PartitionTree
        The tree on the columns.
    basis_ : WaveletPacketBasis
        The basis chosen on the training data (``basis_.cost``: their cost in it).
    organizer_ : estimator
        The fitted clone, when ``tree`` is an estimator.
    support_ : ndarray of shape (n_features,)
        The number of columns where each basis vector is non-zero, in output order.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Defined when X has string column names.

    See Also
    --------
    skorg.transforms.best_wavelet_packet_basis : The functional twin (the search).
    skorg.transforms.wavelet_packet_transform : The functional twin (the transform).
    TreeHaarTransform : The tree Haar basis, one member of the dictionary.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.transforms import TreeWaveletPacketTransform
    >>> X = np.array([[1.0, -1.0, 1.0, -1.0], [2.0, -2.0, 2.0, -2.0]])
    >>> est = TreeWaveletPacketTransform().fit(X)
    >>> est.transform(X).round(6)
    array([[ 0.,  0.,  0., -2.],
           [ 0.,  0.,  0., -4.]])
    >>> np.allclose(est.inverse_transform(est.transform(X)), X)
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        "tree": [StrOptions({"dyadic", "flexible"}), PartitionTree, HasMethods(["fit"])],
        "cost": [StrOptions({"l1", "entropy"}), Interval(Real, 0, 64, closed="right"), callable],
        "direction": [StrOptions(set(DIRECTIONS))],
    }

    def __init__(self, tree="dyadic", cost="l1", direction="both"):
        self.tree = tree
        self.cost = cost
        self.direction = direction

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None):
        """Set (or learn) the column tree and choose the basis on X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : TreeWaveletPacketTransform
        """
        X = validate_data(self, X, dtype=[np.float64, np.float32])
        self.tree_ = learn_column_tree(self, X)
        plan = get_packet_plan(self.tree_)
        self.basis_ = _search(_rows(X, plan, 1), plan, self.cost, self.direction)
        starts = np.stack([plan.region_start[j][plan.region_of[j]] for j in range(plan.n_levels)])
        ends = np.stack([plan.region_end[j][plan.region_of[j]] for j in range(plan.n_levels)])
        entry = (self.basis_.levels, self.basis_.positions)
        self.support_ = (ends[entry] - starts[entry]).astype(np.intp)
        self._n_features_out = X.shape[1]
        return self

    def _apply(self, X, inverse):
        plan = get_packet_plan(self.tree_)
        return _apply(X, plan, self.basis_, 1, pow2_scale(X), inverse=inverse)

    def transform(self, X):
        """Coefficients of every row of X in the fitted basis.

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
        return self._apply(X, inverse=False)

    def inverse_transform(self, X):
        """Rows of data from their coefficients in the fitted basis.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Coefficients as returned by ``transform``; a DataFrame must have the columns
            :meth:`get_feature_names_out` gives.

        Returns
        -------
        X_original : ndarray or DataFrame of shape (n_samples, n_features)
            A DataFrame of the input's kind, with the input feature names, when X is one.
        """
        check_is_fitted(self)
        check_output_columns(X, self.get_feature_names_out(), self)
        coefs = check_array(X, dtype=[np.float64, np.float32])
        if coefs.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {coefs.shape[1]} features, but TreeWaveletPacketTransform is "
                f"expecting {self.n_features_in_} features as input."
            )
        out = self._apply(coefs, inverse=True)
        return frame_like(out, X, _check_feature_names_in(self, None))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
