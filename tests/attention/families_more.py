"""More tiny random families: decoders, encoders, seq2seq, vision and audio (no download).

Builders return ``(model, batch, out_proj)`` like those of ``families.py``.
"""

from __future__ import annotations

import torch

from .families import _BERTLIKE, _DECODER, _VISION, VOCAB, _make, _pixels, _seq2seq, _text

_O = {"self": r"self_attn\.o_proj$"}
_BERT_OUT = {"self": r"attention\.output\.dense$"}


def _decoder(config, model, out=_O, **kwargs):
    def build():
        return _make(None, config, model, **{**_DECODER, **kwargs}), _text(), out

    return build


def mpt():
    model = _make(
        None, "MptConfig", "MptModel", vocab_size=VOCAB, d_model=32, n_layers=2, n_heads=4,
        expansion_ratio=2, max_seq_len=32, pad_token_id=0, bos_token_id=1, eos_token_id=2,
    )  # fmt: skip
    return model, _text(), {"self": r"attn\.out_proj$"}


def gptj():
    model = _make(
        None, "GPTJConfig", "GPTJModel", vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4,
        rotary_dim=4, n_positions=32, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        bos_token_id=1, eos_token_id=2, pad_token_id=0,
    )  # fmt: skip
    return model, _text(), {"self": r"attn\.out_proj$"}


def gpt_neox():
    model = _make(
        None, "GPTNeoXConfig", "GPTNeoXModel", rotary_pct=0.5, hidden_dropout=0.0,
        attention_dropout=0.0, **_DECODER,
    )  # fmt: skip
    return model, _text(), {"self": r"attention\.dense$"}


def opt():
    model = _make(
        None, "OPTConfig", "OPTModel", vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, ffn_dim=37, word_embed_proj_dim=32, max_position_embeddings=32,
        dropout=0.0, attention_dropout=0.0, pad_token_id=0, bos_token_id=1, eos_token_id=2,
    )  # fmt: skip
    return model, _text(), {"self": r"self_attn\.out_proj$"}


def codegen():
    model = _make(
        None, "CodeGenConfig", "CodeGenModel", vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4,
        rotary_dim=4, n_positions=32, n_ctx=32, resid_pdrop=0.0, embd_pdrop=0.0,
        attn_pdrop=0.0, bos_token_id=1, eos_token_id=2, pad_token_id=0,
    )  # fmt: skip
    return model, _text(), {"self": r"attn\.out_proj$"}


def xglm():
    model = _make(
        None, "XGLMConfig", "XGLMModel", vocab_size=VOCAB, d_model=32, num_layers=2,
        attention_heads=4, ffn_dim=37, max_position_embeddings=32, dropout=0.0,
        attention_dropout=0.0, activation_dropout=0.0, pad_token_id=0, bos_token_id=1,
        eos_token_id=2,
    )  # fmt: skip
    return model, _text(), {"self": r"self_attn\.out_proj$"}


def diffllama():
    model = _make(None, "DiffLlamaConfig", "DiffLlamaModel", num_key_value_heads=2, **_DECODER)
    return model, _text(), _O


def _bertlike(config, model, out=_BERT_OUT, **kwargs):
    def build():
        return _make(None, config, model, **{**_BERTLIKE, **kwargs}), _text(), out

    return build


def mobilebert():
    model = _make(
        None, "MobileBertConfig", "MobileBertModel", embedding_size=16, intra_bottleneck_size=32,
        true_hidden_size=32, num_feedforward_networks=1, **_BERTLIKE,
    )  # fmt: skip
    return model, _text(), {"self": r"attention\.output\.dense$"}


def mpnet():
    model = _make(None, "MPNetConfig", "MPNetModel", **dict(_BERTLIKE, pad_token_id=1))
    return model, _text(), {"self": r"attention\.attn\.o$"}


def squeezebert():
    model = _make(
        None, "SqueezeBertConfig", "SqueezeBertModel", embedding_size=32, q_groups=1, k_groups=1,
        v_groups=1, post_attention_groups=1, intermediate_groups=1, output_groups=1, **_BERTLIKE,
    )  # fmt: skip
    return model, _text(), {"self": r"post_attention\.conv1d$"}


