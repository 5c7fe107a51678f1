import numpy as np
import pytest
import torch

from skorg.attention import (
    attention_entropy,
    extract_attention,
    head_confidence,
    head_gradient_importance,
    head_sparsity,
    prune_curves,
    rank_heads,
)


def live_heads_metric(tokens):
    """0.01 + the fraction of heads whose hook_z output is not zero: a known function of masking."""

    def metric(model):
        seen = []
        hooks = [(f"blocks.{i}.attn.hook_z", lambda z, hook: seen.append(z)) for i in range(2)]
        with torch.no_grad():
            model.run_with_hooks(tokens, fwd_hooks=hooks)
        live = [bool(z[:, :, h].abs().sum() > 0) for z in seen for h in range(z.shape[2])]
        return 0.01 + float(np.mean(live))

    return metric


def test_prune_curves_closed_form(fake_tlens):
    metric = live_heads_metric(torch.tensor([[1, 2, 3]]))
    orders = {"a": [3, 2, 1, 0], "b": [0, 1, 2, 3]}
    result = prune_curves(fake_tlens, orders, metric, fractions=[0, 0.25, 0.5, 0.75, 1.0])
    expected = 0.01 + np.array([1, 0.75, 0.5, 0.25, 0])
    np.testing.assert_allclose(result.curves["a"], expected)
    np.testing.assert_allclose(result.curves["b"], expected)
    # trapezoid area of the relative curve, and the last fraction above 90 %
    rel = expected / 1.01
    np.testing.assert_allclose(result.auc["a"], np.trapezoid(rel, [0, 0.25, 0.5, 0.75, 1.0]))
    assert result.prunable["a"] == 0.0  # 0.76 / 1.01 < 0.9 at the first step
    assert "AUC" in result.summary()
    with pytest.raises(ValueError, match="permutation"):
        prune_curves(fake_tlens, {"bad": [0, 0, 1, 2]}, metric)


def _table(model, maps, loss_fn, batches):
    from skorg import QuestionnaireOrganizer

    organize = lambda X: QuestionnaireOrganizer(preset="paper_3d_heads").fit(X).trees_  # noqa: E731
    scores = {
        "sparsity": head_sparsity(maps, organize=organize, selection="support", k=400),
        "attention_entropy": attention_entropy(maps),
        "confidence": head_confidence(maps),
        "gradient": head_gradient_importance(model, batches, loss_fn),
    }
    table = rank_heads(scores)
    # the opposite sparsity direction, reported beside it
    table["orders"]["sparsity_reversed"] = table["orders"]["sparsity"][::-1].copy()
    return table


@pytest.mark.slow
def test_minilm_pruning_study(minilm):
    from skorg.attention._setups import (
        embedding_similarity_metric,
        mean_pooled_embedding,
        minilm_batch,
    )

    model, tokenizer = minilm
    batch = minilm_batch(tokenizer, 8, max_length=16)
    maps = extract_attention(model, minilm_batch(tokenizer, 2, max_length=16, offset=8))
    direction = torch.randn(8, 384, generator=torch.Generator().manual_seed(0))

    def loss_fn(m, b):  # random projection of the embeddings (Hutchinson-style sensitivity)
        return (mean_pooled_embedding(m, b) * direction[: len(b["input_ids"])]).sum()

    table = _table(model, maps, loss_fn, [batch])
    result = prune_curves(model, table, embedding_similarity_metric(model, batch))
    print("\nMiniLM pruning (cosine to the unpruned embedding)\n" + result.summary())
    assert result.baseline == pytest.approx(1.0, abs=1e-6)
    ends = {round(c[-1], 6) for c in result.curves.values()}
    assert len(ends) == 1  # every order removes all heads at the end


@pytest.mark.slow
def test_digits_vit_pruning_study():
    import torch.nn.functional as F

    from skorg.attention._setups import accuracy_metric, train_digits_vit

    model, data = train_digits_vit()
    metric = accuracy_metric(data["X_test"], data["y_test"])
    assert metric(model) > 0.85
    maps = extract_attention(model, {"pixel_values": data["X_test"][:2]})
    batches = [
        {"pixel_values": data["X_train"][i : i + 200], "labels": data["y_train"][i : i + 200]}
        for i in range(0, 600, 200)
    ]

    def loss_fn(m, b):
        return F.cross_entropy(m(pixel_values=b["pixel_values"]).logits, b["labels"])

    table = _table(model, maps, loss_fn, batches)
    result = prune_curves(model, table, metric)
    print("\nDigits ViT pruning (held-out accuracy)\n" + result.summary())
    ends = {round(c[-1], 6) for c in result.curves.values()}
    assert len(ends) == 1


WEIGHTS = np.array(
    [[0.0, 0.1, 2.0, 3.0], [0.2, 0.0, 1.5, 2.5], [0.1, 0.1, 3.0, 1.0], [0.0, 0.3, 2.2, 2.8]]
)


def weighted_live_metric(tokens, weights):
    """Per input i: 0.01 + sum of weights[i, h] over the heads h still alive (closed form)."""

    def metric(model):
        seen = []
        hooks = [(f"blocks.{i}.attn.hook_z", lambda z, hook: seen.append(z)) for i in range(2)]
        with torch.no_grad():
            model.run_with_hooks(tokens, fwd_hooks=hooks)
        live = np.array([bool(z[:, :, h].abs().sum() > 0) for z in seen for h in range(2)])
        return 0.01 + weights @ live

    return metric


