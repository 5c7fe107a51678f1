"""Layout checks of transformers attention, the layers and heads their configs name, and the
families skorg refuses, with the reason.

Values alone do not prove that a tensor is a query x key map: a banded (query, window offset)
tensor, windows folded into the sample axis or a dropped block all hold true probabilities.
So the first batch of every extraction also checks the layout against the input (sample axis,
head count, query and key lengths, number of layers, softmax calls that nothing accounts for),
and the families whose attention is not a full query x key map are refused by name, with the
reason, before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from . import _windowed

_STAGES = (
    "layers of different sizes (pooled or subsampled stages) cannot be stacked into one "
    "(layer, head, query, key) tensor"
)

# model_type -> reason (a string, or a function of the config returning a string or None)
_REFUSED = {
    "maskformer-swin": (
        "its forward fails with output_attentions=True in this transformers (its stages "
        "return no attentions to collect), so skorg cannot check its windowed maps against "
        "the model's own"
    ),
    "reformer": (
        "LSH and chunked local attention: its softmaxes run over hash buckets and chunks "
        "(5-D tensors), not over the input's keys"
    ),
    "longt5": (
        "the encoder's local or transient-global attention runs its softmax over blocks of "
        "the sequence (5-D tensors), not over the input's keys"
    ),
    "pegasus_x": (
        "block-local attention with global tokens: each encoder layer calls two softmaxes, "
        "one for the global tokens and one (5-D) over blocks, neither a query x key map of "
        "the input"
    ),
    "prophetnet": (
        "n-gram prediction: the decoder's self- and cross-attention stack the main stream and "
        "the predict streams on the query axis, and its encoder's output_attentions hold the "
        "scores before the mask"
    ),
    "mobilevit": (
        "attention inside unfolded patches: its softmax's sample axis holds pixel positions "
        "within patches, not images"
    ),
    "rwkv": (
        "an attention-free (recurrent) family: its 'attentions' output is the time-mixing "
        "state, not attention probabilities"
    ),
    "mamba": "an attention-free (state-space) family: it computes no attention",
    "mamba2": "an attention-free (state-space) family: it computes no attention",
    "nystromformer": lambda config: (
        "Nystrom approximation: with fewer landmarks than the sequence length its attention "
        "is a product of softmaxes over landmarks, not a query x key softmax"
        if config.num_landmarks != config.segment_means_seq_len
        else None
    ),
    "yoso": (
        "LSH-sampled attention: no query x key probabilities are computed (its 'attentions' "
        "output is the context)"
    ),
}

# families whose layers differ in size, returned as one group of maps per run of equal-sized
# layers (RaggedAttentionMaps); the reason is said in its source
_RAGGED = {
    "funnel": (
        "its queries (and then its keys) are pooled between blocks, and FunnelModel's decoder "
        "attends over the upsampled full length again"
    ),
    "segformer": "its stages reduce the image and its keys are spatially reduced",
    "levit": (
        "its stages shrink the image, and the attention layer between two stages has the "
        "stride-subsampled positions as queries and the full grid as keys"
    ),
}

# families whose maps are read exactly but whose heads cannot be gated one by one
_NOT_GATEABLE = {
    "diffllama": (
        "differential attention: the model combines softmax heads h and h + H/2 as "
        "P_h - lambda * P_(h + H/2) and normalizes the difference, so zeroing one softmax head "
        "does not remove one head's contribution"
    ),
    "nystromformer": lambda config: (
        "each head adds a depthwise convolution of its values (conv_kernel_size) to its "
        "attention output, which gating the attention probabilities leaves in place"
        if config.conv_kernel_size is not None
        else None
    ),
}

# families whose configs list blocks and heads per stage (all attention layers are "self")
_STAGED = ("swin", "swinv2", "donut-swin", "swin2sr", "segformer")

# how a family's maps relate to the map the model uses, said in AttentionMaps.source
_NOTES = {
    "levit": (
        "; LeViT returns no attentions: the maps are the softmax calls of its attention and "
        "subsampling-attention layers (positions row-major), in forward order; each head's "
        "context passes a Hardswish before the projection, so a gate of 0 removes the head "
        "exactly and other gates scale its context before that activation"
    ),
    "diffllama": (
        "; each layer calls its softmax twice with the same queries and keys, and the model "
        "uses P_h - lambda * P_(h + H/2) per head pair (differential attention): skorg returns "
        "the per-softmax-head maps P_h"
    ),
}

_NO_ATTENTION_TYPES = ("linear", "mamba", "conv", "recurrent", "ssm", "rnn")


def family(model):
    config = getattr(model, "config", None)
    return getattr(config, "model_type", None) or type(model).__name__


def refusal(model, *, masking=False):
    """The reason skorg refuses this family (extraction, or masking too), or None."""
    reason = _REFUSED.get(family(model))
    if callable(reason):
        reason = reason(model.config)
    if masking and reason is None:
        reason = _NOT_GATEABLE.get(family(model))
        if callable(reason):
            reason = reason(model.config)
    if reason is None:
        return None
    if masking:
        return (
            f"{family(model)}: {reason}; skorg gates only heads whose contribution it can "
            "remove exactly, so it refuses to mask this family."
        )
    return (
        f"{family(model)}: {reason}; skorg reads full query x key attention only, so it "
        "refuses this family."
    )


def ragged(model):
    """Why this family's layers differ in size (they are then returned per group), or None."""
    return _RAGGED.get(family(model))


