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

import numpy as np
import torch

from . import _banded, _layout, _windowed
from ._softmax import Session, current_call, name_kind

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


family = _layout.family
is_seq2seq = _layout.is_seq2seq


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
        self.plan = None  # per call in an attention module: (kind, layer, sink, heads) or None
        self.modules = None
        self.probe = []
        self.position = 0
        self.banded = _banded.Banded(model) if family(model) in _banded.FAMILIES else None
        windowed = family(model) in _windowed.FAMILIES
        layout = getattr(recorder, "windows", "axis")
        self.windowed = _windowed.Windowed(model, layout) if windowed else None

    def start_forward(self):
        self.position = 0

    def on_softmax(self, module, logits, probs):
        output = probs
        if self.banded is not None and self.banded.applies(module):
            logits, probs = self.banded.expand_call(logits, probs)
        if self.windowed is not None and self.windowed.applies(module):
            logits, probs = self.windowed.expand_call(module, logits, probs)
        if self.plan is None:
            self.probe.append((module, logits.detach(), probs.detach(), current_call()))
            return output
        if module not in self.modules:
            return output
        position = self.position
        self.position += 1
        if position >= len(self.plan):
            raise RuntimeError(
                f"{family(self.model)}: more attention calls than in the first batch "
                f"({len(self.plan)}); skorg reads one architecture per extraction."
            )
        entry = self.plan[position]
        if entry is not None:
            self._record(entry, logits, probs, module)
        return output

    def _record(self, entry, logits, probs, module):
        kind, layer, sink, heads = entry
        if heads is not None:  # a 3-D softmax over (batch * heads, query, key)
            logits, probs = (t.unflatten(0, (-1, heads)) for t in (logits, probs))
        windowed = self.windowed
        if windowed is not None and windowed.layout == "image" and windowed.applies(module):
            logits, probs = windowed.to_images(module, logits, probs)
        self.recorder.record_softmax(kind, layer, logits, probs, sink)

    def make_plan(self, groups):
        """Match every returned attention tensor with the softmax call that produced it.

        Returns the plan (or None), the worst mismatch (error, kind, layer) when no call
        matched, and whether the model returns the softmax input instead of its output.
        """
        used = set()
        matched = {}  # probe index -> (kind, layer, sink, heads of a 3-D call)
        worst, scores = None, False
        for kind, tensors in groups:
            start = 0
            for layer, target in enumerate(tensors):
                hit, best = None, None
                for i in range(start, len(self.probe)):
                    if i in used:
                        continue
                    _, logits, probs, _ = self.probe[i]
                    heads = _heads_of_3d(probs, target)
                    if heads is not None:
                        logits, probs = (t.unflatten(0, (-1, heads)) for t in (logits, probs))
                    sink = _sink_layout(probs, target)
                    if sink is None:
                        continue
                    got = probs[..., :-1] if sink else probs
                    err = _gap(got, target)
                    if err > TOLERANCE and not sink:  # SqueezeBERT, ProphetNet: the scores
                        gap = _gap(logits, target)
                        if gap <= TOLERANCE:
                            err, scores = gap, True
                    if err <= TOLERANCE:
                        hit = (i, sink, heads)
                        break
                    if best is None or err < best[0]:
                        best = (err, kind, layer)
                if hit is None:
                    if best is not None and (worst is None or best[0] > worst[0]):
                        worst = best
                    return None, worst, False
                used.add(hit[0])
                matched[hit[0]] = (kind, layer, hit[1], hit[2])
                start = hit[0] + 1
        if self.windowed is not None:
            return self._window_plan(matched), None, scores
        self._check_unmatched(matched)
        self.modules = {self.probe[i][0] for i in matched}
        self.plan = [matched.get(i) for i, c in enumerate(self.probe) if c[0] in self.modules]
        return self.plan, None, scores

    def _window_plan(self, matched):
        """Every block of a windowed model, the returned ones being the last of each stage."""
        calls = [i for i, c in enumerate(self.probe) if c[0] in self.windowed.modules]
        got = [calls.index(i) if i in calls else -1 for i in sorted(matched)]
        lasts, total = [], 0
        for depth in _windowed.depths(self.model):
            total += depth
            lasts.append(total - 1)
        if got != lasts or len(calls) != total:
            raise ValueError(
                f"{family(self.model)}: its output_attentions match blocks {got} of "
                f"{len(calls)} softmax calls, not the last block of each stage {lasts} of "
                f"{total}; skorg cannot name its blocks."
            )
        kind = matched[min(matched)][0]
        self.modules = set(self.windowed.modules)
        self.plan = [(kind, layer, False, None) for layer in range(total)]
        return self.plan

    def _check_unmatched(self, matched):
        """Refuse softmax calls that no returned attention accounts for.

        A second call of a layer that repeats the matched one (DiffLlama) is accounted for; any
        other call of a matched module (PEGASUS-X's local blocks) or a call of an attention
        module of a matched class that the model does not return (Swin's first blocks) means
        that the maps would be part of what the model computes.
        """
        classes = {type(self.probe[i][0]) for i in matched}
        last = {}  # call id -> probs of the matched call
        for i, (module, _, probs, call) in enumerate(self.probe):
            if i in matched:
                last[call] = probs
                continue
            if type(module) not in classes:
                continue
            same = last.get(call)
            if same is not None and same.shape == probs.shape and torch.equal(same, probs):
                continue
            kind = name_kind(self.names.get(module, ""), is_seq2seq(self.model))
            raise ValueError(
                f"{family(self.model)}: the {kind} attention module "
                f"{self.names.get(module, '')!r} calls a softmax of shape "
                f"{tuple(probs.shape)} that the model's own attentions (output_attentions) do "
                "not hold (a second softmax in a layer, or a block the model does not return); "
                "skorg refuses maps that are only part of what the model computes."
            )

    def replay_probe(self):
        """Record the first batch's calls through the plan, then forget them."""
        calls = [c for c in self.probe if c[0] in self.modules]
        for entry, (module, logits, probs, _) in zip(self.plan, calls, strict=True):
            if entry is not None:
                self._record(entry, logits, probs, module)
        self.probe = []

    def plan_from_names(self):
        """Without output_attentions: every 4-D softmax of the model, labelled by module name."""
        encoder_decoder = is_seq2seq(self.model)
        counts, plan, modules, groups = {}, [], set(), {}
        for module, _, probs, _ in self.probe:
            if probs.dim() != 4:
                continue
            kind = name_kind(self.names.get(module, ""), encoder_decoder)
            layer = counts.get(kind, 0)
            counts[kind] = layer + 1
            plan.append((kind, layer, False, None))
            modules.add(module)
            groups.setdefault(kind, []).append(probs)
        self.modules, self.plan = modules, plan
        return plan, groups


