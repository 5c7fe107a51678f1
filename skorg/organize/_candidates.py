"""The tree of one questionnaire step: a registry of tree builders, and ``"select"``, which
builds several candidates and keeps the best by a registered criterion.

A new builder joins by ``register_builder(name)``; a new criterion by
``register_criterion(name)``; :data:`~._presets.SELECT_CANDIDATES` and
:data:`~._presets.SELECT_CRITERION` name the ones ``"select"`` uses. Builders not registered
here (the names of :func:`~skorg.trees.build_tree` and callables) go through
:func:`~skorg.trees.build_tree`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..trees import build_tree, flexible_tree
from ._presets import ORDERED_BUILDERS, SELECT_CANDIDATES, SELECT_CRITERION
from ._steps import _TIE, _compression_error_along, _partial_transform
from ._tied import tied_compression_error, tied_partial

__all__: list[str] = []


@dataclass(frozen=True)
class Geometry:
    """What one step knows of its axis: the affinity ``affinity``, the tree EMD
    ``distances`` (None for an initial tree) and the tree-EMD features ``points`` (for
    ``"ward"``; None when not computed or beyond the memory budget)."""

    affinity: object
    distances: object = None
    points: object = None


# name -> builder(state, axis, geometry) -> PartitionTree
_BUILDERS = {}
# name -> criterion class: criterion(state, axis) prepares what every candidate of the step
# shares, criterion.score(tree) is lower for the better tree
_CRITERIA = {}


def register_builder(name):
    """Register ``builder(state, axis, geometry) -> PartitionTree`` under ``name``."""

    def register(builder):
        _BUILDERS[name] = builder
        return builder

    return register


def register_criterion(name):
    """Register a selection criterion class under ``name`` (see :data:`_CRITERIA`)."""

    def register(criterion):
        _CRITERIA[name] = criterion
        return criterion

    return register


def builder_params(settings, method):
    """The keyword arguments of a builder: ``tree_params``, and no optimal leaf ordering
    for the linkage builders unless asked (the tree EMD sees partitions only, and the final
    order comes from ``ordering``: SciPy's optimal leaf ordering, most of a linkage tree's
    cost, is left out)."""
    params = settings.builder_params
    if method in ORDERED_BUILDERS and "optimal_ordering" not in params:
        return {"optimal_ordering": False, **params}
    return params


def build_candidate(state, method, axis, geometry):
    """The tree of ``axis`` by one builder (a registered one, else
    :func:`~skorg.trees.build_tree`'s)."""
    builder = _BUILDERS.get(method) if isinstance(method, str) else None
    if builder is not None:
        return builder(state, axis, geometry)
    settings = state.settings
    return build_tree(
        method,
        distances=geometry.distances,
        affinity=geometry.affinity,
        tree_constant=settings.constants[axis],
        **builder_params(settings, method),
    )


def make_tree(state, axis, geometry, check=False):
    """The tree of ``axis`` by its ``tree_method`` (``check``: validate the affinity, for
    the initial trees)."""
    settings = state.settings
    method = settings.methods[axis]
    if method == "flexible" and not settings.builder_params:
        return flexible_tree(
            geometry.affinity, tree_constant=settings.constants[axis], check_input=check
        )
    if method == "select":
        return select_tree(state, axis, geometry)
    return build_candidate(state, method, axis, geometry)


def select_tree(state, axis, geometry):
    """Every candidate builder on the axis's geometry; the one the criterion scores best is
    kept, unless it beats the first candidate by no more than ``select_margin``.

    With a positive margin the candidates are tried in reverse: Ward of the slices (the
    grouping) stays unless average linkage of the tree EMD compresses by more than the
    margin; 0 is the earlier rule (the lower error). Near-ties (within rounding) keep the
    earlier candidate, so that rescaled data, whose scores differ in the last bits, selects
    the same trees. ``state.chosen[axis]`` records the choice.
    """
    settings = state.settings
    margin = settings.select_margin
    criterion = _CRITERIA[SELECT_CRITERION](state, axis)
    candidates = SELECT_CANDIDATES[::-1] if margin > 0 else SELECT_CANDIDATES
    best = None
    for name in candidates:
        tree = build_candidate(state, name, axis, geometry)
        value = criterion.score(tree)
        if best is None or value < best[0] * (1 - max(_TIE, margin)):
            best = (value, name, tree)
    state.chosen[axis] = best[1]
    return best[2]


@register_builder("ward")
def _ward(state, axis, geometry):
    """Exact Ward of the tree-EMD features; of the distances' diffusion embedding when the
    features are beyond the memory budget; of the slices for an initial tree."""
    params = builder_params(state.settings, "ward")
    if geometry.points is not None:
        return build_tree("ward", points=geometry.points, **params)
    if geometry.distances is not None:
        return build_tree("ward", distances=geometry.distances, **params)
    return state.slice_tree(axis)


@register_builder("ward_slices")
def _ward_slices(state, axis, geometry):
    """Ward of the slices in Euclidean distance (it does not depend on the other trees)."""
    return state.slice_tree(axis)


@register_criterion("compression")
class CompressionError:
    """The relative l2 error of keeping the largest ``SELECT_KEEP`` of the Haar coefficients
    of X on the current trees of the other axes and the candidate on this one (on both axes
    of the tied pair); the transform along the other axes is computed once per step."""

    def __init__(self, state, axis):
        settings = state.settings
        self.tied = settings.builds_shared_tree(axis)
        self.axis, self.tie = axis, settings.tie
        if self.tied:
            self.partial = tied_partial(state.X, state.trees, settings.tie)
        else:
            self.partial = _partial_transform(state.X, state.trees, axis)

    def score(self, tree):
        if self.tied:
            return tied_compression_error(self.partial, tree, self.tie)
        return _compression_error_along(self.partial, tree, self.axis)
