"""Tiny random long-context, windowed, hierarchical, attention-free and hybrid families.

Builders return ``(model, batch, out_proj)`` like those of ``families.py`` (``out_proj`` is
empty for the families skorg refuses).
"""

from __future__ import annotations

from .families import _BERTLIKE, _DECODER, VOCAB, _ids, _make, _pixels, _text


def longformer(seq=8, heads=4):
    model = _make(
        None, "LongformerConfig", "LongformerModel", attention_window=4, pad_token_id=1,
        **dict(_BERTLIKE, num_attention_heads=heads),
    )  # fmt: skip
    ids, mask = _ids(seq=seq, pad_from=seq - 2)
    return model, {"input_ids": ids, "attention_mask": mask}, {}


def led():
    model = _make(
        None, "LEDConfig", "LEDModel", vocab_size=VOCAB, d_model=32, encoder_layers=2,
        decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=37, decoder_ffn_dim=37, max_encoder_position_embeddings=32,
        max_decoder_position_embeddings=32, attention_window=4, dropout=0.0,
        attention_dropout=0.0, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        decoder_start_token_id=2,
    )  # fmt: skip
    ids, mask = _ids(seq=8, pad_from=6)
    dec, dec_mask = _ids(seq=5, pad_from=3, seed=2)
    batch = {
        "input_ids": ids,
        "attention_mask": mask,
        "decoder_input_ids": dec,
        "decoder_attention_mask": dec_mask,
    }
    return model, batch, {}


def big_bird_full():
    model = _make(
        None, "BigBirdConfig", "BigBirdModel", attention_type="original_full", **_BERTLIKE
    )
    return model, _text(), {"self": r"attention\.output\.dense$"}


def big_bird_sparse():
    model = _make(
        None, "BigBirdConfig", "BigBirdModel", attention_type="block_sparse", block_size=2,
        num_random_blocks=1, **dict(_BERTLIKE, max_position_embeddings=64),
    )  # fmt: skip
    ids, mask = _ids(seq=24, pad_from=20)
    return model, {"input_ids": ids, "attention_mask": mask}, {}


def _swin(config, model, depths, heads, **kwargs):
    def build():
        m = _make(
            None, config, model, image_size=8, patch_size=2, num_channels=1, embed_dim=8,
            depths=depths, num_heads=heads, window_size=2, mlp_ratio=2.0, drop_path_rate=0.0,
            **kwargs,
        )  # fmt: skip
        return m, _pixels(), {}

    return build


def swin2sr():
    """Super-resolution Swin: one patch per pixel, two residual groups on the 8 x 8 grid."""
    model = _make(
        None, "Swin2SRConfig", "Swin2SRModel", image_size=8, patch_size=1, num_channels=1,
        embed_dim=8, depths=[2, 2], num_heads=[2, 2], window_size=2, mlp_ratio=2.0,
        drop_path_rate=0.0, upscale=1,
    )  # fmt: skip
    return model, _pixels(), {}


def funnel():
    model = _make(
        None, "FunnelConfig", "FunnelBaseModel", vocab_size=VOCAB, block_sizes=[1, 1],
        d_model=32, n_head=4, d_head=8, d_inner=37, hidden_dropout=0.0, attention_dropout=0.0,
        activation_dropout=0.0,
    )  # fmt: skip
    ids, mask = _ids(seq=8, pad_from=6)
    return model, {"input_ids": ids, "attention_mask": mask}, {}


def levit():
    model = _make(
        None, "LevitConfig", "LevitModel", image_size=32, num_channels=1, patch_size=16,
        hidden_sizes=[16, 32], num_attention_heads=[2, 4], depths=[1, 1], key_dim=[4, 4],
        mlp_ratio=[2, 2], attention_ratio=[2, 2], down_ops=[["Subsample", 4, 2, 2, 2, 2]],
    )  # fmt: skip
    return model, _pixels(size=32), {}


def reformer():
    model = _make(
        None, "ReformerConfig", "ReformerModel", vocab_size=VOCAB, hidden_size=16,
        attention_head_size=4, num_attention_heads=2, attn_layers=["local", "lsh"],
        axial_pos_shape=[2, 4], axial_pos_embds_dim=[8, 8], feed_forward_size=16,
        local_attn_chunk_length=4, lsh_attn_chunk_length=4, num_buckets=2,
        max_position_embeddings=8, hidden_dropout_prob=0.0,
        local_attention_probs_dropout_prob=0.0, lsh_attention_probs_dropout_prob=0.0,
        is_decoder=False, pad_token_id=0,
    )  # fmt: skip
    ids, mask = _ids(seq=8, pad_from=6)
    return model, {"input_ids": ids, "attention_mask": mask}, {}


