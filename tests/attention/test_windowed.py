"""Swin and Swinv2: every block, the windows on a named sample axis.

Oracles: the model's own softmax calls (recorded by patching torch's softmax, apart from skorg)
for every block, the model's output_attentions for the blocks it holds (the last of each
stage), softmax of the logits, the shifted blocks' separated pairs exactly where the model adds
its mask, and the image-major window order (one image alone gives its windows back).
"""

import functools

import numpy as np
import pytest
import torch

from skorg.attention import (
    RaggedAttentionMaps,
    extract_attention,
    head_confidence,
    head_sparsity,
    rank_heads,
)
from skorg.trees import dyadic_tree

from .families_long import LONG_WINDOWED
from .test_families import eager_everywhere

# family -> (blocks per stage, heads per stage, windows per image per stage)
LAYOUT = {
    "swin": ([2], [2], [4]),
    "swin-2stages": ([2, 2], [2, 4], [4, 1]),
    "swinv2": ([2], [2], [4]),
    "donut-swin": ([2, 2], [2, 2], [4, 1]),
    "swin2sr": ([2, 2], [2, 2], [16, 16]),
}


def _model_softmaxes(model, batch, monkeypatch):
    """The input and output of every softmax the model calls, and its output_attentions."""
    calls = []
    softmax = torch.nn.functional.softmax

    def recording(x, *args, **kwargs):
        y = softmax(x, *args, **kwargs)
        calls.append((x.detach().double().numpy(), y.detach().double().numpy()))
        return y

    with monkeypatch.context() as patch, eager_everywhere(model), torch.no_grad():
        patch.setattr(torch.nn.functional, "softmax", recording)
        out = model(**batch, output_attentions=True)
    return calls, [a.double().numpy() for a in out.attentions]


@functools.cache
def _extracted(name):
    try:
        model, batch, _ = LONG_WINDOWED[name]()
    except (ImportError, AttributeError) as exc:  # pragma: no cover - older transformers
        pytest.skip(f"{name} is not in the installed transformers: {exc}")
    return model, batch, extract_attention(model, batch)


def _blocks(maps):
    groups = maps.groups if isinstance(maps, RaggedAttentionMaps) else [maps]
    return [(g, i) for g in groups for i in range(len(g.layers))]


@pytest.mark.parametrize("name", list(LAYOUT))
def test_every_block_equals_the_models_softmax(name, monkeypatch):
    model, batch, maps = _extracted(name)
    depths, heads, windows = LAYOUT[name]
    calls, returned = _model_softmaxes(model, batch, monkeypatch)
    assert len(calls) == sum(depths) and len(returned) == len(depths)
    assert isinstance(maps, RaggedAttentionMaps) == (len(set(zip(heads, windows))) > 1)
    assert maps.layers.tolist() == list(range(sum(depths)))
    assert "windowed attention" in maps.source and "sample_axis='window'" in maps.source
    blocks = _blocks(maps)
    stages = [s for s, d in enumerate(depths) for _ in range(d)]
    for layer, ((group, i), (logits, probs)) in enumerate(zip(blocks, calls, strict=True)):
        stage = stages[layer]
        assert group.sample_axis == "window" and group.windows_per_image == windows[stage]
        assert group.layers[i] == layer and group.probs.shape[0] == 2 * windows[stage]
        assert group.probs.shape[2] == heads[stage]
        separated = logits < -50  # the model's additive mask of the shifted windows
        got = group.probs[:, i]
        np.testing.assert_allclose(got, probs, rtol=0, atol=1e-6)
        assert np.array_equal(np.isneginf(group.logits[:, i]), separated)
        assert np.all(got[separated] == 0) and np.all(probs[separated] < 1e-30)
        if layer in np.cumsum(depths) - 1:  # the block output_attentions holds
            np.testing.assert_allclose(got, returned[stage], rtol=0, atol=1e-5)
    assert any(np.isneginf(g.logits).any() for g, _ in blocks)  # a shifted block was masked


@pytest.mark.parametrize("name", list(LAYOUT))
def test_softmax_of_the_logits_gives_the_probabilities(name):
    _, _, maps = _extracted(name)
    for group, i in _blocks(maps):
        logits = group.logits[:, i].astype(np.float64)
        e = np.exp(logits - logits.max(-1, keepdims=True))
        np.testing.assert_allclose(e / e.sum(-1, keepdims=True), group.probs[:, i], atol=1e-6)


def test_the_window_axis_is_image_major():
    model, batch, maps = _extracted("swin")
    alone = extract_attention(model, {"pixel_values": batch["pixel_values"][1:]})
    assert alone.windows_per_image == 4 and alone.probs.shape[0] == 4
    np.testing.assert_allclose(alone.probs, maps.probs[4:], rtol=0, atol=1e-6)


def _tree_organize(X):
    return [dyadic_tree(n) for n in X.shape]


@pytest.mark.parametrize("name", list(LAYOUT))
def test_every_head_of_every_block_is_ranked(name):
    _, _, maps = _extracted(name)
    depths, heads, windows = LAYOUT[name]
    n_total = sum(d * h for d, h in zip(depths, heads, strict=True))
    assert maps.head_index().shape == (n_total, 2) and maps.n_samples in (2, 2 * windows[0])
    scores = {
        "sparsity": head_sparsity(maps, organize=_tree_organize),
        "confidence": head_confidence(maps),
    }
    for value in scores.values():
        assert value.shape == (2, n_total) and np.all(np.isfinite(value))
    # per image: the mean over its windows of the per-window confidence (brute force)
    want = []
    for group, i in _blocks(maps):
        p = group.probs[:, i].astype(np.float64)  # (images * windows, heads, W, W)
        per_window = p.max(-1).mean(-1)
        want.append(per_window.reshape(2, group.windows_per_image, -1).mean(1))
    np.testing.assert_allclose(scores["confidence"], np.concatenate(want, axis=1), atol=1e-12)
    table = rank_heads(scores)
    assert sorted(table["orders"]["sparsity"].tolist()) == list(range(n_total))


# masking Swin and Swinv2 (exact, against a hand-zeroed head): test_mask_staged.py
