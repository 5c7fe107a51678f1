"""Reordering the children of a partition tree (its leaf order), keeping its partitions."""

from __future__ import annotations

import numpy as np

__all__ = ["reorder_children"]


def reorder_children(tree, children_order):
    """Rebuild the leaf order of ``tree`` visiting children in a new order."""
    from ._partition_tree import _as_int_array  # the tree's module imports this one

    order = []
    stack = [0]
    while stack:
        node = stack.pop()
        kids = tree.children(node)
        if kids.shape[0] == 0:
            order.append(tree.leaf_order[tree.start[node]])
            continue
        returned = children_order(node, kids)
        try:
            ordered = _as_int_array(returned, "children_order's result", 1)
        except (TypeError, ValueError) as error:
            raise type(error)(
                f"children_order must return the children ids of node {node} (integers, a "
                f"permutation of {kids.tolist()}), got {returned!r}: {error}"
            ) from None
        if not np.array_equal(np.sort(ordered), kids):
            raise ValueError(
                f"children_order must permute the children of node {node} "
                f"({kids.tolist()}), got {ordered.tolist()}."
            )
        stack.extend(ordered[::-1].tolist())
    out = type(tree).from_levels(tree.to_levels(), leaf_order=np.asarray(order))
    if tree.merge_height is not None:
        # the same folders, numbered anew: find each by its level and first point
        first_point = tree.leaf_order[tree.start]
        new_node = out.level_ptr[tree.level] + out.to_levels()[tree.level, first_point]
        heights = np.empty(out.n_nodes)
        heights[new_node] = tree.merge_height
        out._set_merge_height(heights)
    return out