def _gap(got, target):
    """Largest absolute difference, with equal infinities (masked scores) counting as 0."""
    if not got.numel():
        return 0.0
    got = got.to(target.dtype)
    same = got == target
    diff = (got - target).abs().masked_fill(same, 0.0)
    return float(diff.nan_to_num(float("inf")).max())


def _heads_of_3d(probs, target):
    """The head count when a 3-D softmax over (batch * heads, query, key) produced target."""
    if probs.dim() != 3 or target.dim() != 4:
        return None
    b, h = target.shape[:2]
    if probs.shape[0] != b * h or probs.shape[1] != target.shape[2]:
        return None
    return h


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
                with capture.windowed or contextlib.nullcontext():
                    yield self

    def run(self, batch):
        if self.capture.banded is not None:
            self.capture.banded.prepare(batch)
        if self.capture.windowed is not None and self.capture.windowed.layout == "axis":
            self.recorder.images = _layout.input_layout(batch)[0]
        if self.mode is None:
            return self._probe(batch)
        if self.mode == "outputs":
            outputs = _call(self.model, batch, output_attentions=True)
            self._record_outputs(output_groups(outputs))
            return outputs
        return _call(self.model, batch)

    def _probe(self, batch):
        reason = _layout.refusal(self.model)
        if reason is not None:
            raise TypeError(reason)
        outputs = _call(self.model, batch, output_attentions=True)
        groups = output_groups(outputs)
        capture = self.capture
        if not groups:
            if not any(p.dim() == 4 for _, _, p, _ in capture.probe):
                raise TypeError(
                    f"{family(self.model)}: the model returns no attentions with "
                    "output_attentions=True and calls no softmax skorg can see; its attention "
                    f"cannot be read.{_layout.eager_hint(self.model)}"
                )
            _, found = capture.plan_from_names()
            self._check(batch, list(found.items()), "softmax calls")
            capture.replay_probe()
            self.mode = "names"
            self.recorder.source = (
                "softmax input (the model returns no attentions to check)"
                + _layout.note(self.model)
            )
            return outputs
        if capture.banded is not None:
            groups = [
                (
                    k,
                    [capture.banded.expand_output(t) for t in ts]
                    if k in ("self", "encoder")
                    else ts,
                )
                for k, ts in groups
            ]
        self._check(batch, groups, "output_attentions")
        plan, worst, scores = capture.make_plan(groups)
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
            n = groups[0][1][0].shape[0]
            seen = sorted({tuple(p.shape) for _, _, p, _ in capture.probe if p.shape[0] == n})
            if seen:  # the model assembles its attentions from other softmax calls
                raise ValueError(
                    f"{family(self.model)}: the attentions the model returns (shape "
                    f"{tuple(groups[0][1][0].shape)}) are not the output of any softmax it "
                    f"calls (shapes {seen[:3]}): they are assembled from banded, blocked or "
                    "sparse attention, which skorg does not read as query x key maps."
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
        if scores:
            self.recorder.source += (
                f" (which hold the softmax input for {family(self.model)}: skorg returns the "
                "softmax output as probabilities)"
            )
        self.recorder.source += _layout.note(self.model)
        if capture.banded is not None:
            self.recorder.source += _banded.SOURCE
        if capture.windowed is not None:
            image = capture.windowed.layout == "image"
            self.recorder.source += _windowed.IMAGE_SOURCE if image else _windowed.SOURCE
        return outputs

    def _check(self, batch, groups, what):
        """The layout check of the first batch: axes, heads and layers against the input."""
        seq2seq = is_seq2seq(self.model)
        try:
            plan = _layout.layer_counts(self.model)
        except TypeError:
            plan = {}
        per_layer = _layout.layer_heads(self.model)
        if per_layer is not None and "self" in plan:  # stages that differ in heads
            plan["self"] = (plan["self"][0], per_layer)
        if self.capture.windowed is not None and "self" in plan:
            # output_attentions holds the last block of each stage (the plan checks every block)
            lasts = np.cumsum(_windowed.depths(self.model)) - 1
            heads = plan["self"][1]
            if isinstance(heads, tuple):
                heads = tuple(heads[i] for i in lasts)
            plan["self"] = (len(lasts), heads)
        for kind, tensors in groups:
            n_layers, heads = plan.get(kind, (None, None))
            _layout.check_layout(
                self.model, kind, tensors, batch, seq2seq=seq2seq, heads=heads,
                n_layers=n_layers, what=what,
            )  # fmt: skip

    def _record_outputs(self, groups):
        for kind, tensors in groups:
            for layer, probs in enumerate(tensors):
                self.recorder.record_probs(kind, layer, probs)
