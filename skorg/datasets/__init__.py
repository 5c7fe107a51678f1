"""Synthetic data with a known hidden geometry."""

from ._synthetic import make_shuffled_matrix, make_shuffled_tensor, smooth_surface

__all__ = ["make_shuffled_matrix", "make_shuffled_tensor", "smooth_surface"]