def _seq(config, model, **kwargs):
    base = dict(
        vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=37,
        decoder_ffn_dim=37, max_position_embeddings=32, dropout=0.0, attention_dropout=0.0,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=2,
    )  # fmt: skip
    out = {
        "encoder": r"encoder\.layers\.\d+\.self_attn\.out_proj$",
        "decoder": r"decoder\.layers\.\d+\.self_attn\.out_proj$",
        "cross": r"encoder_attn\.out_proj$",
    }

    def build():
        return _make(None, config, model, **{**base, **kwargs}), _seq2seq(), out

    return build


def prophetnet():
    model = _make(
        None, "ProphetNetConfig", "ProphetNetModel", vocab_size=VOCAB, hidden_size=32,
        num_encoder_layers=2, num_decoder_layers=2, num_encoder_attention_heads=4,
        num_decoder_attention_heads=4, encoder_ffn_dim=37, decoder_ffn_dim=37,
        max_position_embeddings=32, dropout=0.0, attention_dropout=0.0, ngram=2,
        num_buckets=8, relative_max_distance=16, pad_token_id=0, bos_token_id=1,
        eos_token_id=2, decoder_start_token_id=2,
    )  # fmt: skip
    return model, _seq2seq(), {}


def _vision(config, model, out, channels=1, **kwargs):
    def build():
        cfg = {**_VISION, "num_channels": channels, **kwargs}
        return _make(None, config, model, **cfg), _pixels(channels=channels), out

    return build


def dinov2():
    model = _make(None, "Dinov2Config", "Dinov2Model", **dict(_VISION, mlp_ratio=2))
    return model, _pixels(), {"self": r"attention\.o_proj$"}


def convnext():
    model = _make(
        None, "ConvNextConfig", "ConvNextModel", num_channels=1, hidden_sizes=[8, 16],
        depths=[1, 1], num_stages=2, patch_size=2, image_size=8,
    )  # fmt: skip
    return model, _pixels(), {}


def segformer():
    model = _make(
        None, "SegformerConfig", "SegformerModel", num_channels=1, num_encoder_blocks=2,
        depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[8, 16], patch_sizes=[3, 3],
        strides=[2, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2],
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, drop_path_rate=0.0,
    )  # fmt: skip
    return model, _pixels(size=16), {}


