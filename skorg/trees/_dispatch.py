"""One entry point to every tree builder, by name or callable (the questionnaire's
``tree_method``)."""

from __future__ import annotations

import inspect

import numpy as np
import scipy.sparse as sp

from ._bisection import bisection_tree
from ._hierarchical import LINKAGE_METHODS, TREE_METHODS, hierarchical_tree
from ._hybrid import hybrid_tree
from ._partition_tree import PartitionTree

__all__ = ["build_tree"]

# what build_tree passes itself, so not among a builder's extra parameters
_OWN = {"distances", "affinity", "method", "tree_constant"}


def _n_points(geometry):
    """The number of points of a distance matrix or affinity given as any array-like."""
    if not hasattr(geometry, "shape"):  # a list of lists and the like
        geometry = np.asarray(geometry)
    shape = geometry.shape
    if len(shape) != 2:
        raise ValueError(
            f"distances and affinity must be (n_points, n_points) matrices, got shape {shape}."
        )
    return int(shape[0])


def _builder(method, sparse_affinity):
    from ._flexible import flexible_tree
    from ._sparse_flexible import sparse_flexible_tree

    if method == "flexible":
        return sparse_flexible_tree if sparse_affinity else flexible_tree
    if method in LINKAGE_METHODS:
        return hierarchical_tree
    return {"hybrid": hybrid_tree, "bisection": bisection_tree}.get(method)


def _check_params(method, params, sparse_affinity):
    """A clear error for keyword arguments the builder of ``method`` does not take (instead of
    its TypeError), naming them and those it takes."""
    builder = _builder(method, sparse_affinity)
    if builder is None or not params:
        return  # an unknown method: the error below names the methods
    accepted = sorted(
        name
        for name, p in inspect.signature(builder).parameters.items()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and name not in _OWN
    )
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"tree method {method!r} ({builder.__name__}) does not take the parameter(s) "
            f"{unknown} (given as build_tree's keyword arguments, or the questionnaire's "
            f"tree_params); it takes {accepted}."
        )


def build_tree(method, *, distances=None, affinity=None, tree_constant=1.0, **params):
    """A tree of one axis by a named builder or a callable: the questionnaire's ``tree_method``.

    Parameters
    ----------
    method : {"flexible", "average", "complete", "single", "weighted", "ward", "bisection"} \
or callable
        ``"flexible"`` is :func:`flexible_tree` (the paper's; it needs ``affinity``), the
        linkage names are :func:`hierarchical_tree`, ``"bisection"`` is
        :func:`bisection_tree`. A callable is called as
        ``method(distances=distances, affinity=affinity)`` and must return a
        :class:`PartitionTree` on the axis's points.
    distances, affinity : array-like, optional
        The axis's geometry (arrays, nested lists, or a sparse affinity); the linkage
        builders use ``distances`` when given, else ``affinity``.
    tree_constant : float, default=1.0
        The flexible tree's constant.
    **params
        Passed to the builder (for example ``merge_tolerance``, or ``points`` for the
        linkage builders, which then link the points' Euclidean distances instead). A name
        the named builder does not take raises a ValueError listing those it takes.

    Returns
    -------
    tree : PartitionTree

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import build_tree
    >>> x = np.array([0.0, 0.1, 5.0, 5.1])
    >>> d = np.abs(np.subtract.outer(x, x))
    >>> tree = build_tree("single", distances=d)
    >>> sorted(sorted(tree.folder(c).tolist()) for c in tree.children(0))
    [[0, 1], [2, 3]]
    >>> build_tree(lambda distances, affinity: build_tree("ward", distances=distances),
    ...            distances=d).n_points
    4
    """
    n = None
    for g in (distances, affinity):
        if g is not None:
            n = _n_points(g)
    if not callable(method):
        _check_params(method, params, sp.issparse(affinity) and distances is None)
    if callable(method):
        tree = method(distances=distances, affinity=affinity, **params)
        if not isinstance(tree, PartitionTree) or (n is not None and tree.n_points != n):
            raise ValueError(
                "a tree_method callable must return a PartitionTree on the axis's "
                f"{n} points, got {tree!r}."
            )
        return tree
    if method == "flexible":
        from ._flexible import flexible_tree

        if affinity is None:
            raise ValueError("tree method 'flexible' needs an affinity.")
        if sp.issparse(affinity):
            from ._sparse_flexible import sparse_flexible_tree

            return sparse_flexible_tree(affinity, tree_constant=tree_constant, **params)
        return flexible_tree(affinity, tree_constant=tree_constant, **params)
    if method in LINKAGE_METHODS:
        if params.get("points") is not None:
            return hierarchical_tree(method=method, **params)
        if distances is not None:
            return hierarchical_tree(distances, method=method, **params)
        return hierarchical_tree(affinity=affinity, method=method, **params)
    if method == "hybrid":
        if distances is not None:
            return hybrid_tree(distances, **params)
        return hybrid_tree(affinity=affinity, **params)
    if method == "bisection":
        if affinity is not None:
            return bisection_tree(affinity=affinity, **params)
        return bisection_tree(distances, **params)
    raise ValueError(f"tree method must be one of {TREE_METHODS} or a callable, got {method!r}.")
