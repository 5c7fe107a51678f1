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
