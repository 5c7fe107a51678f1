"""Tiny random models of every supported family, with a padded batch each (no download).

Each builder returns ``(model, batch, out_proj)``: the model in eval mode (its default attention
implementation), one batch in which the second input is padded, and for every kind of
attention a regular expression matching the module names of its output projections (whose
input is the concatenation of the heads), used as an independent oracle of head masking.
"""

from __future__ import annotations

import importlib

import torch

SEQ = 6
VOCAB = 60


def _ids(n=2, seq=SEQ, pad_from=4, seed=1):
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, VOCAB, (n, seq), generator=gen)
    mask = torch.ones(n, seq, dtype=torch.long)
    mask[1, pad_from:] = 0
    ids[1, pad_from:] = 0
    return ids, mask


def _text(extra=None):
    ids, mask = _ids()
    batch = {"input_ids": ids, "attention_mask": mask}
    batch.update(extra or {})
    return batch


def _seq2seq():
    ids, mask = _ids()
    dec, dec_mask = _ids(seq=5, pad_from=3, seed=2)
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "decoder_input_ids": dec,
        "decoder_attention_mask": dec_mask,
    }


def _pixels(channels=1, size=8):
    gen = torch.Generator().manual_seed(3)
    return {"pixel_values": torch.randn(2, channels, size, size, generator=gen)}


def _make(module, config_name, model_name, **kwargs):
    mod = importlib.import_module("transformers")
    config = getattr(mod, config_name)(**kwargs)
    torch.manual_seed(0)
    return getattr(mod, model_name)(config).eval()


_DROP = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
_BERTLIKE = dict(
    vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
    intermediate_size=37, max_position_embeddings=32, **_DROP,
)  # fmt: skip
_DECODER = dict(
    vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
    intermediate_size=37, max_position_embeddings=32, pad_token_id=0, bos_token_id=1,
    eos_token_id=2,
)  # fmt: skip


def bert():
    return (
        _make(None, "BertConfig", "BertModel", **_BERTLIKE),
        _text(),
        {"self": r"attention\.output\.dense$"},
    )


def roberta():
    cfg = dict(_BERTLIKE, pad_token_id=1)
    return (
        _make(None, "RobertaConfig", "RobertaModel", **cfg),
        _text(),
        {"self": r"attention\.output\.dense$"},
    )


def distilbert():
    model = _make(
        None, "DistilBertConfig", "DistilBertModel", vocab_size=VOCAB, dim=32, n_layers=2,
        n_heads=4, hidden_dim=37, max_position_embeddings=32, dropout=0.0, attention_dropout=0.0,
    )  # fmt: skip
    return model, _text(), {"self": r"attention\.out_lin$"}


def albert():
    model = _make(
        None, "AlbertConfig", "AlbertModel", embedding_size=16, **_BERTLIKE
    )  # one shared layer run twice
    return model, _text(), {"self": r"attention\.dense$"}


def electra():
    model = _make(None, "ElectraConfig", "ElectraModel", embedding_size=16, **_BERTLIKE)
    return model, _text(), {"self": r"attention\.output\.dense$"}


def deberta_v2():
    model = _make(
        None, "DebertaV2Config", "DebertaV2Model", relative_attention=True,
        pos_att_type=["p2c", "c2p"], position_buckets=8, max_relative_positions=16, **_BERTLIKE,
    )  # fmt: skip
    return model, _text(), {"self": r"attention\.output\.dense$"}


def gpt2():
    model = _make(
        None, "GPT2Config", "GPT2Model", vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4,
        n_positions=32, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=1,
        eos_token_id=2,
    )  # fmt: skip
    return model, _text(), {"self": r"attn\.c_proj$"}


def gpt_neo():
    model = _make(
        None, "GPTNeoConfig", "GPTNeoModel", vocab_size=VOCAB, hidden_size=32, num_layers=2,
        num_heads=4, attention_types=[[["global", "local"], 1]], window_size=3,
        max_position_embeddings=32, embed_dropout=0.0, attention_dropout=0.0,
        resid_dropout=0.0, bos_token_id=1, eos_token_id=2,
    )  # fmt: skip
    return model, _text(), {"self": r"attn\.attention\.out_proj$"}


def llama():
    model = _make(None, "LlamaConfig", "LlamaModel", num_key_value_heads=2, **_DECODER)  # GQA
    return model, _text(), {"self": r"self_attn\.o_proj$"}


def mistral():
    model = _make(
        None, "MistralConfig", "MistralModel", num_key_value_heads=2, sliding_window=3, **_DECODER
    )
    return model, _text(), {"self": r"self_attn\.o_proj$"}


def qwen2():
    model = _make(None, "Qwen2Config", "Qwen2Model", num_key_value_heads=2, **_DECODER)
    return model, _text(), {"self": r"self_attn\.o_proj$"}


def gemma2():
    model = _make(
        None, "Gemma2Config", "Gemma2Model", num_key_value_heads=2, head_dim=8,
        attn_logit_softcapping=2.0, final_logit_softcapping=None, query_pre_attn_scalar=8,
        sliding_window=4, **_DECODER,
    )  # fmt: skip
    with torch.no_grad():  # larger queries and keys, so that the soft cap acts
        for layer in model.layers:
            layer.self_attn.q_proj.weight.mul_(25.0)
            layer.self_attn.k_proj.weight.mul_(25.0)
    return model, _text(), {"self": r"self_attn\.o_proj$"}


def phi():
    model = _make(
        None, "PhiConfig", "PhiModel", partial_rotary_factor=0.5, resid_pdrop=0.0,
        embd_pdrop=0.0, attention_dropout=0.0, **_DECODER,
    )  # fmt: skip
    return model, _text(), {"self": r"self_attn\.dense$"}


