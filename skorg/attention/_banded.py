"""Longformer's sliding-window attention as query x key maps.

Its softmax runs over a band: a (batch, query, head, offset) tensor whose 2w + 1 columns are the
keys at offsets -w..w of each query. skorg places every offset at its key, so that the result is
a (batch, head, query, key) map in which the keys outside a query's window are masked (logit
``-inf``, probability 0, ``mask`` False), never zero-probability keys that the query could
have attended. The query rows of padding tokens, which the model zeroes after its softmax, have
no allowed key. Global attention (``global_attention_mask``) adds global keys to every row and a
second softmax for the global queries; it is refused. Head masking gates the heads on axis 2
of that softmax (skorg/attention/_hf_gating.py).
"""

from __future__ import annotations

import torch

FAMILIES = ("longformer", "led")  # LED: its encoder
_CLASSES = ("LongformerSelfAttention", "LEDEncoderSelfAttention")

SOURCE = (
    "; sliding-window attention (LED: its encoder's) placed on the query x key grid: the "
    "keys outside each query's window are masked (logits -inf, mask False)"
)


def expand(band, length, fill):
    """(batch, head, query, 2w + 1) offsets to (batch, head, query, length) keys; fill elsewhere."""
    b, h, q, width = band.shape
    w = (width - 1) // 2
    # offset j of query i is key i + j - w, column i + j of a key axis padded by w on each side
    cols = torch.arange(q, device=band.device)[:, None] + torch.arange(width, device=band.device)
    out = band.new_full((b, h, q, q + 2 * w), fill)
    out.scatter_(-1, cols.expand(b, h, q, width), band)
    return out[..., w : w + length]


class Banded:
    """Expands the softmax calls and the returned attentions of a Longformer model."""

    def __init__(self, model):
        self.model = model
        self.family = model.config.model_type
        self.modules = {m for m in model.modules() if type(m).__name__ in _CLASSES}
        windows = model.config.attention_window
        windows = windows if isinstance(windows, list | tuple) else [windows]
        self.widths = {int(w) + 1 for w in windows}
        self.length = None
        self.padding = None

    def prepare(self, batch):
        """The batch's sequence length and padding, which the model's own padding hides."""
        ids = batch.get("input_ids") if hasattr(batch, "get") else batch
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
            raise TypeError(
                f"{self.family}: skorg reads its sliding-window attention from input_ids of "
                "shape (batch, sequence)."
            )
        if hasattr(batch, "get") and batch.get("global_attention_mask") is not None:
            if bool(batch["global_attention_mask"].any()):
                raise ValueError(self.refusal())
        self.length = ids.shape[1]
        mask = batch.get("attention_mask") if hasattr(batch, "get") else None
        self.padding = None if mask is None else mask == 0

    def refusal(self):
        return f"{self.family}: {GLOBAL}"

    def applies(self, module):
        return module in self.modules

    def expand_call(self, logits, probs):
        """One softmax call (batch, padded query, head, offset) as (batch, head, query, key)."""
        if probs.dim() != 4 or probs.shape[-1] not in self.widths:
            raise ValueError(self.refusal())
        n = self.length
        logits = expand(logits.transpose(1, 2)[:, :, :n], n, float("-inf"))
        probs = expand(probs.transpose(1, 2)[:, :, :n], n, 0.0)
        if self.padding is not None:  # the model zeroes the rows of padding queries
            rows = self.padding.to(probs.device)[:, None, :, None]
            logits = logits.masked_fill(rows, float("-inf"))
            probs = probs.masked_fill(rows, 0.0)
        return logits, probs

    def expand_outputs(self, kind, attentions):
        """The returned attentions of one kind: the self-attention of the banded stack expanded."""
        if kind not in ("self", "encoder"):  # LED's decoder and cross-attention are full
            return attentions
        return [self.expand_output(t) for t in attentions]

    def expand_output(self, attention):
        """One returned attention (batch, head, query, offset) as (batch, head, query, key)."""
        if attention.dim() != 4 or attention.shape[-1] not in self.widths:
            raise ValueError(self.refusal())
        return expand(attention, self.length, 0.0)


GLOBAL = (
    "global attention (global_attention_mask, set by some task heads) adds the "
    "global tokens as keys of every row and a second softmax for the global queries; skorg "
    "reads its sliding-window attention without global tokens only, so it refuses this input."
)
