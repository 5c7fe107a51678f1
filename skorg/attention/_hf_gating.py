"""Head gating of transformers models: every softmax of a gated layer, on its head axis."""

from __future__ import annotations

import contextlib
import threading

from . import _banded, _layout
from ._hf import eager
from ._softmax import Session, current_call, name_kind

family = _layout.family


def gating_plan(model):
    """Number of layers and heads of every kind of attention that masking can gate."""
    reason = _layout.refusal(model, masking=True)
    if reason is not None:
        raise TypeError(reason)
    return _layout.layer_counts(model)


class Gating(Session):
    """Multiplies the attention probabilities of every head by its gate, in every thread.

    Gating the probabilities of head h scales its context ``P_h V_h``, which is exactly gating
    its slice of the input of the output projection.
    """

    def __init__(self, model, gates, layouts):
        super().__init__(model, this_thread_only=False)
        self.gates = gates  # kind -> tensor (n_layers, n_heads) or None
        self.layouts = layouts
        # heads of every layer where the stages differ (Swin, SegFormer): self-attention only
        self.layer_heads = {"self": _layout.layer_heads(model)}
        self.encoder_decoder = _layout.is_seq2seq(model)
        self.counts = threading.local()
        self.kinds = {}
        # Longformer: its softmax is (batch, sequence, heads, window), the heads on axis 2
        self.banded = _banded.Banded(model) if family(model) in _banded.FAMILIES else None

    def start_forward(self):
        self.counts.value = {}

    def end_forward(self):
        counts = getattr(self.counts, "value", None) or {}
        for kind, gates in self.gates.items():
            ran = counts.get(kind, (None, -1))[1] + 1
            if ran < len(gates):
                raise RuntimeError(
                    f"{family(self.model)}: only {ran} of {len(gates)} {kind}-attention layers "
                    "ran a softmax that skorg sees, so their heads could not be gated."
                    + _layout.eager_hint(self.model)
                )

    def on_softmax(self, module, logits, probs):
        name = self.names.get(module, "")
        attention_like = any(w in name.lower() for w in ("attn", "attention"))
        if probs.dim() == 3 and not attention_like:
            return probs  # not attention: 3-D softmax calls are gated in attention modules only
        kind = self.kinds.get(module)
        if kind is None:
            kind = self.kinds[module] = name_kind(name, self.encoder_decoder)
        gates = self.gates.get(kind)
        if probs.dim() > 4:
            if gates is None:
                return probs
            raise RuntimeError(
                f"{family(self.model)}: {kind} attention module {name!r} calls a "
                f"{probs.dim()}-D softmax of shape {tuple(probs.shape)} (blocked or bucketed "
                "attention) whose head axis skorg cannot verify; its heads cannot be gated."
            )
        counts = getattr(self.counts, "value", None)
        if counts is None:
            counts = self.counts.value = {}
        # one layer per call of an attention module, however many softmaxes that call makes
        call = current_call()
        last, layer = counts.get(kind, (None, -1))
        if call != last or call is None:
            layer += 1
        counts[kind] = (call, layer)
        if gates is None:
            return probs
        n_layers, n_heads = self.layouts[kind]
        per_layer = self.layer_heads.get(kind)
        if per_layer is not None and layer < n_layers:
            n_heads = per_layer[layer]
        if self.banded is not None and self.banded.applies(module):
            if probs.dim() != 4 or probs.shape[-1] not in self.banded.widths:
                raise ValueError(self.banded.refusal())
            if layer >= n_layers or probs.shape[2] != n_heads:
                raise RuntimeError(
                    f"{family(self.model)}: attention call {layer} has shape "
                    f"{tuple(probs.shape)}, not (batch, sequence, {n_heads} heads, window); its "
                    "heads cannot be gated."
                )
            gate = gates[layer]
            if gate is None:
                return probs
            return probs * gate.to(device=probs.device, dtype=probs.dtype).view(1, 1, -1, 1)
        three_d = probs.dim() == 3 and probs.shape[0] % n_heads == 0
        if layer >= n_layers or not (three_d or probs.shape[1] == n_heads):
            raise RuntimeError(
                f"{family(self.model)}: {kind} attention call {layer} has shape "
                f"{tuple(probs.shape)}, not (batch, {n_heads} heads, query, key) in one of "
                f"{n_layers} layers; its heads cannot be gated."
            )
        gate = gates[layer]
        if gate is None:
            return probs
        gate = gate[:n_heads].to(device=probs.device, dtype=probs.dtype)
        if three_d:  # (batch * heads, query, key), heads varying fastest
            return (probs.unflatten(0, (-1, n_heads)) * gate.view(1, -1, 1, 1)).flatten(0, 1)
        return probs * gate.view(1, -1, 1, 1)


@contextlib.contextmanager
def gating(model, gates, layers, kind):
    """Gate the heads of ``layers`` of one kind of attention with ``gates[layer]``."""
    layouts = gating_plan(model)
    per_layer = [None] * layouts[kind][0]
    for layer in layers:
        per_layer[layer] = gates[layer]
    with eager(model), Gating(model, {kind: per_layer}, layouts):
        yield
