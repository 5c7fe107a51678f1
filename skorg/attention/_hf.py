"""Hugging Face transformers backend: the model's own eager softmax, checked against its outputs.

For the duration of an extraction the model is switched to ``attn_implementation="eager"``
(fast kernels never form the attention matrix) and every softmax called inside one of its
modules is intercepted (:mod:`._softmax`). On the first batch the model also returns its
``output_attentions``; each returned attention tensor is matched with the softmax call that
produced it, which labels the calls (kind and layer) for the following batches and checks,
to 1e-5, that what skorg records is what the model computes. A family whose softmax cannot be
seen is read through ``output_attentions`` on every batch instead, with its logits marked
unavailable.
"""

from __future__ import annotations

import contextlib
import threading
import weakref

import torch

from ._softmax import Session, name_kind

TOLERANCE = 1e-5
SOURCE = "softmax input"

# output_attentions fields and the kind of attention each one holds
_OUTPUT_KINDS = {
    "attentions": "self",
    "encoder_attentions": "encoder",
    "decoder_attentions": "decoder",
    "cross_attentions": "cross",
}

_LOCKS = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def is_seq2seq(model):
    """An encoder-decoder model with both stacks (not one stack of it, such as BartEncoder)."""
    if not getattr(model.config, "is_encoder_decoder", False):
        return False
    tops = {name.split(".")[0] for name, _ in model.named_children()}
    return "encoder" in tops and "decoder" in tops


def family(model):
    config = getattr(model, "config", None)
    return getattr(config, "model_type", None) or type(model).__name__


def _model_lock(model):
    with _LOCKS_GUARD:
        lock = _LOCKS.get(model)
        if lock is None:
            lock = _LOCKS[model] = threading.RLock()
        return lock


def _configs(model):
    """Every distinct config object the model's modules read at forward time."""
    seen = {}
    for module in model.modules():
        config = getattr(module, "config", None)
        if config is not None and hasattr(config, "_attn_implementation"):
            seen.setdefault(id(config), config)
    return list(seen.values())


@contextlib.contextmanager
def eager(model):
    """Run a transformers model with eager attention, and restore its setting afterwards.

    The attention implementation is read from the config at forward time (by the
    AttentionInterface dispatch and by the older families such as Falcon, which do not
    support ``set_attn_implementation``), so the configs are switched directly.
    """
    with _model_lock(model):
        configs = _configs(model)
        saved = [c.__dict__.get("_attn_implementation_internal") for c in configs]
        if all(value == "eager" for value in saved):
            yield
            return
        try:
            for config in configs:
                config._attn_implementation_internal = "eager"
            yield
        finally:
            for config, value in zip(configs, saved, strict=True):
                config._attn_implementation_internal = value


def masked(logits, probs):
    """Allowed entries (B, H, Q, K) of a softmax input: the additive masks use the dtype minimum."""
    threshold = torch.finfo(logits.dtype).min / 2 if logits.is_floating_point() else None
    allowed = logits > threshold if threshold is not None else torch.ones_like(probs, dtype=bool)
    return allowed & ~torch.isneginf(logits)


