"""LeViT: its own softmax calls, read exactly, though it returns no attentions to check.

Oracles: a manual recomputation of every attention and subsampling-attention layer from the
layer's input (captured by a hook apart from skorg) and its own weights, softmax of the
logits, and, for masking, the model with the head's slice of the projection input zeroed by
hand (its Hardswish maps 0 to 0).
"""

import functools
import json

import numpy as np
import torch

from skorg.attention import (
    RaggedAttentionMaps,
    attention_layout,
    extract_attention,
    head_sparsity,
    mask_heads,
    rank_heads,
)
from skorg.trees import dyadic_tree

from .families import _make, _pixels

_CLASSES = ("LevitAttention", "LevitAttentionSubsample")


@functools.cache
def _levit():
    """Two stages of 2 and 4 heads on a 4 x 4 grid, a subsampling layer (4 heads) to 2 x 2."""
    model = _make(
        None, "LevitConfig", "LevitModel", image_size=64, num_channels=1, patch_size=16,
        hidden_sizes=[16, 32], num_attention_heads=[2, 4], depths=[1, 1], key_dim=[4, 4],
        mlp_ratio=[2, 2], attention_ratio=[2, 2], down_ops=[["Subsample", 4, 4, 2, 2, 2]],
    )  # fmt: skip
    with torch.no_grad():  # at initialization the projections' batch norms are zero
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm1d | torch.nn.BatchNorm2d):
                m.weight.normal_(1.0, 0.3, generator=torch.Generator().manual_seed(4))
    return model.eval(), _pixels(size=64)


def _recompute(module, x):
    """(logits, probs) of one layer from its input, by the layer's own formula."""
    b, n, _ = x.shape
    heads, kd = module.num_attention_heads, module.key_dim
    if type(module).__name__ == "LevitAttention":
        qkv = module.queries_keys_values(x).view(b, n, heads, -1)
        q, k, _ = qkv.split([kd, kd, module.attention_ratio * kd], dim=3)
    else:
        kv = module.keys_values(x).view(b, n, heads, -1)
        k, _ = kv.split([kd, module.attention_ratio * kd], dim=3)
        q = module.queries(module.queries_subsample(x)).view(b, -1, heads, kd)
    q, k = q.permute(0, 2, 1, 3), k.permute(0, 2, 1, 3)
    bias = module.attention_biases[:, module.attention_bias_idxs]
    logits = q @ k.transpose(-2, -1) * module.scale + bias
    return logits, logits.softmax(-1)


def _by_hand(model, batch):
    inputs, hooks = [], []
    for m in model.modules():
        if type(m).__name__ in _CLASSES:
            hooks.append(m.register_forward_pre_hook(lambda mod, a: inputs.append((mod, a[0]))))
    try:
        with torch.no_grad():
            model(**batch)
            return [_recompute(m, x) for m, x in inputs]
    finally:
        for h in hooks:
            h.remove()


def _blocks(maps):
    return [(g, i) for g in maps.groups for i in range(len(g.layers))]


def test_every_layer_equals_a_manual_recomputation():
    model, batch = _levit()
    maps = extract_attention(model, batch)
    assert isinstance(maps, RaggedAttentionMaps) and maps.layers.tolist() == [0, 1, 2]
    assert (
        "LeViT returns no attentions" in maps.source and "layers of different sizes" in maps.source
    )
    want = _by_hand(model, batch)
    shapes = [(2, 16, 16), (4, 4, 16), (4, 4, 4)]  # heads, queries, keys
    for (group, i), (logits, probs), shape in zip(_blocks(maps), want, shapes, strict=True):
        assert group.probs.shape[2:] == shape and group.probs.shape[0] == 2
        np.testing.assert_allclose(group.probs[:, i], probs.numpy(), rtol=0, atol=1e-6)
        np.testing.assert_allclose(group.logits[:, i], logits.numpy(), rtol=0, atol=1e-5)
        lg = group.logits[:, i].astype(np.float64)
        e = np.exp(lg - lg.max(-1, keepdims=True))
        np.testing.assert_allclose(e / e.sum(-1, keepdims=True), group.probs[:, i], atol=1e-6)


def test_every_head_is_scored_and_ranked():
    model, batch = _levit()
    maps = extract_attention(model, batch)
    scores = head_sparsity(maps, organize=lambda X: [dyadic_tree(n) for n in X.shape])
    assert scores.shape == (2, 2 + 4 + 4) and np.all(np.isfinite(scores))
    table = rank_heads({"sparsity": scores})
    assert sorted(table["orders"]["sparsity"].tolist()) == list(range(10))


def test_masking_one_head_removes_exactly_its_contribution():
    model, batch = _levit()
    layout = attention_layout(model)
    assert layout.heads_per_layer == (2, 4, 4) and layout.n_total == 10
    modules = [m for m in model.modules() if type(m).__name__ in _CLASSES]
    with torch.no_grad():
        plain = model(**batch).last_hidden_state
    scale = float(plain.abs().max())  # tiny: the random patch convolutions shrink the input
    flat = 0
    for layer, module in enumerate(modules):
        width = module.attention_ratio * module.key_dim
        for head in range(module.num_attention_heads):

            def zero(mod, args, head=head, width=width):
                x = args[0].clone()
                x[..., head * width : (head + 1) * width] = 0
                return (x,)

            handle = module.projection.register_forward_pre_hook(zero)
            try:
                with torch.no_grad():
                    want = model(**batch).last_hidden_state
            finally:
                handle.remove()
            with mask_heads(model, [flat]), torch.no_grad():
                got = model(**batch).last_hidden_state
            torch.testing.assert_close(got, want, rtol=0, atol=1e-6 * scale)
            assert (got - plain).abs().max() > 1e-3 * scale, (layer, head)
            flat += 1


def test_attention_command_on_a_levit_directory(tmp_path, capsys):
    from skorg._cli import main

    model, _ = _levit()
    model.save_pretrained(tmp_path / "levit")
    out = tmp_path / "out"
    argv = ["attention", "--model", tmp_path / "levit", "--n-organize", 3, "--prune-steps", 2]
    code = main([str(a) for a in [*argv, "--n-random", 2, "--n-resamples", 100, "-o", out, "-q"]])
    _, err = capsys.readouterr()
    assert code == 0, err
    results = json.loads((out / "results.json").read_text())
    assert len(results["tables"]["head_scores"]) == 10
    assert "LeViT returns no attentions" in results["meta"]["attention read as"]
