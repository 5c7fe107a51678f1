"""Partition trees: the flat-array tree, its builders and leaf orderings."""

from ._bisection import bisection_tree
from ._builders import dyadic_tree, linkage_tree
from ._dispatch import build_tree
from ._flexible import flexible_tree
from ._hierarchical import TREE_METHODS, hierarchical_tree
from ._hybrid import hybrid_tree
from ._partition_tree import PartitionTree
from ._sparse_flexible import sparse_flexible_tree

__all__ = [
    "TREE_METHODS",
    "PartitionTree",
    "bisection_tree",
    "build_tree",
    "dyadic_tree",
    "flexible_tree",
    "hierarchical_tree",
    "hybrid_tree",
    "linkage_tree",
    "sparse_flexible_tree",
]
