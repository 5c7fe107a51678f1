"""Attention toolkit: extract attention maps from torch models, rank, mask and prune heads.

This subpackage needs the ``attention`` extra (torch, and transformers for Hugging Face
models); ``import skorg`` never imports it. TransformerLens models are supported by duck typing
of their hook names when TransformerLens is installed.
"""

try:
    import torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without torch
    raise ImportError(
        "skorg.attention needs torch; install it with `pip install skorg[attention]`."
    ) from exc

from ._corpus import stdlib_sentences
from ._corpus_dask import dask_head_statistics, load_head_statistics, map_head_statistics
from ._eq18 import softmax_invariance_survey
from ._extract import extract_attention
from ._maps import AttentionMaps
from ._mask import attention_layout, gate_heads, mask_heads
from ._network import compare_networks, network_entropy, network_tensor
from ._prune import PruningResult, prune_curves
from ._ragged import RaggedAttentionMaps
from ._rank import (
    attention_entropy,
    head_confidence,
    head_gradient_importance,
    head_sparsity,
    rank_heads,
    ranking_stability,
)
from ._sensitivity import sensitivity_sweep

__all__ = [
    "AttentionMaps",
    "PruningResult",
    "RaggedAttentionMaps",
    "attention_entropy",
    "attention_layout",
    "compare_networks",
    "dask_head_statistics",
    "extract_attention",
    "gate_heads",
    "head_confidence",
    "head_gradient_importance",
    "head_sparsity",
    "load_head_statistics",
    "map_head_statistics",
    "mask_heads",
    "network_entropy",
    "network_tensor",
    "prune_curves",
    "rank_heads",
    "ranking_stability",
    "sensitivity_sweep",
    "softmax_invariance_survey",
    "stdlib_sentences",
]

# Model setups for the report's attention section (the layer above); not documented API.
from ._setups import accuracy_metric as accuracy_metric
from ._setups import embedding_similarity_metric as embedding_similarity_metric
from ._setups import load_minilm as load_minilm
from ._setups import mean_image_embedding as mean_image_embedding
from ._setups import mean_pooled_embedding as mean_pooled_embedding
from ._setups import token_states as token_states
from ._setups import train_digits_vit as train_digits_vit
