"""Every supported Hugging Face family: what skorg reads is what the model computes.

Oracles: the model's own eager ``output_attentions`` (probabilities, to 1e-5 on the allowed
entries), the softmax of the returned logits, and for masking the input of each layer's output
projection (one head's slice exactly zero, everything else bit-identical). The families skorg
refuses, each with its reason, are in test_family_refusals.py.
"""

import contextlib
import functools
import re

import numpy as np
import pytest
import torch

from skorg.attention import extract_attention, mask_heads

from .families import HF_FAMILIES
from .families_long import LONG_EXACT
from .families_more import MORE_EXACT

EXACT = {**HF_FAMILIES, **MORE_EXACT, **LONG_EXACT}
# exact maps, but heads that cannot be gated one by one (test_family_refusals.py)
NOT_GATEABLE = {"diffllama", "nystromformer"}
# output_attentions holds the softmax input (scores): the reference is their softmax
SCORES = {"squeezebert"}
# the output projection is a 1x1 convolution: heads on the channel axis 1, not the last
CHANNELS_FIRST = {"squeezebert"}

_FIELDS = {
    "attentions": "self",
    "encoder_attentions": "encoder",
    "decoder_attentions": "decoder",
    "cross_attentions": "cross",
}


@functools.cache
def _built(name):
    return EXACT[name]()


def build(name):
    """One model per family for the whole module (the tests restore what they change)."""
    try:
        return _built(name)
    except (ImportError, AttributeError) as exc:  # a family the installed transformers lacks
        pytest.skip(f"{name} is not in the installed transformers: {exc}")


@contextlib.contextmanager
def eager_everywhere(model):
    """Every config of the model set to eager attention (as masking runs it), then restored."""
    configs = {id(c): c for m in model.modules() if (c := getattr(m, "config", None)) is not None}
    configs = [c for c in configs.values() if hasattr(c, "_attn_implementation")]
    saved = [c.__dict__.get("_attn_implementation_internal") for c in configs]
    try:
        for c in configs:
            c._attn_implementation_internal = "eager"
        yield
    finally:
        for c, value in zip(configs, saved, strict=True):
            c._attn_implementation_internal = value


def eager_reference(model, batch):
    """The model's own attentions under eager attention, per kind, as (B, L, H, Q, K)."""
    with eager_everywhere(model), torch.no_grad():
        out = model(**batch, output_attentions=True)
    return {
        kind: torch.stack(list(out[f]), 1).double().numpy()
        for f, kind in _FIELDS.items()
        if out.get(f)
    }


def as_dict(result):
    return result if isinstance(result, dict) else {result.kind: result}


def softmax_back(maps):
    lg = torch.from_numpy(maps.logits).double()
    back = torch.softmax(lg, -1).nan_to_num(0.0).numpy()
    if maps.sink is not None:
        back = back * (1.0 - maps.sink[..., None])
    return back


@pytest.mark.parametrize("name", list(EXACT))
def test_family_equals_the_models_eager_attentions(name):
    model, batch, out_proj = build(name)
    original = model.config._attn_implementation
    maps = as_dict(extract_attention(model, batch))
    assert model.config._attn_implementation == original  # restored
    assert sorted(maps) == sorted(out_proj)
    reference = eager_reference(model, batch)
    if name in SCORES:
        reference = {
            k: torch.softmax(torch.from_numpy(r), -1).numpy() for k, r in reference.items()
        }
        assert all("softmax input for" in m.source for m in maps.values())
    assert sorted(reference) == sorted(maps)
    for kind, m in maps.items():
        ref = reference[kind]
        assert m.probs.shape == ref.shape and m.kind == kind
        # allowed entries: finite logits (per layer and head: sliding windows differ by layer)
        assert m.logits is not None and not np.isnan(m.logits).any()
        allowed = np.isfinite(m.logits)
        assert not allowed[~np.broadcast_to(m.mask[:, None, None], ref.shape)].any()
        np.testing.assert_allclose(m.probs[allowed], ref[allowed], atol=1e-5, rtol=0)
        # what is masked out carries no probability in the model either (but in rows with
        # no allowed key at all, where an eager softmax spreads its mass uniformly)
        rows = allowed.any(-1, keepdims=True)
        assert np.abs(ref[~allowed & rows]).max(initial=0.0) < 1e-6
        assert np.all(m.probs[~allowed] == 0)
        np.testing.assert_allclose(softmax_back(m), m.probs, atol=1e-5, rtol=0)
        assert "checked" in m.source
    text = "input_ids" in batch or "decoder_input_ids" in batch
    if text:  # the padded input: its padding keys are masked out
        kind = "decoder" if "decoder" in maps else next(iter(maps))
        assert not maps[kind].mask[1].all() and maps[kind].mask[0, -1].any()