def expected_per_input(order, weights, counts):
    out = []
    for c in counts:
        live = np.ones(weights.shape[1], dtype=bool)
        live[list(order[:c])] = False
        out.append(0.01 + weights @ live)
    return np.array(out)


def test_prune_curves_per_input_intervals_and_random_distribution(fake_tlens):
    from skorg.stats import bootstrap_of_means, permutation_test_paired

    weights = np.tile(WEIGHTS, (3, 1))  # 12 inputs
    tokens = torch.tensor([[1, 2, 3]] * 12)
    metric = weighted_live_metric(tokens, weights)
    fractions = np.array([0, 0.25, 0.5, 0.75, 1.0])
    counts = [0, 1, 2, 3, 4]
    good, bad = [0, 1, 3, 2], [2, 3, 1, 0]  # weak heads first, strong heads first
    orders = {"good": good, "bad": bad, "random": [1, 3, 0, 2]}
    result = prune_curves(
        fake_tlens, orders, metric, fractions=fractions, n_random=5, random_state=7,
        n_resamples=500,
    )  # fmt: skip
    # the random orders: the given one first, then seeded permutations
    rng = np.random.default_rng(7)
    randoms = [np.array([1, 3, 0, 2])] + [rng.permutation(4) for _ in range(4)]
    expected_random = np.mean([expected_per_input(o, weights, counts) for o in randoms], axis=0)
    np.testing.assert_allclose(result.per_input["random"], expected_random, rtol=1e-12)
    np.testing.assert_allclose(
        result.per_input["good"], expected_per_input(good, weights, counts), rtol=1e-12
    )
    base = expected_per_input(good, weights, counts)[0]
    rel = lambda v: v.mean(axis=1) / base.mean()  # noqa: E731
    for name in ("good", "bad", "random"):
        assert result.auc[name] == pytest.approx(
            np.trapezoid(rel(result.per_input[name]), fractions), rel=1e-12
        )
    assert result.random_auc.shape == (5,)
    np.testing.assert_allclose(
        result.random_auc,
        [np.trapezoid(rel(expected_per_input(o, weights, counts)), fractions) for o in randoms],
        rtol=1e-12,
    )
    # the interval of the area is the bootstrap of the area of the resampled mean curves
    table = np.column_stack([base, result.per_input["good"].T])
    ci = bootstrap_of_means(
        table,
        lambda m: np.trapezoid(m[:, 1:] / m[:, :1], fractions, axis=1),
        n_resamples=500,
        random_state=7,
    )
    got = result.intervals["good"]["auc"]
    assert (got.low, got.high) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert got.low <= result.auc["good"] <= got.high
    band = result.intervals["good"]["curve"]
    assert np.all(band.low <= result.curves["good"] + 1e-12)
    assert np.all(result.curves["good"] <= band.high + 1e-12)
    # paired difference to random: estimate, permutation p-value on per-input areas
    vs = result.versus_random["good"]
    assert vs["difference"] == pytest.approx(result.auc["good"] - result.auc["random"], rel=1e-12)
    d = result.per_input["good"] - result.per_input["random"]
    per = np.trapezoid(d, fractions, axis=0)
    assert vs["p_value"] == permutation_test_paired(per, n_resamples=9999, random_state=7)[1]
    assert vs["distinguishable"] and vs["low"] > 0 and vs["p_value"] < 0.01
    assert result.versus_random["bad"]["high"] < 0
    assert vs["p_value_orders"] == pytest.approx(1 / 6)  # better than all 5 random orders
    assert result.best == "good" and set(result.best_vs_rest) == {"bad", "random"}
    assert "vs random" in result.summary()


def test_prune_curves_identical_orders_are_not_distinguishable(fake_tlens):
    weights = np.tile(WEIGHTS, (2, 1))
    metric = weighted_live_metric(torch.tensor([[1, 2, 3]] * 8), weights)
    result = prune_curves(
        fake_tlens, {"a": [0, 1, 2, 3], "random": [0, 1, 2, 3]}, metric,
        fractions=[0, 0.5, 1.0], n_resamples=200,
    )  # fmt: skip
    vs = result.versus_random["a"]
    assert vs["difference"] == 0.0 and vs["p_value"] == 1.0 and not vs["distinguishable"]
    with pytest.raises(ValueError, match="one length"):
        prune_curves(fake_tlens, {"a": [0, 1, 2, 3]}, _changing_length_metric())
    with pytest.raises(ValueError, match="n_random"):
        prune_curves(fake_tlens, {"a": [0, 1, 2, 3]}, metric, n_random=-1)


def _changing_length_metric():
    calls = []

    def metric(model):
        calls.append(1)
        return np.ones(len(calls) + 1)

    return metric


def test_prune_curves_runs_the_model_once_per_set_of_masked_heads(fake_tlens):
    calls = []
    base = weighted_live_metric(torch.tensor([[1, 2, 3]] * 4), WEIGHTS)

    def metric(model):
        calls.append(1)
        return base(model)

    orders = {"a": [0, 1, 2, 3], "b": [1, 0, 2, 3], "c": [3, 2, 1, 0]}
    prune_curves(fake_tlens, orders, metric, fractions=[0, 0.25, 0.5, 1.0], n_resamples=100)
    # baseline; a: {0}, {0,1}; b: {1} ({0,1} shared); c: {3}, {2,3}; all four heads once
    assert len(calls) == 1 + 2 + 1 + 2 + 1