def note(model):
    """What the source of a family's maps should add: how they relate to what the model uses."""
    text = _NOTES.get(family(model), "")
    if ragged(model) is not None:
        text += (
            f"; layers of different sizes ({ragged(model)}): one AttentionMaps per group of "
            "equal-sized layers, each with the model's layer indices"
        )
    config = getattr(model, "config", None)
    layers = attention_layer_types(config)
    total = getattr(config, "num_hidden_layers", None)
    if layers is not None and isinstance(total, int) and len(layers) < total:
        text += (
            f"; a hybrid: attention layers 0 to {len(layers) - 1} are the model's layers "
            f"{layers} of {total} (the others compute no attention)"
        )
    return text


def attention_layer_types(config):
    """Indices of the layers that run attention, from the config's layer types, or None."""
    types = getattr(config, "layers_block_type", None) or getattr(config, "layer_types", None)
    if not isinstance(types, list | tuple) or not all(isinstance(t, str) for t in types):
        return None
    return [i for i, t in enumerate(types) if not any(w in t.lower() for w in _NO_ATTENTION_TYPES)]


def input_layout(batch):
    """Batch size and the text lengths ``{"text": L, "decoder": L}`` of one batch, if known.

    The lengths are known only for text-only inputs (ids and their masks), whose attention has
    one query and one key per token; other inputs (pixels, audio, several modalities) give only
    the batch size.
    """
    if isinstance(batch, torch.Tensor):
        tensors = {"input_ids" if not batch.is_floating_point() else "input": batch}
    elif isinstance(batch, Mapping) or hasattr(batch, "keys"):
        tensors = {k: batch[k] for k in batch.keys() if isinstance(batch[k], torch.Tensor)}
    else:
        return None, {}
    sizes = [t.shape[0] for t in tensors.values() if t.dim() >= 1]
    n = sizes[0] if sizes and all(s == sizes[0] for s in sizes) else None
    text_keys = {
        "input_ids", "attention_mask", "token_type_ids", "position_ids", "decoder_input_ids",
        "decoder_attention_mask",
    }  # fmt: skip
    lengths = {}
    if set(tensors) <= text_keys:
        for key, name in (("input_ids", "text"), ("decoder_input_ids", "decoder")):
            if key in tensors and tensors[key].dim() == 2:
                lengths[name] = tensors[key].shape[1]
    return n, lengths


def expected_axes(kind, lengths, seq2seq):
    """(query length, key length) that a kind of attention must have, None where unknown."""
    text, dec = lengths.get("text"), lengths.get("decoder")
    if kind == "cross":
        return dec, text
    if kind == "decoder":
        return dec, dec
    if kind == "self" and seq2seq:
        return None, None
    return text, text