@pytest.mark.parametrize("name", ["gemma2-softcap", "gpt-oss-sinks", "mistral-sliding"])
def test_family_score_modifications_are_in_the_logits(name):
    model, batch, _ = build(name)
    maps = extract_attention(model, batch)
    allowed = np.isfinite(maps.logits)
    if name == "gemma2-softcap":  # the cap acts: logits saturate near +-2 but never pass it
        cap = model.config.attn_logit_softcapping
        assert np.abs(maps.logits[allowed]).max() <= cap + 1e-6
        assert np.abs(maps.logits[allowed]).max() > 0.99 * cap
    if name == "gpt-oss-sinks":  # rows give 1 - sink to the keys; the sinks take real mass
        assert maps.sink is not None and maps.sink.shape == maps.probs.shape[:4]
        rows = maps.mask.any(-1)[:, None, None]
        total = maps.probs.sum(-1) + maps.sink
        np.testing.assert_allclose(total[np.broadcast_to(rows, total.shape)], 1.0, atol=1e-5)
        assert maps.sink.max() > 0.1
    if name == "mistral-sliding":  # a query sees at most the window's 3 keys
        assert maps.mask.sum(-1).max() == 3
        q, k = np.nonzero(maps.mask[0])
        assert np.all((q - k >= 0) & (q - k < 3))


def out_proj_inputs(model, pattern, run):
    """Inputs of the output projections matching pattern, in call order."""
    modules = [m for n, m in model.named_modules() if re.search(pattern, n)]
    assert modules, pattern
    seen = []
    handles = [
        m.register_forward_pre_hook(lambda mod, args: seen.append(args[0].detach().clone()))
        for m in set(modules)
    ]
    try:
        with torch.no_grad():
            out = run()
    finally:
        for h in handles:
            h.remove()
    return seen, out


def n_hooks(model):
    return sum(len(m._forward_pre_hooks) + len(m._forward_hooks) for m in model.modules())


def first_tensor(out):
    return out[0] if isinstance(out, tuple) else next(iter(out.values()))


@pytest.mark.parametrize("name", [n for n in EXACT if n not in NOT_GATEABLE])
def test_family_mask_removes_exactly_one_head(name):
    model, batch, out_proj = build(name)
    with eager_everywhere(model):  # the reference runs as the masked model does
        _mask_one_head(name, model, batch, out_proj)


def _mask_one_head(name, model, batch, out_proj):
    n_heads = 4
    for kind, pattern in out_proj.items():
        hooks = n_hooks(model)  # transformers keeps its own output-recording hooks
        before, ref = out_proj_inputs(model, pattern, lambda: model(**batch))
        assert len(before) == 2  # two layers (ALBERT: one shared module called twice)
        with mask_heads(model, [(1, 2)], kind=kind if len(out_proj) > 1 else None):
            after, masked = out_proj_inputs(model, pattern, lambda: model(**batch))
        assert n_hooks(model) == hooks and model.config._attn_implementation == "eager"
        assert torch.equal(after[0], before[0])  # layer 0 untouched
        got, was = after[1], before[1]
        if name in CHANNELS_FIRST:  # (batch, channels, position) -> (batch, position, channels)
            got, was = got.transpose(1, -1), was.transpose(1, -1)
        got, was = got.unflatten(-1, (n_heads, -1)), was.unflatten(-1, (n_heads, -1))
        assert torch.all(got[..., 2, :] == 0) and was[..., 2, :].abs().max() > 0
        keep = [0, 1, 3]
        assert torch.equal(got[..., keep, :], was[..., keep, :])
        assert not torch.equal(first_tensor(masked), first_tensor(ref))
        with torch.no_grad():  # restored
            assert torch.equal(first_tensor(model(**batch)), first_tensor(ref))
