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
from ._packet_basis import WaveletPacketBasis
from ._packet_estimator import TreeWaveletPacketTransform
from ._packets import (
    best_wavelet_packet_basis,
    inverse_wavelet_packet_transform,
    wavelet_packet_basis,
    wavelet_packet_basis_matrix,
    wavelet_packet_dictionary,
    wavelet_packet_info,
    wavelet_packet_transform,
)
from ._packets_2d import (
    WaveletPacketTiling2D,
    best_wavelet_packet_tiling_2d,
    inverse_wavelet_packet_transform_2d,
    wavelet_packet_transform_2d,
)
from ._packets_multi import (
    inverse_multi_wavelet_packet_transform,
    multi_best_wavelet_packet_basis,
    multi_wavelet_packet_transform,
)
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
    "TreeWaveletPacketTransform",
    "WaveletPacketBasis",
    "WaveletPacketTiling2D",
    "best_wavelet_packet_basis",
    "best_wavelet_packet_tiling_2d",
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
    "inverse_multi_wavelet_packet_transform",
    "inverse_trihaar_transform",
    "inverse_wavelet_packet_transform",
    "inverse_wavelet_packet_transform_2d",
    "l1_entropy",
    "mixed_holder_exponent",
    "multi_best_wavelet_packet_basis",
    "multi_haar_transform",
    "multi_wavelet_packet_transform",
    "paraproduct_decomposition",
    "softmax_invariance_check",
    "tensor_average",
    "trihaar_transform",
    "wavelet_packet_basis",
    "wavelet_packet_basis_matrix",
    "wavelet_packet_dictionary",
    "wavelet_packet_info",
    "wavelet_packet_transform",
    "wavelet_packet_transform_2d",
]
