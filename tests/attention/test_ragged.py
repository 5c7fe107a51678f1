"""Layers of different sizes (pooled, subsampled, reduced): one group of maps per size.

Oracles: every layer's probabilities equal the model's own eager output_attentions (1e-5),
softmax of the logits gives them back, every layer appears once with its index, and the head
scores cover every head of every layer, the ragged scores being those of each group alone.
"""

import functools

import numpy as np
import pytest
import torch

from skorg.attention import (
    AttentionMaps,
    RaggedAttentionMaps,
    _layout,
    attention_entropy,
    extract_attention,
    head_confidence,
    head_sparsity,
    network_tensor,
    rank_heads,
)
from skorg.trees import dyadic_tree

from .families import VOCAB, _ids, _make, _pixels
from .test_families import eager_everywhere


def funnel():
    """Three sizes: 8 x 8, then queries pooled (4 x 8), then keys too (4 x 4)."""
    model = _make(
        None, "FunnelConfig", "FunnelBaseModel", vocab_size=VOCAB, block_sizes=[1, 2], d_model=32,
        n_head=4, d_head=8, d_inner=37, hidden_dropout=0.0, attention_dropout=0.0,
        activation_dropout=0.0,
    )  # fmt: skip
    ids, mask = _ids(seq=8, pad_from=6)
    return model, {"input_ids": ids, "attention_mask": mask}


def segformer():
    """Two stages: 64 queries x 16 reduced keys, then 16 x 16."""
    model = _make(
        None, "SegformerConfig", "SegformerModel", num_channels=1, num_encoder_blocks=2,
        depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[8, 16], patch_sizes=[3, 3],
        strides=[2, 2], num_attention_heads=[2, 4], mlp_ratios=[2, 2],
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, drop_path_rate=0.0,
    )  # fmt: skip
    return model, _pixels(size=16)


FAMILIES = {"funnel": (funnel, [(4, 8, 8), (4, 4, 8), (4, 4, 4)]), "segformer": (segformer, None)}


@functools.cache
def _extracted(name):
    try:
        model, batch = FAMILIES[name][0]()
    except (ImportError, AttributeError) as exc:  # pragma: no cover - older transformers
        pytest.skip(f"{name} is not in the installed transformers: {exc}")
    with eager_everywhere(model), torch.no_grad():
        reference = [a.double().numpy() for a in model(**batch, output_attentions=True).attentions]
    return model, batch, extract_attention(model, batch), reference


@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_layer_equals_the_models_attentions(name):
    model, _, maps, reference = _extracted(name)
    assert isinstance(maps, RaggedAttentionMaps)
    assert maps.layers.tolist() == list(range(len(reference)))
    assert "layers of different sizes" in maps.source and name in model.config.model_type
    sizes = [g.probs.shape[2:] for g in maps.groups for _ in g.layers]
    assert sizes == [r.shape[1:] for r in reference]
    if FAMILIES[name][1] is not None:
        assert [tuple(s) for s in sizes] == FAMILIES[name][1]
    for layer, want in enumerate(reference):
        group, position = maps.group_of(layer)
        np.testing.assert_allclose(group.probs[:, position], want, rtol=0, atol=1e-5)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_softmax_of_the_logits_gives_the_probabilities(name):
    _, _, maps, _ = _extracted(name)
    for group in maps.groups:
        logits = group.logits.astype(np.float64)
        allowed = np.isfinite(logits)
        assert np.array_equal(allowed, np.broadcast_to(group.mask[:, None, None], logits.shape))
        top = np.max(np.where(allowed, logits, -np.inf), axis=-1, keepdims=True)
        rows = np.isfinite(top)
        e = np.where(allowed, np.exp(logits - np.where(rows, top, 0.0)), 0.0)
        back = np.divide(e, e.sum(-1, keepdims=True), out=np.zeros_like(e), where=rows)
        np.testing.assert_allclose(back, group.probs, rtol=0, atol=1e-6)
        assert np.all(group.probs[~allowed] == 0)


