"""torch.nn.MultiheadAttention backend: recompute the scores from the in-projection weights.

``nn.MultiheadAttention`` called with ``need_weights=False`` (as ``nn.TransformerEncoderLayer``
and most ViT code do) takes a fused kernel that never returns the weights, and
``TransformerEncoderLayer`` in eval mode may skip the module's ``forward`` altogether (the
"fast path"). A forward pre-hook sees the inputs either way once the fast path is switched off
for the duration, and recomputes queries and keys from ``in_proj_weight``.
"""

from __future__ import annotations

import contextlib
import inspect
import math

import torch
import torch.nn.functional as F

from ._softmax import name_kind

_PARAMS = list(inspect.signature(torch.nn.MultiheadAttention.forward).parameters)[1:]
SOURCE = "recomputed from the nn.MultiheadAttention weights"


def modules(model):
    """The attention layers of every kind, ``{kind: [module, ...]}`` in module order.

    Kinds come from the module names: ``multihead_attn`` of ``nn.TransformerDecoderLayer`` is
    cross-attention; in a model with both an ``encoder`` and a ``decoder`` (``nn.Transformer``)
    the self-attention layers are ``"encoder"`` or ``"decoder"``; otherwise ``"self"``.
    """
    named = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.MultiheadAttention)]
    if not named:
        raise TypeError(f"{type(model).__name__} holds no nn.MultiheadAttention layer.")
    stacks = {name_kind(n, True) for n, _ in named} - {"cross"}
    encoder_decoder = stacks == {"encoder", "decoder"}
    units = {}
    for n, m in named:
        units.setdefault(name_kind(n, encoder_decoder), []).append(m)
    return units


def _arguments(args, kwargs):
    bound = dict(zip(_PARAMS, args, strict=False))
    bound.update(kwargs)
    return bound


def attention(mha, bound):
    """Logits (masked entries -inf), probabilities, per-head values and the allowed mask.

    Shapes: logits/probs (B, H, Q, K), values (B, H, K, d), valid (B, Q, K).
    """
    if mha.bias_k is not None or mha.add_zero_attn:
        raise NotImplementedError("add_bias_kv and add_zero_attn are not supported.")
    query, key, value = bound["query"], bound["key"], bound["value"]
    batched = query.dim() == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
    if not mha.batch_first or not batched:
        query, key, value = (t.transpose(0, 1) for t in (query, key, value))
    e, h = mha.embed_dim, mha.num_heads
    d = e // h
    bias = mha.in_proj_bias
    b_q, b_k, b_v = (None, None, None) if bias is None else bias.split(e)
    if mha._qkv_same_embed_dim:
        w_q, w_k, w_v = mha.in_proj_weight.split(e)
    else:
        w_q, w_k, w_v = mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight
    nb, nq, nk = query.shape[0], query.shape[1], key.shape[1]
    q = F.linear(query, w_q, b_q).view(nb, nq, h, d).transpose(1, 2)
    k = F.linear(key, w_k, b_k).view(nb, nk, h, d).transpose(1, 2)
    v = F.linear(value, w_v, b_v).view(nb, nk, h, d).transpose(1, 2)
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
    allowed = torch.ones((nb, h, nq, nk), dtype=torch.bool, device=scores.device)
    attn_mask = bound.get("attn_mask")
    if attn_mask is None and bound.get("is_causal", False):
        attn_mask = torch.ones(nq, nk, dtype=torch.bool, device=scores.device).triu(1)
    for m, shape in ((attn_mask, (nb, h, nq, nk)), (bound.get("key_padding_mask"), None)):
        if m is None:
            continue
        if shape is None:  # key padding: (B, K) or (K,)
            m = m.reshape(-1, 1, 1, nk)
        else:
            m = m.reshape(-1, h, nq, nk) if m.dim() == 3 else m.reshape(1, 1, nq, nk)
        if m.dtype == torch.bool:
            allowed = allowed & ~m
        else:
            scores = scores + m
            allowed = allowed & (m > -math.inf) & (m > torch.finfo(m.dtype).min / 2)
    logits = scores.masked_fill(~allowed, float("-inf"))
    # a query with no allowed key gets no attention (zeros) rather than NaN
    probs = torch.softmax(logits, dim=-1).masked_fill(~allowed.any(-1, keepdim=True), 0.0)
    return logits, probs, v, allowed[:, 0]


def output(mha, probs, v, gates, batched, layout_batch_first):
    """The layer output with per-head gates applied to the head contexts."""
    z = torch.matmul(probs, v) * gates.view(1, -1, 1, 1).to(v.dtype)
    nb, h, nq, d = z.shape
    out = F.linear(z.transpose(1, 2).reshape(nb, nq, h * d), mha.out_proj.weight, mha.out_proj.bias)
    if not layout_batch_first or not batched:
        out = out.transpose(0, 1)
    return out if batched else out.squeeze(1)


@contextlib.contextmanager
def no_fastpath():
    previous = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(previous)


@contextlib.contextmanager
def capturing(model, recorder):
    units = modules(model)
    handles = []

    def make_hook(kind, index):
        def hook(mha, args, kwargs):
            logits, probs, _, valid = attention(mha, _arguments(args, kwargs))
            recorder.record(kind, index, logits, probs, valid)

        return hook

    with no_fastpath():
        try:
            for kind, mhas in units.items():
                for i, mha in enumerate(mhas):
                    hook = make_hook(kind, i)
                    handles.append(mha.register_forward_pre_hook(hook, with_kwargs=True))
            yield
        finally:
            for handle in handles:
                handle.remove()


def run(model, batch):
    if isinstance(batch, dict) or hasattr(batch, "keys"):
        return model(**batch)
    return model(batch)


@contextlib.contextmanager
def gating(model, gates, layers, kind):
    """Replace the output of the gated layers by a recomputation with gated head contexts."""
    units = modules(model)[kind]
    handles = []

    def make_hook(index):
        def hook(mha, args, kwargs, result):
            bound = _arguments(args, kwargs)
            _, probs, v, _ = attention(mha, bound)
            batched = bound["query"].dim() == 3
            out = output(mha, probs, v, gates[index], batched, mha.batch_first)
            return (out, *result[1:])

        return hook

    with no_fastpath():
        try:
            for i in layers:
                h = units[i].register_forward_hook(make_hook(i), with_kwargs=True)
                handles.append(h)
            yield
        finally:
            for handle in handles:
                handle.remove()