def check_layout(model, kind, tensors, batch, *, seq2seq, heads, n_layers, what):
    """Raise a clear error unless ``tensors`` (one per layer) are (batch, heads, query, key) maps.

    ``heads`` and ``n_layers`` are what the config says (None where it does not say); ``what``
    names the tensors in the message (e.g. "output_attentions").
    """
    name = family(model)
    for layer, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(
                f"{name}: its {what} holds a {type(t).__name__} for {kind} layer {layer}, not "
                "an attention tensor; its attention cannot be read."
            )
        if t.dim() != 4:
            raise TypeError(
                f"{name}: its {what} of {kind} layer {layer} is {t.dim()}-D (shape "
                f"{tuple(t.shape)}), not (batch, heads, query, key) probabilities; its attention "
                "cannot be read as query x key maps."
            )
    n, lengths = input_layout(batch)
    shapes = [tuple(t.shape) for t in tensors]
    if len(set(shapes)) > 1:
        if ragged(model) is None and name not in _windowed.FAMILIES:
            raise ValueError(
                f"{name}: its {kind} layers have attention maps of different sizes {shapes}: "
                f"{_STAGES}; skorg refuses it."
            )
        _check_stages(name, kind, shapes, n, heads, expected_axes(kind, lengths, seq2seq))
        _check_count(name, kind, tensors, n_layers)
        return
    b, h, q, k = shapes[0]
    if isinstance(heads, tuple):  # one head count per layer, all equal here
        heads = heads[0] if len(set(heads)) == 1 else -1
    if n is not None and b != n and not _windows(name, b, n):
        raise ValueError(
            f"{name}: the sample axis of its {kind} attention holds {b} entries for a batch of "
            f"{n} inputs (windows or patches folded into it); the maps are not per input, so "
            "skorg refuses them."
        )
    if heads is not None and h != heads:
        raise ValueError(
            f"{name}: its {kind} attention has {h} entries on the head axis but the config says "
            f"{heads} heads; skorg refuses maps whose head axis it cannot name."
        )
    want_q, want_k = expected_axes(kind, lengths, seq2seq)
    if (want_q is not None and q != want_q) or (want_k is not None and k != want_k):
        raise ValueError(
            f"{name}: its {kind} attention is {q} queries x {k} keys for an input of "
            f"{want_q} x {want_k} tokens (a banded, blocked or pooled layout); skorg returns "
            "full query x key maps only, so it refuses them."
        )
    if kind != "cross" and want_q is None and q != k:
        raise ValueError(
            f"{name}: its {kind} attention is {q} queries x {k} keys, not square; skorg "
            "refuses self-attention maps whose query and key axes differ."
        )
    _check_count(name, kind, tensors, n_layers)


def _check_count(name, kind, tensors, n_layers):
    if n_layers is not None and len(tensors) != n_layers:
        raise ValueError(
            f"{name}: it returns {kind} attention for {len(tensors)} layers but has {n_layers} "
            "attention layers; skorg refuses maps with layers missing."
        )


def _check_stages(name, kind, shapes, n, heads, want):
    """Layers of different sizes: each one per input, the first on the input's tokens, the
    later ones on at most as many queries and keys (pooled or reduced, never more)."""
    for layer, (b, h, q, k) in enumerate(shapes):
        if n is not None and b != n and not _windows(name, b, n):
            raise ValueError(
                f"{name}: the sample axis of its {kind} layer {layer} holds {b} entries for a "
                f"batch of {n} inputs; the maps are not per input, so skorg refuses them."
            )
        want_h = heads[layer] if isinstance(heads, tuple) and layer < len(heads) else heads
        if want_h is not None and h != want_h:
            raise ValueError(
                f"{name}: its {kind} layer {layer} has {h} entries on the head axis but the "
                f"config says {want_h} heads; skorg refuses maps whose head axis it cannot name."
            )
        for got, limit, axis in ((q, want[0], "queries"), (k, want[1], "keys")):
            if limit is not None and (got > limit or (layer == 0 and got != limit)):
                raise ValueError(
                    f"{name}: its {kind} layer {layer} has {got} {axis} for an input of "
                    f"{limit} tokens; skorg refuses maps whose axes it cannot name."
                )


def _windows(name, b, n):
    """A windowed family's sample axis: a whole number of windows per input."""
    return name in _windowed.FAMILIES and b % n == 0


