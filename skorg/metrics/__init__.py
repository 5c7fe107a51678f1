"""Tree earth mover's distances and ordering criteria.

The affinities and the diffusion embedding live in :mod:`skorg.graphs` (the layer below the
trees); they are re-exported here so that ``from skorg.metrics import cosine_affinity`` keeps
working.
"""

from ..graphs import (  # noqa: F401  (re-exported for compatibility, documented in graphs)
    affinity_matrix,
    correlation_affinity,
    cosine_affinity,
    diffusion_eigenpairs,
    diffusion_embedding,
    gaussian_affinity,
    knn_affinity,
    knn_indices,
    landmark_diffusion_eigenpairs,
    sparse_diffusion_eigenpairs,
)
from ._emd import _symmetric_dual_affinity as symmetric_dual_affinity_core  # noqa: F401
from ._emd import dual_affinity, multi_tree_emd, tree_emd, tree_emd_features
from ._emd_blocks import pairwise_tree_emd

# Unchecked cores for the organizer (the layer above), which validates once; not documented API.
from ._emd_core import _multi_tree_emd as multi_tree_emd_core  # noqa: F401
from ._knn_emd import knn_tree_emd_affinity, tree_emd_embedding
from ._ordering_quality import neumann_stress, order_spearman

__all__ = [
    "dual_affinity",
    "knn_tree_emd_affinity",
    "multi_tree_emd",
    "neumann_stress",
    "order_spearman",
    "pairwise_tree_emd",
    "tree_emd",
    "tree_emd_embedding",
    "tree_emd_features",
]
