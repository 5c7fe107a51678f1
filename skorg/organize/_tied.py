"""Tied axes of the questionnaire: one tree and one order for two axes that index the same
objects (the queries and keys of self-attention, the rows and columns of an affinity,
correlation or distance matrix).

Object ``i`` of a tied pair ``(a, b)`` is described by both of its slices, the one at ``i``
along ``a`` and the one at ``i`` along ``b``; every geometry of the pair is that of the union
of the two slices' features: the initial affinity and the Euclidean distances of the
concatenated slices, and a tree EMD that is the sum of the tree EMD along ``a`` and along
``b`` (the tree EMD is an l1 distance between weighted folder means, so the EMD of the union
of two feature sets is the sum of their EMDs), each with the shared tree on the other tied
axis and the trees of the remaining axes as usual.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
import scipy.sparse as sp

from ._steps import (
    _dropped_norm,
    _emd_feature_count,
    _emd_points,
    _emd_points_fit,
    _haar_along,
    _partial_transform,
    _unfold,
)

__all__: list[str] = []


def check_tie_axes(tie_axes, shape, sparse_axes_):
    """The tied pair as ``(a, b)`` with ``a < b`` (None when untied), checked."""
    if tie_axes is None:
        return None
    ndim = len(shape)
    items = tie_axes if isinstance(tie_axes, (list, tuple, np.ndarray)) else None
    if (
        items is None
        or len(items) != 2
        or any(isinstance(v, (bool, np.bool_)) or not isinstance(v, Integral) for v in items)
    ):
        raise ValueError(
            f"tie_axes must be None or a pair of two axis numbers such as (0, 1), got {tie_axes!r}."
        )
    a, b = (int(v) for v in items)
    if not (-ndim <= a < ndim and -ndim <= b < ndim):
        raise ValueError(f"tie_axes={tie_axes!r} names an axis outside the {ndim} axes of X.")
    a, b = sorted((a % ndim, b % ndim))
    if a == b:
        raise ValueError(f"tie_axes must name two different axes, got {tie_axes!r}.")
    if shape[a] != shape[b]:
        raise ValueError(
            f"tie_axes=({a}, {b}) needs two axes of equal length (they index the same "
            f"objects), got lengths {shape[a]} and {shape[b]}."
        )
    if sparse_axes_[a] or sparse_axes_[b]:
        raise ValueError(
            f"tie_axes=({a}, {b}) works on the dense path only; these axes take the "
            "k-nearest-neighbour path (chosen by affinity_mode='auto' or 'sparse'): use "
            "affinity_mode='dense'."
        )
    return a, b


def check_tied_params(pair, per_axis):
    """The per-axis settings of the two tied axes must agree (they describe one tree)."""
    a, b = pair
    for name, values in per_axis.items():
        va, vb = values[a], values[b]
        same = va is vb or (not callable(va) and not callable(vb) and va == vb)
        if not same:
            raise ValueError(
                f"{name} differs on the tied axes {a} and {b} ({va!r} and {vb!r}); the two "
                "axes share one tree, so give them the same value."
            )


def tied_slices(X, pair):
    """Every object's two slices side by side: ``[unfold(X, a), unfold(X, b)]``."""
    a, b = pair
    if sp.issparse(X):
        return sp.hstack([_unfold(X, a), _unfold(X, b)], format="csr")
    return np.hstack([_unfold(X, a), _unfold(X, b)])


def partner_trees(others, pair):
    """The trees of the EMD along the second tied axis: the shared tree moves from the
    second axis to the first, the other axes keep theirs."""
    a, b = pair
    swapped = list(others)
    swapped[a], swapped[b] = others[b], None
    return swapped


def tied_partial(X, trees, pair):
    """:func:`_partial_transform` with neither tied axis transformed (a candidate tree is
    then put on both)."""
    a, b = pair
    return _partial_transform(X, [None if k == b else t for k, t in enumerate(trees)], a)


def tied_compression_error(partial, tree, pair):
    """Relative l2 error of keeping the largest Haar coefficients with ``tree`` on both tied
    axes (see :func:`~._steps._compression_error_along`)."""
    from ._presets import SELECT_KEEP

    if partial is None:
        return 0.0
    Y, norm = partial
    coefs = np.abs(_haar_along(_haar_along(Y, tree, pair[0]), tree, pair[1])).ravel()
    k = max(1, round(SELECT_KEEP * coefs.size))
    return _dropped_norm(coefs, k) / norm


def tied_emd_points(Xe, steps, alphas, betas, n_jobs):
    """The tree-EMD features of one step, side by side for the tied axes (their l1 distances
    are the summed EMD), or None when they would not fit in the memory budget together (Ward
    then uses the distances); ``steps`` holds ``(axis, trees)`` per EMD of the step."""
    if len(steps) == 1:
        return _emd_points(Xe, steps[0][1], steps[0][0], alphas, betas, n_jobs)
    n_features = sum(_emd_feature_count(Xe.shape, trees, axis) for axis, trees in steps)
    if not _emd_points_fit(Xe.shape[steps[0][0]], n_features):
        return None
    parts = [_emd_points(Xe, trees, axis, alphas, betas, n_jobs) for axis, trees in steps]
    return None if any(q is None for q in parts) else np.hstack(parts)
