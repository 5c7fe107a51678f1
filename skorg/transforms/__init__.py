"""Transforms on partition trees: tree Haar wavelets, their sparsity and paraproducts."""

from ._compression import (
    HaarApproximation,
    HolderFit,
    haar_compress,
    haar_denoise,
    mixed_holder_exponent,
)
from ._entropy import l1_entropy
from ._haar import (
    bihaar_transform,
    haar_basis,
    haar_coefficient_info,
    haar_support,
    haar_transform,
    inverse_bihaar_transform,
    inverse_haar_transform,
    inverse_multi_haar_transform,
    inverse_trihaar_transform,
    multi_haar_transform,
    trihaar_transform,
)
from ._haar_estimator import TreeHaarTransform
from ._nonlinearities import EntrywiseNonlinearity, Nonlinearity, get_nonlinearity
from ._paraproduct import ParaproductResult, paraproduct_decomposition, tensor_average
from ._paraproduct_estimator import ParaproductDecomposer
from ._softmax_check import corner_block_logits, format_table, softmax_invariance_check

__all__ = [
    "EntrywiseNonlinearity",
    "HaarApproximation",
    "HolderFit",
    "Nonlinearity",
    "ParaproductDecomposer",
    "ParaproductResult",
    "TreeHaarTransform",
    "bihaar_transform",
    "corner_block_logits",
    "format_table",
    "get_nonlinearity",
    "haar_basis",
    "haar_coefficient_info",
    "haar_compress",
    "haar_denoise",
    "haar_support",
    "haar_transform",
    "inverse_bihaar_transform",
    "inverse_haar_transform",
    "inverse_multi_haar_transform",
    "inverse_trihaar_transform",
    "l1_entropy",
    "mixed_holder_exponent",
    "multi_haar_transform",
    "paraproduct_decomposition",
    "softmax_invariance_check",
    "tensor_average",
    "trihaar_transform",
]
