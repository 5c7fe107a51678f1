"""Affinities, the diffusion embedding and tree earth mover's distances."""

from ._affinity import (
    affinity_matrix,
    correlation_affinity,
    cosine_affinity,
    gaussian_affinity,
)
from ._diffusion import diffusion_eigenpairs, diffusion_embedding
from ._emd import dual_affinity, multi_tree_emd, tree_emd, tree_emd_features
from ._emd_blocks import pairwise_tree_emd
from ._knn import knn_affinity, knn_indices, knn_tree_emd_affinity, tree_emd_embedding
from ._landmarks import landmark_diffusion_eigenpairs
from ._ordering_quality import neumann_stress, order_spearman
from ._sparse_diffusion import sparse_diffusion_eigenpairs

__all__ = [
    "affinity_matrix",
    "correlation_affinity",
    "cosine_affinity",
    "diffusion_eigenpairs",
    "diffusion_embedding",
    "dual_affinity",
    "gaussian_affinity",
    "knn_affinity",
    "knn_indices",
    "knn_tree_emd_affinity",
    "landmark_diffusion_eigenpairs",
    "multi_tree_emd",
    "neumann_stress",
    "order_spearman",
    "pairwise_tree_emd",
    "sparse_diffusion_eigenpairs",
    "tree_emd",
    "tree_emd_embedding",
    "tree_emd_features",
]