class _Capture(Session):
    """Records the attention softmax calls of one extraction (the calling thread only)."""

    def __init__(self, model, recorder):
        super().__init__(model, this_thread_only=True)
        self.recorder = recorder
        self.plan = None  # per call in an attention module: (kind, layer, sink) or None
        self.modules = None
        self.probe = []
        self.position = 0

    def start_forward(self):
        self.position = 0

    def on_softmax(self, module, logits, probs):
        if self.plan is None:
            self.probe.append((module, logits.detach(), probs.detach()))
            return probs
        if module not in self.modules:
            return probs
        position = self.position
        self.position += 1
        if position >= len(self.plan):
            raise RuntimeError(
                f"{family(self.model)}: more attention calls than in the first batch "
                f"({len(self.plan)}); skorg reads one architecture per extraction."
            )
        entry = self.plan[position]
        if entry is not None:
            kind, layer, sink = entry
            self.recorder.record_softmax(kind, layer, logits, probs, sink)
        return probs

    def make_plan(self, groups):
        """Match every returned attention tensor with the softmax call that produced it."""
        used = set()
        matched = {}  # probe index -> (kind, layer, sink)
        worst = None
        for kind, tensors in groups:
            start = 0
            for layer, target in enumerate(tensors):
                hit, best = None, None
                for i in range(start, len(self.probe)):
                    if i in used:
                        continue
                    probs = self.probe[i][2]
                    sink = _sink_layout(probs, target)
                    if sink is None:
                        continue
                    got = probs[..., :-1] if sink else probs
                    err = float((got.to(target.dtype) - target).abs().max()) if got.numel() else 0.0
                    if err <= TOLERANCE:
                        hit = (i, sink)
                        break
                    if best is None or err < best[0]:
                        best = (err, kind, layer)
                if hit is None:
                    if best is not None and (worst is None or best[0] > worst[0]):
                        worst = best
                    return None, worst
                used.add(hit[0])
                matched[hit[0]] = (kind, layer, hit[1])
                start = hit[0] + 1
        self.modules = {self.probe[i][0] for i in matched}
        plan = []
        for i, (module, _, _) in enumerate(self.probe):
            if module in self.modules:
                plan.append(matched.get(i))
        self.plan = plan
        return plan, None

    def replay_probe(self):
        """Record the first batch's calls through the plan, then forget them."""
        calls = [c for c in self.probe if c[0] in self.modules]
        for entry, (_, logits, probs) in zip(self.plan, calls, strict=True):
            if entry is not None:
                kind, layer, sink = entry
                self.recorder.record_softmax(kind, layer, logits, probs, sink)
        self.probe = []

    def plan_from_names(self):
        """Without output_attentions: every 4-D softmax of the model, labelled by module name."""
        encoder_decoder = is_seq2seq(self.model)
        counts, plan, modules = {}, [], set()
        for module, _, probs in self.probe:
            if probs.dim() != 4:
                continue
            kind = name_kind(self.names.get(module, ""), encoder_decoder)
            layer = counts.get(kind, 0)
            counts[kind] = layer + 1
            plan.append((kind, layer, False))
            modules.add(module)
        self.modules, self.plan = modules, plan
        return plan


def _sink_layout(probs, target):
    """False if probs has target's shape, True if it has one more (sink) key column, else None."""
    if probs.dim() != target.dim():
        return None
    if probs.shape == target.shape:
        return False
    if probs.shape[:-1] == target.shape[:-1] and probs.shape[-1] == target.shape[-1] + 1:
        return True
    return None


def output_groups(outputs):
    """The (kind, per-layer tensors) groups of a model output with attentions."""
    groups = []
    getter = outputs.get if hasattr(outputs, "get") else lambda k, d=None: getattr(outputs, k, d)
    for field, kind in _OUTPUT_KINDS.items():
        value = getter(field, None)
        if value is None:
            continue
        tensors = [t for t in value if t is not None]
        if tensors:
            groups.append((kind, tensors))
    return groups


def _call(model, batch, **extra):
    if isinstance(batch, dict) or hasattr(batch, "keys"):
        return model(**{**batch, **extra})  # skorg's output_attentions wins over the batch's
    return model(batch, **extra)


class Backend:
    """One extraction from a transformers model: probe, check, then record every batch."""

    def __init__(self, model, recorder):
        self.model = model
        self.recorder = recorder
        self.capture = None
        self.mode = None  # "softmax", "names" or "outputs"

    @contextlib.contextmanager
    def session(self):
        with eager(self.model):
            with _Capture(self.model, self.recorder) as capture:
                self.capture = capture
                yield self

    def run(self, batch):
        if self.mode is None:
            return self._probe(batch)
        if self.mode == "outputs":
            outputs = _call(self.model, batch, output_attentions=True)
            self._record_outputs(output_groups(outputs))
            return outputs
        return _call(self.model, batch)

    def _probe(self, batch):
        outputs = _call(self.model, batch, output_attentions=True)
        groups = output_groups(outputs)
        capture = self.capture
        if not groups:
            if not any(p.dim() == 4 for _, _, p in capture.probe):
                raise TypeError(
                    f"{family(self.model)}: the model returns no attentions with "
                    "output_attentions=True and calls no softmax skorg can see; its attention "
                    "cannot be read."
                )
            capture.plan_from_names()
            capture.replay_probe()
            self.mode = "names"
            self.recorder.source = "softmax input (the model returns no attentions to check)"
            return outputs
        plan, worst = capture.make_plan(groups)
        if plan is None:
            if worst is not None:
                err, kind, layer = worst
                hint = (
                    " The model is in training mode (dropout): call model.eval() first."
                    if self.model.training
                    else ""
                )
                raise RuntimeError(
                    f"{family(self.model)}: the softmax skorg intercepts differs from the "
                    f"model's own eager attentions (output_attentions) by {err:.3g} > "
                    f"{TOLERANCE:g} in {kind} layer {layer}; skorg cannot read this model "
                    f"exactly.{hint}"
                )
            capture.probe = []
            self.mode = "outputs"
            self.recorder.source = "output_attentions (logits unavailable)"
            self.recorder.want_logits = False
            self._record_outputs(groups)
            return outputs
        capture.replay_probe()
        self.mode = "softmax"
        self.recorder.source = "softmax input, checked against output_attentions"
        return outputs

    def _record_outputs(self, groups):
        for kind, tensors in groups:
            for layer, probs in enumerate(tensors):
                self.recorder.record_probs(kind, layer, probs)


