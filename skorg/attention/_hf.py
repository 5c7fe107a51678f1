"""Hugging Face transformers backend: a registered attention function that records scores.

Fast kernels (sdpa, flash) never form the attention matrix, so ``output_attentions`` returns
nothing with them. Instead of relying on it, skorg registers its own implementation through
``transformers.AttentionInterface`` (an exact re-statement of the eager computation that also
reports the softmax input), switches the model to it for the duration of the extraction and
switches back afterwards.
"""

from __future__ import annotations

import contextlib
import re

import torch

_NAME = "skorg_capture"
_ACTIVE = []  # recorders; a stack so nested extractions stay well defined
_REGISTERED = False

# Output projections whose input is the concatenation of the heads, by module-name suffix.
_OUT_PROJ = re.compile(
    r"(^|\.)(attention\.output\.dense|attn\.c_proj|self_attn\.o_proj|self_attn\.out_proj|"
    r"attention\.o_proj|attention\.dense)$"
)


def _skorg_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kw):
    if key.shape[1] != query.shape[1]:  # grouped-query attention shares key/value heads
        rep = query.shape[1] // key.shape[1]
        key = key.repeat_interleave(rep, dim=1)
        value = value.repeat_interleave(rep, dim=1)
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    scores = torch.matmul(query, key.transpose(-1, -2)) * scaling
    b, _, nq, nk = scores.shape
    if attention_mask is None:
        valid = torch.ones((b, nq, nk), dtype=torch.bool, device=scores.device)
    else:
        mask = attention_mask[:, :, :, :nk]
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            allowed = mask
        else:
            scores = scores + mask
            allowed = mask > torch.finfo(mask.dtype).min / 2
        valid = allowed[:, 0].expand(b, nq, nk)
    probs = torch.nn.functional.softmax(scores, dim=-1)
    probs = torch.nn.functional.dropout(probs, p=dropout, training=module.training)
    if _ACTIVE:
        rec = _ACTIVE[-1]
        layer = rec.next_layer()
        if rec.wants(layer):
            logits = scores.masked_fill(~valid[:, None], float("-inf"))
            rec.record(layer, logits, probs, valid)
    out = torch.matmul(probs.to(value.dtype), value).transpose(1, 2).contiguous()
    return out, probs


def _register():
    global _REGISTERED
    if _REGISTERED:
        return
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(_NAME, _skorg_attention)
    # the eager mask is additive and float: 0 where allowed, the dtype minimum elsewhere
    AttentionMaskInterface.register(_NAME, eager_mask)
    _REGISTERED = True


@contextlib.contextmanager
def use_capture_implementation(model):
    """Switch a transformers model to skorg's attention function, and back afterwards."""
    _register()
    original = model.config._attn_implementation
    if not hasattr(model, "set_attn_implementation"):
        raise TypeError(
            f"{type(model).__name__} cannot switch its attention implementation; skorg needs "
            "transformers >= 4.48 models built on AttentionInterface."
        )
    model.set_attn_implementation(_NAME)
    if model.config._attn_implementation != _NAME:
        raise RuntimeError(
            f"{type(model).__name__} does not dispatch through AttentionInterface, so its "
            "attention cannot be captured; load it with attn_implementation='eager' and read "
            "output_attentions instead."
        )
    try:
        yield
    finally:
        model.set_attn_implementation(original)


@contextlib.contextmanager
def capturing(model, recorder):
    with use_capture_implementation(model):
        _ACTIVE.append(recorder)
        try:
            yield
        finally:
            _ACTIVE.pop()


def run(model, batch):
    if isinstance(batch, dict) or hasattr(batch, "keys"):
        return model(**batch)
    return model(batch)


def out_projections(model):
    """The output projection of every self-attention layer, in module order."""
    units = [m for name, m in model.named_modules() if _OUT_PROJ.search(name)]
    if not units:
        raise TypeError(
            f"cannot find the attention output projections of {type(model).__name__} "
            "(known names: *.attention.output.dense, *.attn.c_proj, *.self_attn.o_proj, ...)."
        )
    config = model.config
    n_heads = getattr(config, "num_attention_heads", None) or getattr(config, "n_head", None)
    return units, int(n_heads)
