import numpy as np
import pytest
import torch

from skorg.attention import (
    AttentionMaps,
    attention_entropy,
    extract_attention,
    gate_heads,
    head_confidence,
    head_gradient_importance,
    head_sparsity,
    network_tensor,
    rank_heads,
    ranking_stability,
)
from skorg.trees import dyadic_tree

from .conftest import tiny_bert


def haar_matrix(n):
    """Orthonormal dyadic Haar basis (columns), by the recursive Kronecker construction."""
    if n == 1:
        return np.ones((1, 1))
    h = haar_matrix(n // 2)
    return np.hstack([np.kron(h, [[1], [1]]), np.kron(np.eye(n // 2), [[1], [-1]])]) / np.sqrt(2)


def brute_entropy(X, trees, *, selection, k, normalize):
    assert selection == "all" and not normalize
    H = haar_matrix(X.shape[0])
    return np.abs(H.T @ X @ H).sum()


def padded_maps(rng):
    p = rng.random((2, 2, 3, 6, 6))
    mask = np.ones((2, 6, 6), dtype=bool)
    mask[1, :, 4:] = False  # sample 1 has 4 real tokens
    p = np.where(mask[:, None, None], p, 0.0)
    return AttentionMaps.from_array(p / p.sum(-1, keepdims=True), mask=mask)


def test_network_tensor_crops_padding(rng):
    maps = padded_maps(rng)
    X, index = network_tensor(maps, 1)
    assert X.shape == (4, 4, 6)
    np.testing.assert_array_equal(X[:, :, 4], maps.probs[1, 1, 1, :4, :4])
    assert index[4].tolist() == [1, 1]


def test_head_sparsity_is_bihaar_l1_on_the_trees(rng):
    p = rng.random((2, 2, 3, 8, 8))
    maps = AttentionMaps.from_array(p / p.sum(-1, keepdims=True))
    trees = [dyadic_tree(8), dyadic_tree(8)]
    got = head_sparsity(maps, trees=trees, selection="all", entropy=brute_entropy)
    H = haar_matrix(8)
    expected = [
        [np.abs(H.T @ maps.probs[s, i // 3, i % 3] @ H).sum() for i in range(6)] for s in range(2)
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    # a uniform head has a single non-zero coefficient: sum |C| = sqrt(8 * 8) / 8 = 1
    uniform = AttentionMaps.from_array(np.full((1, 1, 1, 8, 8), 1 / 8))
    np.testing.assert_allclose(
        head_sparsity(uniform, trees=trees, selection="all", entropy=brute_entropy), 1.0
    )
    with pytest.raises(ValueError, match="do not match"):
        head_sparsity(maps, trees=[dyadic_tree(4), dyadic_tree(4)], entropy=brute_entropy)


def test_entropy_and_confidence_closed_forms(rng):
    p = np.zeros((1, 1, 3, 4, 4))
    p[0, 0, 0] = 0.25
    p[0, 0, 1] = np.eye(4)
    p[0, 0, 2] = [0.5, 0.5, 0, 0]
    maps = AttentionMaps.from_array(p)
    np.testing.assert_allclose(attention_entropy(maps), [[np.log(4), 0.0, np.log(2)]])
    np.testing.assert_allclose(head_confidence(maps), [[0.25, 1.0, 0.5]])
    padded = padded_maps(rng)
    rows = padded.probs[1, 0, 0, :4, :4]
    np.testing.assert_allclose(head_confidence(padded)[1, 0], rows.max(-1).mean())


def test_gradient_importance_equals_finite_differences():
    model = tiny_bert().double()
    batch = {"input_ids": torch.tensor([[3, 7, 9, 1, 4], [2, 2, 8, 5, 6]])}
    direction = torch.randn(2, 5, 32, generator=torch.Generator().manual_seed(0)).double()

    def loss_fn(m, b):
        return (m(**b).last_hidden_state * direction).sum()

    scores = head_gradient_importance(model, [batch], loss_fn)
    assert scores.shape == (8,)
    eps = 1e-6
    fd = []
    for h in range(8):
        e = torch.zeros(8, dtype=torch.float64)
        e[h] = eps
        vals = []
        for sign in (1, -1):
            gates = (1 + sign * e).view(2, 4)
            with gate_heads(model, gates), torch.no_grad():
                vals.append(loss_fn(model, batch).item())
        fd.append(abs(vals[0] - vals[1]) / (2 * eps))
    np.testing.assert_allclose(scores, fd, rtol=1e-5)


def test_rank_heads_orders_and_random():
    table = rank_heads(
        {
            "sparsity": [[3.0, 1.0, 2.0], [3.0, 1.0, 4.0]],
            "attention_entropy": [0.1, 0.9, 0.5],
            "mine": [5, 6, 4],
        },
        prune_first={"mine": "high"},
    )
    assert table["orders"]["sparsity"].tolist() == [1, 0, 2]  # mean scores 3, 1, 3
    assert table["orders"]["attention_entropy"].tolist() == [1, 2, 0]
    assert table["orders"]["mine"].tolist() == [1, 0, 2]
    assert sorted(table["orders"]["random"].tolist()) == [0, 1, 2]
    assert table["ranks"]["sparsity"].tolist() == [1, 0, 2]
    again = rank_heads({"confidence": [1, 2, 3]})
    np.testing.assert_array_equal(again["orders"]["random"], table["orders"]["random"])
    with pytest.raises(ValueError, match="direction"):
        rank_heads({"unknown": [1, 2]})


def test_ranking_stability_counts():
    scores = np.array([[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 0, 2, 3, 4, 5, 6, 7, 9, 8]], float)
    out = ranking_stability(scores, fraction=0.2)
    assert out["always_bottom"].tolist() == [0, 1]
    assert out["always_top"].tolist() == [8, 9]
    assert out["top_overlap"] == 1.0
    out = ranking_stability(scores, fraction=0.1)
    assert out["always_top"].size == 0 and out["top_overlap"] == 0.0
    np.testing.assert_allclose(out["top_frequency"][8:], [0.5, 0.5])


def test_ranking_stability_against_its_null():
    from skorg.stats import jaccard_null

    rng = np.random.default_rng(0)
    n_batches, n_heads = 12, 40
    # a stable ranking (the same head scores plus small noise) and a random one
    stable = np.arange(n_heads)[None] + 0.1 * rng.normal(size=(n_batches, n_heads))
    noise = rng.normal(size=(n_batches, n_heads))
    out = ranking_stability(stable, fraction=0.1, n_resamples=999)
    null = ranking_stability(noise, fraction=0.1, n_resamples=999)
    expected = jaccard_null(n_heads, 4)["expectation"]  # ceil(0.1 * 40) = 4 heads per set
    for o in (out, null):
        assert o["top_null"]["overlap_null_mean"] == pytest.approx(expected, rel=1e-12)
        assert o["bottom_null"]["always_null_mean"] == pytest.approx(40 * 0.1**12)
        assert o["top_null"]["overlap"] == o["top_overlap"]
    assert out["top_null"]["overlap_p_value"] == 1 / 1000
    assert out["bottom_null"]["always"] == out["always_bottom"].size >= 1
    assert null["top_null"]["overlap_p_value"] > 0.01


def test_sparsity_ranking_on_a_real_model(minilm):
    model, tokenizer = minilm
    batch = tokenizer(
        ["One sentence, cut to eight tokens, here."], truncation=True, max_length=8,
        return_tensors="pt",
    )  # fmt: skip
    maps = extract_attention(model, batch, layers=[0, 5])
    n = maps.probs.shape[-1]
    assert n == 8
    trees = [dyadic_tree(n), dyadic_tree(n)]
    scores = head_sparsity(maps, trees=trees, selection="all", entropy=brute_entropy)
    assert scores.shape == (1, 24) and np.all(scores >= 1 - 1e-9)  # >= the uniform head's 1