def gating_plan(model):
    """Number of layers and heads of every kind of attention of a transformers model."""
    config = model.config
    kinds = {}
    if is_seq2seq(model):
        enc = _first(config, ("encoder_layers", "num_layers", "num_hidden_layers"))
        dec = _first(config, ("decoder_layers", "num_decoder_layers", "num_layers"))
        h_enc = _first(config, ("encoder_attention_heads", "num_heads", "num_attention_heads"))
        h_dec = _first(config, ("decoder_attention_heads", "num_heads", "num_attention_heads"))
        kinds = {"encoder": (enc, h_enc), "decoder": (dec, h_dec), "cross": (dec, h_dec)}
    else:
        n = _first(config, ("num_hidden_layers", "n_layer", "num_layers", "n_layers"))
        h = _first(config, ("num_attention_heads", "n_head", "num_heads", "n_heads"))
        kinds = {"self": (n, h)}
        if getattr(config, "add_cross_attention", False):
            kinds["cross"] = (n, h)
    missing = [k for k, (n, h) in kinds.items() if n is None or h is None]
    if missing:
        raise TypeError(
            f"{family(model)}: cannot read the number of layers and heads from the config."
        )
    return {k: (int(n), int(h)) for k, (n, h) in kinds.items()}


def _first(config, names):
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


class Gating(Session):
    """Multiplies the attention probabilities of every head by its gate, in every thread.

    Gating the probabilities of head h scales its context ``P_h V_h``, which is exactly gating
    its slice of the input of the output projection.
    """

    def __init__(self, model, gates, layouts):
        super().__init__(model, this_thread_only=False)
        self.gates = gates  # kind -> tensor (n_layers, n_heads) or None
        self.layouts = layouts
        self.encoder_decoder = is_seq2seq(model)
        self.counts = threading.local()
        self.kinds = {}

    def start_forward(self):
        self.counts.value = {}

    def end_forward(self):
        counts = getattr(self.counts, "value", None) or {}
        for kind, gates in self.gates.items():
            ran = counts.get(kind, 0)
            if ran < len(gates):
                raise RuntimeError(
                    f"{family(self.model)}: only {ran} of {len(gates)} {kind}-attention layers "
                    "ran a softmax that skorg sees, so their heads could not be gated."
                )

    def on_softmax(self, module, logits, probs):
        if probs.dim() != 4:
            return probs
        kind = self.kinds.get(module)
        if kind is None:
            kind = self.kinds[module] = name_kind(self.names.get(module, ""), self.encoder_decoder)
        counts = getattr(self.counts, "value", None)
        if counts is None:
            counts = self.counts.value = {}
        layer = counts.get(kind, 0)
        counts[kind] = layer + 1
        gates = self.gates.get(kind)
        if gates is None:
            return probs
        n_layers, n_heads = self.layouts[kind]
        if layer >= n_layers or probs.shape[1] != n_heads:
            raise RuntimeError(
                f"{family(self.model)}: {kind} attention call {layer} has shape "
                f"{tuple(probs.shape)}, not (batch, {n_heads} heads, query, key) in one of "
                f"{n_layers} layers; its heads cannot be gated."
            )
        gate = gates[layer]
        if gate is None:
            return probs
        return probs * gate.view(1, -1, 1, 1).to(device=probs.device, dtype=probs.dtype)


@contextlib.contextmanager
def gating(model, gates, layers, kind):
    """Gate the heads of ``layers`` of one kind of attention with ``gates[layer]``."""
    layouts = gating_plan(model)
    per_layer = [None] * layouts[kind][0]
    for layer in layers:
        per_layer[layer] = gates[layer]
    with eager(model), Gating(model, {kind: per_layer}, layouts):
        yield