def gpt_oss():
    model = _make(
        None, "GptOssConfig", "GptOssModel", num_key_value_heads=2, head_dim=8,
        num_local_experts=2, num_experts_per_tok=1, sliding_window=4,
        layer_types=["sliding_attention", "full_attention"],
        **dict(_DECODER, intermediate_size=32),  # grouped_mm needs 16-byte aligned strides
    )  # fmt: skip
    with torch.no_grad():  # sinks of a trained model are far from zero
        for layer in model.layers:
            layer.self_attn.sinks.copy_(torch.tensor([0.5, -1.0, 1.5, 0.0]))
    return model, _text(), {"self": r"self_attn\.o_proj$"}


def falcon():
    model = _make(
        None, "FalconConfig", "FalconModel", vocab_size=VOCAB, hidden_size=32,
        num_hidden_layers=2, num_attention_heads=4, alibi=True, new_decoder_architecture=False,
        multi_query=False, parallel_attn=True, bias=True, hidden_dropout=0.0,
        attention_dropout=0.0, bos_token_id=1, eos_token_id=2,
    )  # fmt: skip
    return model, _text(), {"self": r"self_attention\.dense$"}


def bloom():
    model = _make(
        None, "BloomConfig", "BloomModel", vocab_size=VOCAB, hidden_size=32, n_layer=2,
        n_head=4, hidden_dropout=0.0, attention_dropout=0.0, bos_token_id=1, eos_token_id=2,
    )  # fmt: skip
    return model, _text(), {"self": r"self_attention\.dense$"}


def t5():
    model = _make(
        None, "T5Config", "T5Model", vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=37,
        num_layers=2, num_decoder_layers=2, num_heads=4, relative_attention_num_buckets=8,
        dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0,
    )  # fmt: skip
    out = {
        "encoder": r"encoder\.block\.\d+\.layer\.0\.SelfAttention\.o$",
        "decoder": r"decoder\.block\.\d+\.layer\.0\.SelfAttention\.o$",
        "cross": r"EncDecAttention\.o$",
    }
    return model, _seq2seq(), out


def bart():
    model = _make(
        None, "BartConfig", "BartModel", vocab_size=VOCAB, d_model=32, encoder_layers=2,
        decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=37, decoder_ffn_dim=37, max_position_embeddings=32, dropout=0.0,
        attention_dropout=0.0, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        decoder_start_token_id=2,
    )  # fmt: skip
    out = {
        "encoder": r"encoder\.layers\.\d+\.self_attn\.out_proj$",
        "decoder": r"decoder\.layers\.\d+\.self_attn\.out_proj$",
        "cross": r"encoder_attn\.out_proj$",
    }
    return model, _seq2seq(), out


def whisper():
    model = _make(
        None, "WhisperConfig", "WhisperModel", vocab_size=VOCAB, num_mel_bins=8, d_model=32,
        encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=37, decoder_ffn_dim=37,
        max_source_positions=6, max_target_positions=16, dropout=0.0, attention_dropout=0.0,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
    )  # fmt: skip
    gen = torch.Generator().manual_seed(4)
    dec, dec_mask = _ids(seq=5, pad_from=3, seed=2)
    batch = {
        "input_features": torch.randn(2, 8, 12, generator=gen),
        "decoder_input_ids": dec,
        "decoder_attention_mask": dec_mask,
    }
    out = {
        "encoder": r"encoder\.layers\.\d+\.self_attn\.out_proj$",
        "decoder": r"decoder\.layers\.\d+\.self_attn\.out_proj$",
        "cross": r"encoder_attn\.out_proj$",
    }
    return model, batch, out


_VISION = dict(
    image_size=8, patch_size=2, num_channels=1, hidden_size=32, num_hidden_layers=2,
    num_attention_heads=4, intermediate_size=37,
)  # fmt: skip


def vit():
    return (
        _make(None, "ViTConfig", "ViTModel", **_VISION),
        _pixels(),
        {"self": r"attention\.o_proj$"},
    )


def deit():
    return (
        _make(None, "DeiTConfig", "DeiTModel", **_VISION),
        _pixels(),
        {"self": r"attention\.o_proj$"},
    )


def clip_text():
    model = _make(
        None, "CLIPTextConfig", "CLIPTextModel", vocab_size=VOCAB, hidden_size=32,
        num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
        max_position_embeddings=16, pad_token_id=0, bos_token_id=1, eos_token_id=2,
    )  # fmt: skip
    return model, _text(), {"self": r"self_attn\.out_proj$"}


def clip_vision():
    cfg = dict(_VISION, num_channels=3)
    model = _make(None, "CLIPVisionConfig", "CLIPVisionModel", **cfg)
    return model, _pixels(channels=3), {"self": r"self_attn\.out_proj$"}


HF_FAMILIES = {
    "bert": bert,
    "roberta": roberta,
    "distilbert": distilbert,
    "albert": albert,
    "electra": electra,
    "deberta-v2": deberta_v2,
    "gpt2": gpt2,
    "gpt-neo": gpt_neo,
    "llama-gqa": llama,
    "mistral-sliding": mistral,
    "qwen2": qwen2,
    "gemma2-softcap": gemma2,
    "phi": phi,
    "gpt-oss-sinks": gpt_oss,
    "falcon-alibi": falcon,
    "bloom-alibi": bloom,
    "t5": t5,
    "bart": bart,
    "whisper": whisper,
    "vit": vit,
    "deit": deit,
    "clip-text": clip_text,
    "clip-vision": clip_vision,
}