def mobilevit():
    model = _make(
        None, "MobileViTConfig", "MobileViTModel", num_channels=1, image_size=16,
        patch_size=2, hidden_sizes=[16, 16, 16], neck_hidden_sizes=[8, 8, 8, 8, 8, 8, 16],
        num_attention_heads=2, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    return model, _pixels(size=16), {}


def _audio(config, model):
    def build():
        m = _make(
            None, config, model, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=37, conv_dim=(8, 8), conv_stride=(4, 2), conv_kernel=(8, 4),
            num_conv_pos_embeddings=4, num_conv_pos_embedding_groups=2, hidden_dropout=0.0,
            attention_dropout=0.0, activation_dropout=0.0, feat_proj_dropout=0.0,
            layerdrop=0.0, do_stable_layer_norm=False,
        )  # fmt: skip
        gen = torch.Generator().manual_seed(5)
        batch = {"input_values": torch.randn(2, 200, generator=gen)}
        return m, batch, {"self": r"attention\.out_proj$"}

    return build


MORE_EXACT = {
    "mpt": mpt,
    "gptj": gptj,
    "gpt-neox": gpt_neox,
    "opt": opt,
    "codegen": codegen,
    "stablelm": _decoder("StableLmConfig", "StableLmModel", num_key_value_heads=2),
    "gemma": _decoder("GemmaConfig", "GemmaModel", num_key_value_heads=2, head_dim=8),
    "gemma3": _decoder(
        "Gemma3TextConfig",
        "Gemma3TextModel",
        num_key_value_heads=2,
        head_dim=8,
        sliding_window=3,
        layer_types=["sliding_attention", "full_attention"],
    ),
    "qwen3": _decoder("Qwen3Config", "Qwen3Model", num_key_value_heads=2, head_dim=8),
    "cohere": _decoder("CohereConfig", "CohereModel", num_key_value_heads=2),
    "olmo": _decoder("OlmoConfig", "OlmoModel"),
    "granite": _decoder("GraniteConfig", "GraniteModel", num_key_value_heads=2),
    "phi3": _decoder("Phi3Config", "Phi3Model", num_key_value_heads=2),
    "starcoder2": _decoder(
        "Starcoder2Config", "Starcoder2Model", num_key_value_heads=2, sliding_window=3
    ),
    "xglm": xglm,
    "diffllama": diffllama,
    "mobilebert": mobilebert,
    "xlm-roberta": _bertlike("XLMRobertaConfig", "XLMRobertaModel", pad_token_id=1),
    "camembert": _bertlike("CamembertConfig", "CamembertModel", pad_token_id=1),
    "data2vec-text": _bertlike("Data2VecTextConfig", "Data2VecTextModel", pad_token_id=1),
    "mpnet": mpnet,
    "nystromformer": _bertlike(
        "NystromformerConfig",
        "NystromformerModel",
        num_landmarks=6,
        segment_means_seq_len=6,
        conv_kernel_size=3,
    ),  # as many landmarks as tokens: the exact softmax path
    "squeezebert": squeezebert,
    "m2m100": _seq("M2M100Config", "M2M100Model"),
    "marian": _seq("MarianConfig", "MarianModel"),
    "mbart": _seq("MBartConfig", "MBartModel"),
    "pegasus": _seq("PegasusConfig", "PegasusModel"),
    "beit": _vision(
        "BeitConfig",
        "BeitModel",
        {"self": r"attention\.o_proj$"},
        use_relative_position_bias=True,
    ),
    "data2vec-vision": _vision(
        "Data2VecVisionConfig",
        "Data2VecVisionModel",
        {"self": r"attention\.output\.dense$"},
        attn_implementation="eager",
    ),  # its attention class is fixed when built: eager, as its error message says
    "dinov2": dinov2,
    "wav2vec2": _audio("Wav2Vec2Config", "Wav2Vec2Model"),
    "hubert": _audio("HubertConfig", "HubertModel"),
}


def nystromformer_landmarks():
    model = _make(
        None, "NystromformerConfig", "NystromformerModel", num_landmarks=3,
        segment_means_seq_len=6, conv_kernel_size=3, **_BERTLIKE,
    )  # fmt: skip
    return model, {"input_ids": _text()["input_ids"]}, {}


def data2vec_vision_sdpa():  # built with its default (SDPA) attention class
    model = _make(None, "Data2VecVisionConfig", "Data2VecVisionModel", **_VISION)
    return model, _pixels(), {}


def convbert():  # half of its heads are convolutions (head_ratio=2)
    model = _make(
        None, "ConvBertConfig", "ConvBertModel", embedding_size=32, head_ratio=2, **_BERTLIKE
    )
    return model, _text(), {}


def canine():  # characters downsampled between its stacks
    model = _make(
        None, "CanineConfig", "CanineModel", hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=37, downsampling_rate=2, num_hash_buckets=64,
        local_transformer_stride=4,
    )  # fmt: skip
    ids = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(6))
    return model, {"input_ids": ids, "attention_mask": torch.ones(2, 8, dtype=torch.long)}, {}


def fnet():  # Fourier mixing, no attention
    model = _make(
        None, "FNetConfig", "FNetModel", vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
        intermediate_size=37, max_position_embeddings=32,
    )  # fmt: skip
    return model, {"input_ids": _text()["input_ids"]}, {}


# refused by the layout check alone (no entry in skorg's family table)
MORE_REFUSED = {
    "convbert": convbert,
    "canine": canine,
    "fnet": fnet,
    "prophetnet": prophetnet,
    "yoso": _bertlike("YosoConfig", "YosoModel", use_expectation=True, conv_window=None),
    "nystromformer-landmarks": nystromformer_landmarks,
    "data2vec-vision-sdpa": data2vec_vision_sdpa,
    "convnext": convnext,
    "mobilevit": mobilevit,
}