def is_seq2seq(model):
    """An encoder-decoder model with both stacks (not one stack of it, such as BartEncoder)."""
    if not getattr(model.config, "is_encoder_decoder", False):
        return False
    tops = {name.split(".")[0] for name, _ in model.named_children()}
    return "encoder" in tops and "decoder" in tops


def _stage_counts(model):
    """Staged families (Swin, SegFormer): every block of every stage, and the most heads.

    Their configs list blocks and heads per stage; where the stages differ in heads,
    :func:`layer_heads` gives every layer's count.
    """
    config = model.config
    depths = getattr(config, "depths", None)
    heads = getattr(config, "num_heads", None) or getattr(config, "num_attention_heads", None)
    if not isinstance(depths, list | tuple) or not isinstance(heads, list | tuple):
        return None
    return {"self": (int(sum(depths)), int(max(heads)))}


def layer_heads(model):
    """Heads of every attention layer where they differ between stages (Swin, SegFormer)."""
    if family(model) == "levit":
        heads = tuple(h for _, h in _levit_layers(model))
        return heads if len(set(heads)) > 1 else None
    if family(model) not in _STAGED:
        return None
    config = model.config
    depths = getattr(config, "depths", None)
    heads = getattr(config, "num_heads", None) or getattr(config, "num_attention_heads", None)
    if not isinstance(depths, list | tuple) or not isinstance(heads, list | tuple):
        return None
    if len(set(heads)) == 1:
        return None
    return tuple(int(h) for h, d in zip(heads, depths, strict=True) for _ in range(int(d)))


def layer_counts(model):
    """Number of layers and heads of every kind of attention of a transformers model."""
    config = model.config
    kinds = {}
    if family(model) == "levit":
        layers = _levit_layers(model)
        return {"self": (len(layers), max(h for _, h in layers))}
    staged = _stage_counts(model) if family(model) in _STAGED else None
    if staged is not None:
        return staged
    if is_seq2seq(model):
        enc = _first(config, ("encoder_layers", "num_layers", "num_hidden_layers"))
        dec = _first(config, ("decoder_layers", "num_decoder_layers", "num_layers"))
        h_enc = _first(config, ("encoder_attention_heads", "num_heads", "num_attention_heads"))
        h_dec = _first(config, ("decoder_attention_heads", "num_heads", "num_attention_heads"))
        kinds = {"encoder": (enc, h_enc), "decoder": (dec, h_dec), "cross": (dec, h_dec)}
    else:
        n = _first(config, ("num_hidden_layers", "n_layer", "num_layers", "n_layers"))
        h = _first(config, ("num_attention_heads", "n_head", "num_heads", "n_heads"))
        attention_layers = attention_layer_types(config)
        if attention_layers is not None and n is not None and len(attention_layers) < n:
            n = len(attention_layers)  # hybrids: their attention layers only, in order
        if family(model) == "funnel" and n is not None and _has_module(model, "FunnelDecoder"):
            n += int(config.num_decoder_layers)  # FunnelModel: the upsampling decoder's layers
        kinds = {"self": (n, h)}
        if getattr(config, "add_cross_attention", False):
            kinds["cross"] = (n, h)
    missing = [k for k, (n, h) in kinds.items() if n is None or h is None]
    if missing:
        raise TypeError(
            f"{family(model)}: its config names no number of attention layers and heads (a "
            f"model without attention, or one that names them otherwise: {missing} attention); "
            "its heads cannot be masked."
        )
    return {k: (int(n), int(h)) for k, (n, h) in kinds.items()}


def _levit_layers(model):
    """LeViT's attention modules in forward order (that of registration), with their heads."""
    names = ("LevitAttention", "LevitAttentionSubsample")
    return [(m, int(m.num_attention_heads)) for m in model.modules() if type(m).__name__ in names]


def _has_module(model, name):
    return any(type(m).__name__ == name for m in model.modules())


def _first(config, names):
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def eager_hint(model):
    """A hint for families that fix a fused attention class when they are built."""
    fused = ("Sdpa", "FlashAttention", "Flash2")
    if not any(any(f in type(m).__name__ for f in fused) for m in model.modules()):
        return ""
    return (
        " This family fixes its attention class when it is built: load it with "
        "attn_implementation='eager'."
    )
