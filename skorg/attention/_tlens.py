"""TransformerLens backend, by duck typing: only the hook names and ``run_with_hooks``/``hooks``.

TransformerLens is not a dependency; any object with ``cfg.n_layers``, ``cfg.n_heads``,
``run_with_hooks(input, fwd_hooks=[(name, fn)])`` and a ``hooks(fwd_hooks=...)`` context manager,
whose hooks ``blocks.{l}.attn.hook_attn_scores`` / ``hook_pattern`` (batch, head, query, key) and
``blocks.{l}.attn.hook_z`` (batch, position, head, d_head) behave as TransformerLens's, works.
"""

from __future__ import annotations

import contextlib

import torch


def _name(layer, hook):
    return f"blocks.{layer}.attn.{hook}"


def n_layers_heads(model):
    return int(model.cfg.n_layers), int(model.cfg.n_heads)


@contextlib.contextmanager
def capturing(model, recorder):
    model._skorg_recorder = recorder
    try:
        yield
    finally:
        del model._skorg_recorder


def run(model, batch):
    recorder = model._skorg_recorder
    n_layers, _ = n_layers_heads(model)
    layers = [v for v in range(n_layers) if recorder.wants(v)]
    scores = {}
    recorder.calls = n_layers

    def keep_scores(tensor, hook):
        scores[hook.name] = tensor

    def keep_pattern(tensor, hook):
        layer = int(hook.name.split(".")[1])
        raw = scores[_name(layer, "hook_attn_scores")]
        allowed = torch.isfinite(raw) & (raw > torch.finfo(raw.dtype).min / 2)
        logits = raw.masked_fill(~allowed, float("-inf"))
        recorder.record(layer, logits, tensor, allowed[:, 0])

    hooks = []
    for layer in layers:
        hooks.append((_name(layer, "hook_attn_scores"), keep_scores))
        hooks.append((_name(layer, "hook_pattern"), keep_pattern))
    if isinstance(batch, dict) or hasattr(batch, "keys"):
        return model.run_with_hooks(**batch, fwd_hooks=hooks)
    return model.run_with_hooks(batch, fwd_hooks=hooks)


@contextlib.contextmanager
def gating(model, gates, layers):
    def make_hook(index):
        def hook(z, hook):
            return z * gates[index].view(1, 1, -1, 1).to(z.dtype)

        return hook

    fwd_hooks = [(_name(i, "hook_z"), make_hook(i)) for i in layers]
    with model.hooks(fwd_hooks=fwd_hooks):
        yield