def _tree_organize(X):
    return [dyadic_tree(n) for n in X.shape]


@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_head_of_every_layer_is_scored_and_ranked(name):
    _, _, maps, reference = _extracted(name)
    n_total = sum(r.shape[1] for r in reference)
    index = maps.head_index()
    assert index.shape == (n_total, 2)
    want = [[layer, h] for layer, r in enumerate(reference) for h in range(r.shape[1])]
    assert index.tolist() == want
    scores = {
        "sparsity": head_sparsity(maps, organize=_tree_organize),
        "attention_entropy": attention_entropy(maps),
        "confidence": head_confidence(maps),
    }
    for value in scores.values():
        assert value.shape == (maps.n_samples, n_total) and np.all(np.isfinite(value))
    # each group is scored on its own geometry: its columns are its own scores
    start = 0
    for group in maps.groups:
        width = len(group.layers) * len(group.heads)
        own = head_sparsity(group, organize=_tree_organize)
        np.testing.assert_array_equal(scores["sparsity"][:, start : start + width], own)
        np.testing.assert_array_equal(
            scores["confidence"][:, start : start + width], head_confidence(group)
        )
        X, _ = network_tensor(group, 0)
        assert X.shape[2] == width
        start += width
    # confidence is the mean over real query rows of the largest weight: brute force
    want = []
    for layer, r in enumerate(reference):
        group, _ = maps.group_of(layer)
        queries, keys = group.valid_queries(0), group.valid_tokens(0)
        want += list(r[0][:, queries][:, :, keys].max(-1).mean(-1))
    np.testing.assert_allclose(scores["confidence"][0], want, rtol=0, atol=1e-6)
    table = rank_heads(scores)
    for order in table["orders"].values():
        assert sorted(order.tolist()) == list(range(n_total))


def test_the_default_organization_ranks_every_funnel_head():
    _, _, maps, reference = _extracted("funnel")
    scores = head_sparsity(maps)
    assert scores.shape == (2, sum(r.shape[1] for r in reference)) and np.all(np.isfinite(scores))


def test_a_ragged_container_has_no_single_probs_array():
    _, _, maps, _ = _extracted("funnel")
    with pytest.raises(TypeError, match=r"differ in size .* maps\.groups"):
        _ = maps.probs
    with pytest.raises(ValueError, match="layer 7 is not in these maps"):
        maps.group_of(7)
    with pytest.raises(TypeError, match="non-empty list of AttentionMaps"):
        RaggedAttentionMaps([])
    one = AttentionMaps.from_array(np.full((1, 1, 2, 4, 4), 0.25))
    with pytest.raises(ValueError, match="repeat layers"):
        RaggedAttentionMaps([one, one])


def test_batches_of_a_ragged_model_are_joined():
    model, batch, maps, _ = _extracted("funnel")
    halves = [{k: v[i : i + 1] for k, v in batch.items()} for i in range(2)]
    joined = extract_attention(model, halves)
    for a, b in zip(joined.groups, maps.groups, strict=True):
        np.testing.assert_allclose(a.probs, b.probs, rtol=0, atol=1e-6)
        assert np.array_equal(a.mask, b.mask) and np.array_equal(a.layers, b.layers)


# masking Funnel and SegFormer (exact, or refused where stages differ in heads):
# test_mask_staged.py


def test_without_the_ragged_table_different_sizes_are_refused(monkeypatch):
    """Families not known to pool are refused (as CANINE is): sizes alone name no axes."""
    model, batch, _, _ = _extracted("funnel")
    monkeypatch.setattr(_layout, "_RAGGED", {})
    with pytest.raises(ValueError, match=r"^funnel: its self layers have attention maps of diff"):
        extract_attention(model, batch)


# the report and the command line on ragged maps: test_cli_families.py
