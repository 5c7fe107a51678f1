"""Affinities, the diffusion embedding and tree earth mover's distances."""

from ._affinity import (
    affinity_matrix,
    correlation_affinity,
    cosine_affinity,
    gaussian_affinity,
)
from ._diffusion import diffusion_eigenpairs, diffusion_embedding
from ._emd import dual_affinity, multi_tree_emd, tree_emd, tree_emd_features
from ._ordering_quality import neumann_stress, order_spearman

__all__ = [
    "affinity_matrix",
    "correlation_affinity",
    "cosine_affinity",
    "diffusion_eigenpairs",
    "diffusion_embedding",
    "dual_affinity",
    "gaussian_affinity",
    "multi_tree_emd",
    "neumann_stress",
    "order_spearman",
    "tree_emd",
    "tree_emd_features",
]
