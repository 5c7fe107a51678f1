"""Attention of models whose layers differ in size: one AttentionMaps per group of layers."""

from __future__ import annotations

import numpy as np

from ._maps import AttentionMaps

__all__ = ["RaggedAttentionMaps"]


class RaggedAttentionMaps:
    """Attention maps of layers of different sizes, one :class:`AttentionMaps` per group.

    Pooled, subsampled or spatially reduced stages (Funnel, SegFormer) give layers whose query
    and key axes differ, so they cannot be stacked into one (layer, head, query, key) tensor;
    the stages of a windowed model (Swin) differ in windows per image and heads.
    Each group holds consecutive layers of one size, with the model's layer indices in its
    ``layers``; together the groups hold every layer once, in the model's order.

    Parameters
    ----------
    groups : list of AttentionMaps
        The groups, in layer order; all have the same samples and kind.
    source : str, optional
        How the maps were read and why the layers differ in size.

    Attributes
    ----------
    groups : list of AttentionMaps
    kind : str
    source : str or None

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.attention import AttentionMaps, RaggedAttentionMaps
    >>> first = AttentionMaps.from_array(np.full((2, 1, 3, 4, 4), 0.25))
    >>> pooled = AttentionMaps.from_array(np.full((2, 1, 3, 2, 4), 0.25))
    >>> pooled.layers = np.array([1])
    >>> maps = RaggedAttentionMaps([first, pooled])
    >>> maps.layers.tolist(), maps.head_index().shape
    ([0, 1], (6, 2))
    """

    def __init__(self, groups, source=None):
        groups = list(groups)
        if not groups or not all(isinstance(g, AttentionMaps) for g in groups):
            raise TypeError("groups must be a non-empty list of AttentionMaps.")
        if len({_inputs(g) for g in groups}) > 1 or len({g.kind for g in groups}) > 1:
            raise ValueError("the groups must hold the same inputs and the same kind.")
        layers = np.concatenate([g.layers for g in groups])
        if len(set(layers.tolist())) != layers.size:
            raise ValueError(f"the groups repeat layers: {layers.tolist()}.")
        self.groups = groups
        self.kind = groups[0].kind
        self.source = source if source is not None else groups[0].source

    def __repr__(self):
        sizes = ", ".join(f"layers {g.layers.tolist()}: {g.probs.shape[2:]}" for g in self.groups)
        return f"RaggedAttentionMaps({self.kind}; {sizes})"

    @property
    def n_samples(self):
        """The number of inputs (windowed groups hold several windows per input)."""
        return _inputs(self.groups[0])

    @property
    def layers(self):
        """The model's layer indices, in the order of the groups."""
        return np.concatenate([g.layers for g in self.groups])

    @property
    def probs(self):
        raise TypeError(
            "the layers of these maps differ in size and have no single probs array; read "
            "maps.groups (one AttentionMaps per group of equal-sized layers)."
        )

    logits = mask = probs

    def head_index(self):
        """``(layer, head)`` of every head of every group, in order, shape (n_total, 2)."""
        return np.concatenate([g.head_index() for g in self.groups])

    def group_of(self, layer):
        """The group holding a model layer, and that layer's position in it."""
        for g in self.groups:
            hit = np.flatnonzero(g.layers == layer)
            if hit.size:
                return g, int(hit[0])
        raise ValueError(f"layer {layer} is not in these maps (layers {self.layers.tolist()}).")


def _inputs(group):
    return group.n_samples // (group.windows_per_image or 1)


def _per_input(group, score):
    """A per-window score averaged over each input's windows: (n_inputs, n_heads)."""
    value = np.asarray(score(group))
    if group.windows_per_image is None:
        return value
    return value.reshape(_inputs(group), group.windows_per_image, -1).mean(axis=1)


def per_group(maps, score):
    """A per-head score of every group, joined along the head axis: (n_inputs, n_total)."""
    if isinstance(maps, RaggedAttentionMaps):
        return np.concatenate([_per_input(g, score) for g in maps.groups], axis=1)
    return _per_input(maps, score)
