"""Affinities, the diffusion embedding and tree earth mover's distances."""

from ._affinity import (
    affinity_matrix,
    correlation_affinity,
    cosine_affinity,
    gaussian_affinity,
)
from ._diffusion import diffusion_eigenpairs, diffusion_embedding

__all__ = [
    "affinity_matrix",
    "correlation_affinity",
    "cosine_affinity",
    "diffusion_eigenpairs",
    "diffusion_embedding",
    "gaussian_affinity",
]
