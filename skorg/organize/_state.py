"""The questionnaire's state: what one fit has learned so far, and what its steps reuse."""

from __future__ import annotations

from dataclasses import dataclass, field

import scipy.sparse as sp

from .._validation import pow2_scale
from ._settings import Settings
from ._steps import _euclidean_distances, _unfold, _ward_tree
from ._tied import tied_slices

__all__: list[str] = []


@dataclass
class IterationState:
    """The trees, affinities and distances of every axis as the iteration goes, its history,
    and the caches of the steps (each holds results that are bit for bit what a step would
    recompute, so that reusing them changes nothing).

    ``X`` is the data as the iteration sees it, ``Xe`` the same scaled by a power of two to
    largest magnitude in [0.5, 1) (``scale``): the tree-EMD steps use ``Xe``, exact, so the
    trees are bit for bit those of any rescaled copy of X, and neither the float32 features
    nor the squares of the kNN path can underflow or overflow.
    """

    settings: Settings
    X: object
    Xe: object
    scale: float
    trees: list
    affinities: list
    distances: list
    history: list = field(default_factory=list)
    # per tree built: equal to the axis's previous tree, leaf order included
    identical: list = field(default_factory=list)
    # axis -> the builder tree_method="select" took for its latest tree
    chosen: dict = field(default_factory=dict)
    # axis -> Euclidean distances between its slices and their Ward tree (neither depends
    # on the other trees, so each is computed once)
    slice_distance_cache: dict = field(default_factory=dict)
    slice_tree_cache: dict = field(default_factory=dict)
    initial_trees: list | None = None  # the trees after the initial step
    # axis -> (d, A, tree) built from the initial trees ("reference_3d" rebuilds from them)
    from_initial: dict = field(default_factory=dict)
    # axis -> the trees its last dense step read (see _steps._same_trees)
    last_inputs: dict = field(default_factory=dict)
    n_done: int = 0  # sweeps run
    stop_reason: str = "n_iter"

    @classmethod
    def start(cls, X, settings):
        """The state before any tree is built."""
        scale = pow2_scale(X.data if sp.issparse(X) else X, always=True)
        ndim = settings.ndim
        return cls(settings, X, X * scale, scale, [None] * ndim, [None] * ndim, [None] * ndim)

    def slice_distances(self, axis):
        """Euclidean distances between the slices of ``axis`` (of the tied pair: both of
        every object's slices, side by side)."""
        tie = self.settings.tie
        if self.settings.is_tied(axis):
            if tie[0] not in self.slice_distance_cache:
                distances = _euclidean_distances(tied_slices(self.Xe, tie))
                self.slice_distance_cache[tie[0]] = distances
            return self.slice_distance_cache[tie[0]]
        if axis not in self.slice_distance_cache:
            self.slice_distance_cache[axis] = _euclidean_distances(_unfold(self.Xe, axis))
        return self.slice_distance_cache[axis]

    def slices(self, axis):
        """The slices of ``axis``, unfolded (of the tied pair: both slices, side by side)."""
        if self.settings.is_tied(axis):
            return tied_slices(self.Xe, self.settings.tie)
        return _unfold(self.Xe, axis)

    def slice_tree(self, axis):
        """Ward's tree of the slices of ``axis`` (computed once)."""
        if axis not in self.slice_tree_cache:
            self.slice_tree_cache[axis] = _ward_tree(self.slice_distances(axis))
        return self.slice_tree_cache[axis]

    def record(self, iteration, axis, tree):
        """Make ``tree`` the current tree of ``axis`` and log it in the history (the shared
        tree of a tied pair is recorded for both axes)."""
        prev = self.trees[axis]
        changed = prev is None or not tree.same_partitions(prev)
        self.identical.append(prev is not None and tree == prev)
        self.history.append(
            {
                "iteration": iteration,
                "axis": axis,
                "tree": tree,
                "changed": changed,
                "objective": None,
                "method": self.chosen.get(axis, self.settings.methods[axis]),
            }
        )
        self.trees[axis] = tree
        if self.settings.builds_shared_tree(axis):
            partner = self.settings.tie[1]
            if axis in self.chosen:
                self.chosen[partner] = self.chosen[axis]
            self.affinities[partner] = self.affinities[axis]
            self.distances[partner] = self.distances[axis]
            self.record(iteration, partner, tree)

    def snapshot(self):
        """The trees, affinities and distances now (copies of the lists)."""
        return list(self.trees), list(self.affinities), list(self.distances)

    def restore(self, snapshot):
        self.trees[:], self.affinities[:], self.distances[:] = snapshot
