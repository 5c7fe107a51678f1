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


SOURCE = "TransformerLens hook_attn_scores and hook_pattern"
TOLERANCE = 1e-5


@contextlib.contextmanager
def capturing(model, recorder):
    """Yields the function that runs one batch (state in its closure, never on the model)."""
    state = {"checked": False}
    yield lambda batch: _run(model, batch, recorder, state)


def _run(model, batch, recorder, state):
    """Run with hooks on the scores and the pattern of every kept layer, then pair them.

    The pairing happens after the forward pass: ``HookedTransformer`` fires ``hook_attn_scores``
    before ``hook_pattern``, other implementations (TransformerBridge releases) may not.
    """
    from ._hf import masked

    n_layers, _ = n_layers_heads(model)
    layers = [v for v in range(n_layers) if recorder.wants("self", v)]
    seen = {}

    def keep(tensor, hook):
        seen[hook.name] = tensor.detach()

    hooks = []
    for layer in layers:
        hooks.append((_name(layer, "hook_attn_scores"), keep))
        hooks.append((_name(layer, "hook_pattern"), keep))
    if isinstance(batch, dict) or hasattr(batch, "keys"):
        out = model.run_with_hooks(**batch, fwd_hooks=hooks)
    else:
        out = model.run_with_hooks(batch, fwd_hooks=hooks)
    for layer in range(n_layers):
        recorder.seen("self", layer)
    for layer in layers:
        raw = seen.get(_name(layer, "hook_attn_scores"))
        pattern = seen.get(_name(layer, "hook_pattern"))
        if raw is None or pattern is None:
            raise RuntimeError(
                f"{type(model).__name__}: layer {layer} fired no hook_attn_scores or "
                "hook_pattern; its attention cannot be read."
            )
        allowed = masked(raw, pattern)
        logits = raw.masked_fill(~allowed, float("-inf"))
        if not state["checked"]:
            back = torch.softmax(logits.double(), dim=-1).nan_to_num(0.0)
            err = float((back - pattern.double().masked_fill(~allowed, 0.0)).abs().max())
            if err > TOLERANCE:
                raise RuntimeError(
                    f"{type(model).__name__}: softmax(hook_attn_scores) differs from "
                    f"hook_pattern by {err:.3g} > {TOLERANCE:g} in layer {layer}."
                )
        recorder.record("self", layer, logits, pattern, allowed.any(dim=1), allowed=allowed)
    state["checked"] = True
    return out


@contextlib.contextmanager
def gating(model, gates, layers, kind="self"):
    def make_hook(index):
        def hook(z, hook):
            return z * gates[index].view(1, 1, -1, 1).to(z.dtype)

        return hook

    fwd_hooks = [(_name(i, "hook_z"), make_hook(i)) for i in layers]
    with model.hooks(fwd_hooks=fwd_hooks):
        yield