def longt5(attention="local"):
    def build():
        model = _make(
            None, "LongT5Config", "LongT5Model", vocab_size=VOCAB, d_model=32, d_kv=8,
            d_ff=37, num_layers=2, num_decoder_layers=2, num_heads=4, local_radius=2,
            global_block_size=2, relative_attention_num_buckets=8, dropout_rate=0.0,
            encoder_attention_type=attention, decoder_start_token_id=0, pad_token_id=0,
        )  # fmt: skip
        ids, mask = _ids(seq=8, pad_from=6)
        dec, dec_mask = _ids(seq=5, pad_from=3, seed=2)
        batch = {
            "input_ids": ids,
            "attention_mask": mask,
            "decoder_input_ids": dec,
            "decoder_attention_mask": dec_mask,
        }
        return model, batch, {}

    return build


def pegasus_x():
    model = _make(
        None, "PegasusXConfig", "PegasusXModel", vocab_size=VOCAB, d_model=32, encoder_layers=2,
        decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=37, decoder_ffn_dim=37, max_position_embeddings=32, dropout=0.0,
        attention_dropout=0.0, num_global_tokens=2, block_size=4, pad_token_id=0,
        eos_token_id=1, decoder_start_token_id=0,
    )  # fmt: skip
    ids, mask = _ids(seq=8, pad_from=6)
    dec, dec_mask = _ids(seq=5, pad_from=3, seed=2)
    batch = {
        "input_ids": ids,
        "attention_mask": mask,
        "decoder_input_ids": dec,
        "decoder_attention_mask": dec_mask,
    }
    return model, batch, {}


def rwkv():
    model = _make(
        None, "RwkvConfig", "RwkvModel", vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2,
        attention_hidden_size=16, intermediate_size=32, context_length=16,
    )  # fmt: skip
    ids, _ = _ids()
    return model, {"input_ids": ids}, {}


def mamba():
    model = _make(
        None, "MambaConfig", "MambaModel", vocab_size=VOCAB, hidden_size=16,
        num_hidden_layers=2, state_size=4,
    )  # fmt: skip
    ids, _ = _ids()
    return model, {"input_ids": ids}, {}


def jamba():
    model = _make(
        None, "JambaConfig", "JambaModel", num_key_value_heads=2, num_experts=2,
        num_experts_per_tok=1, expert_layer_period=2, expert_layer_offset=1,
        attn_layer_period=2, attn_layer_offset=1, use_mamba_kernels=False, mamba_d_state=4,
        mamba_dt_rank=4, **dict(_DECODER, num_hidden_layers=4, intermediate_size=32),
    )  # fmt: skip
    return model, _text(), {"self": r"self_attn\.o_proj$"}


def falcon_h1():
    model = _make(
        None, "FalconH1Config", "FalconH1Model", num_key_value_heads=2, head_dim=8,
        mamba_d_ssm=16, mamba_n_heads=4, mamba_d_head=4, mamba_d_state=4,
        mamba_chunk_size=4, **_DECODER,
    )  # fmt: skip
    return model, _text(), {"self": r"self_attn\.o_proj$"}


def qwen3_next():
    model = _make(
        None, "Qwen3NextConfig", "Qwen3NextModel", num_key_value_heads=2, head_dim=8,
        linear_key_head_dim=8, linear_value_head_dim=8, linear_num_key_heads=2,
        linear_num_value_heads=2, num_experts=2, num_experts_per_tok=1,
        moe_intermediate_size=16, shared_expert_intermediate_size=16,
        layer_types=["linear_attention", "full_attention", "linear_attention", "full_attention"],
        **dict(_DECODER, num_hidden_layers=4, intermediate_size=32),
    )  # fmt: skip
    return model, _text(), {"self": r"self_attn\.o_proj$"}


# read exactly: full attention of a long-context family, and the attention layers of hybrids
LONG_EXACT = {
    "big-bird": big_bird_full,
    "jamba": jamba,
    "falcon-h1": falcon_h1,
    "qwen3-next": qwen3_next,
}

# windowed: every block, windows on the sample axis (test_windowed.py)
LONG_WINDOWED = {
    "swin": _swin("SwinConfig", "SwinModel", [2], [2]),
    "swin-2stages": _swin("SwinConfig", "SwinModel", [2, 2], [2, 4]),
    "swinv2": _swin("Swinv2Config", "Swinv2Model", [2], [2]),
    "donut-swin": _swin("DonutSwinConfig", "DonutSwinModel", [2, 2], [2, 2]),
    "swin2sr": swin2sr,
}

# read from its own softmax calls, with no output_attentions to check them (test_levit.py)
LONG_STAGED = {"levit": levit}

# refused, each with its reason
LONG_REFUSED = {
    "big-bird-sparse": big_bird_sparse,
    "maskformer-swin": _swin("MaskFormerSwinConfig", "MaskFormerSwinModel", [2], [2]),
    "reformer": reformer,
    "longt5-local": longt5("local"),
    "longt5-tglobal": longt5("transient-global"),
    "pegasus-x": pegasus_x,
    "rwkv": rwkv,
    "mamba": mamba,
}

LONG_FAMILIES = {**LONG_EXACT, **LONG_WINDOWED, **LONG_STAGED, **LONG_REFUSED}
