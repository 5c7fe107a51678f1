"""Graphs on the points of one axis: affinities (dense and k-NN) and the diffusion embedding.

The bottom layer of skorg's geometry: nothing here knows about trees. The tree builders
(:mod:`skorg.trees`) and the tree metrics (:mod:`skorg.metrics`, which re-exports these names)
are built on it.
"""

from ._affinity import (
    affinity_matrix,
    correlation_affinity,
    cosine_affinity,
    gaussian_affinity,
)
from ._affinity import check_affinity as check_affinity
from ._diffusion import diffusion_eigenpairs, diffusion_embedding
from ._knn import knn_affinity, knn_indices
from ._knn import knn_l1_affinity as knn_l1_affinity
from ._knn_blocks import empty_knn_lists as empty_knn_lists
from ._knn_blocks import l1_cross_distances as l1_cross_distances
from ._knn_blocks import l1_knn_block as l1_knn_block
from ._knn_blocks import l1_knn_descent as l1_knn_descent
from ._knn_blocks import l1_knn_recall as l1_knn_recall
from ._knn_blocks import merge_knn_lists as merge_knn_lists
from ._landmarks import choose_landmarks as choose_landmarks
from ._landmarks import cosine_columns as cosine_columns
from ._landmarks import l1_kernel_columns as l1_kernel_columns
from ._landmarks import landmark_diffusion_eigenpairs
from ._sparse_diffusion import check_sparse_affinity as check_sparse_affinity
from ._sparse_diffusion import sparse_diffusion_eigenpairs

# The documented API; the names imported "as" themselves above (checks and unchecked cores)
# are building blocks for the layers above.
__all__ = [
    "affinity_matrix",
    "correlation_affinity",
    "cosine_affinity",
    "diffusion_eigenpairs",
    "diffusion_embedding",
    "gaussian_affinity",
    "knn_affinity",
    "knn_indices",
    "landmark_diffusion_eigenpairs",
    "sparse_diffusion_eigenpairs",
]
