"""Head masking of pooled (Funnel), reduced (SegFormer) and windowed (Swin, Swinv2) layers.

Oracle: the same model with the head's slice of its layer's output-projection input zeroed by
hand (a hook apart from skorg). Masking one head gives that model's output exactly, and it
changes the output (the head contributes). Stages with different head counts (2 then 4) number
their heads layer-major, each layer with its own count.
"""

import numpy as np
import pytest
import torch

from skorg.attention import attention_layout, extract_attention, gate_heads, mask_heads

from .families import VOCAB, _ids, _make, _pixels
from .families_long import LONG_WINDOWED
from .test_ragged import funnel, segformer


def funnel_with_decoder():
    """FunnelModel: the pooled blocks, then two decoder layers on the upsampled full length."""
    model = _make(
        None, "FunnelConfig", "FunnelModel", vocab_size=VOCAB, block_sizes=[1, 2], d_model=32,
        n_head=4, d_head=8, d_inner=37, hidden_dropout=0.0, attention_dropout=0.0,
        activation_dropout=0.0,
    )  # fmt: skip
    ids, mask = _ids(seq=8, pad_from=6)
    return model, {"input_ids": ids, "attention_mask": mask}


def segformer_equal_heads():
    model = _make(
        None, "SegformerConfig", "SegformerModel", num_channels=1, num_encoder_blocks=2,
        depths=[1, 2], sr_ratios=[2, 1], hidden_sizes=[8, 16], patch_sizes=[3, 3],
        strides=[2, 2], num_attention_heads=[2, 2], mlp_ratios=[2, 2],
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, drop_path_rate=0.0,
    )  # fmt: skip
    return model, _pixels(size=16)


def _windowed(name):
    def build():
        model, batch, _ = LONG_WINDOWED[name]()
        return model, batch

    return build


# family -> (builder, the output projection of every attention layer, in layer order)
FAMILIES = {
    "funnel": (funnel, lambda m: [a.post_proj for a in _of(m, "FunnelRelMultiheadAttention")]),
    "funnel-decoder": (
        funnel_with_decoder,
        lambda m: [a.post_proj for a in _of(m, "FunnelRelMultiheadAttention")],
    ),
    "segformer": (
        segformer_equal_heads,
        lambda m: [a.o_proj for a in _of(m, "SegformerAttention")],
    ),
    "segformer-2-4-heads": (segformer, lambda m: [a.o_proj for a in _of(m, "SegformerAttention")]),
    "swin": (_windowed("swin"), lambda m: [a.o_proj for a in _of(m, "SwinAttention")]),
    "donut-swin": (
        _windowed("donut-swin"),
        lambda m: [a.output.dense for a in _of(m, "DonutSwinAttention")],
    ),
    "swin2sr": (
        _windowed("swin2sr"),
        lambda m: [a.output.dense for a in _of(m, "Swin2SRAttention")],
    ),
    "swin-2-4-heads": (
        _windowed("swin-2stages"),
        lambda m: [a.o_proj for a in _of(m, "SwinAttention")],
    ),
    "swinv2": (
        _windowed("swinv2"),
        lambda m: [a.output.dense for a in _of(m, "Swinv2Attention")],
    ),
}


def _of(model, name):
    return [m for m in model.modules() if type(m).__name__ == name]


def _output(model, batch):
    with torch.no_grad():
        return model(**batch).last_hidden_state


def _zeroed_by_hand(model, batch, projections, layer, head, n_heads):
    def zero(module, args):
        x = args[0].clone()
        width = x.shape[-1] // n_heads
        x[..., head * width : (head + 1) * width] = 0
        return (x,)

    handle = projections[layer].register_forward_pre_hook(zero)
    try:
        return _output(model, batch)
    finally:
        handle.remove()


@pytest.mark.parametrize("name", list(FAMILIES))
def test_masking_one_head_removes_exactly_its_contribution(name):
    build, projections = FAMILIES[name]
    model, batch = build()
    layout = attention_layout(model)
    maps = extract_attention(model, batch, windows="image")
    assert layout.n_layers == len(maps.layers) == len(projections(model))
    per_layer = [g.probs.shape[2] for g in getattr(maps, "groups", [maps]) for _ in g.layers]
    assert list(layout.heads_per_layer) == per_layer and layout.n_total == len(maps.head_index())
    plain = _output(model, batch)
    flat = 0
    for layer, n_heads in enumerate(per_layer):
        for head in range(n_heads):
            want = _zeroed_by_hand(model, batch, projections(model), layer, head, n_heads)
            with mask_heads(model, [(layer, head)]):
                got = _output(model, batch)
            torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
            assert (got - plain).abs().max() > 1e-6, (layer, head)  # the head contributes
            with mask_heads(model, [flat]):  # the flat id of the same head, layer-major
                torch.testing.assert_close(_output(model, batch), got, rtol=0, atol=0)
            assert maps.head_index()[flat].tolist() == [layer, head]
            flat += 1
    torch.testing.assert_close(_output(model, batch), plain, rtol=0, atol=0)  # restored


@pytest.mark.parametrize("name", ["swin", "funnel"])
def test_gates_scale_each_heads_contribution(name):
    """A gate of 0.5 on one head is the hand-made model with that head's slice halved."""
    build, projections = FAMILIES[name]
    model, batch = build()
    layout = attention_layout(model)
    gates = torch.ones(layout.n_layers, layout.n_heads)
    gates[1, 1] = 0.5

    def halve(module, args):
        x = args[0].clone()
        width = x.shape[-1] // layout.n_heads
        x[..., width : 2 * width] *= 0.5
        return (x,)

    handle = projections(model)[1].register_forward_pre_hook(halve)
    try:
        want = _output(model, batch)
    finally:
        handle.remove()
    with gate_heads(model, gates):
        got = _output(model, batch)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", ["swin-2-4-heads", "segformer-2-4-heads"])
def test_layers_with_fewer_heads_refuse_heads_they_lack(name):
    build, _ = FAMILIES[name]
    model, _ = build()
    layout = attention_layout(model)
    assert layout.n_heads == 4 and layout.heads_per_layer[0] == 2
    with pytest.raises(ValueError, match=r"pairs out of range for .* layers of 2/"):
        with mask_heads(model, [(0, 3)]):
            pass
    with pytest.raises(ValueError, match=rf"flat head ids must lie in \[0, {layout.n_total}\)"):
        with mask_heads(model, [layout.n_total]):
            pass
    wrong = np.zeros((layout.n_layers, layout.n_heads), dtype=bool)
    wrong[0, 3] = True
    with pytest.raises(ValueError, match="past the 2 heads of layer 0"):
        with mask_heads(model, wrong):
            pass


def test_gradient_importance_has_one_score_per_head_of_every_stage():
    """Layer-major, each layer's own heads; checked by a central difference of the gates."""
    from skorg.attention import head_gradient_importance

    model, batch = _windowed("swin-2stages")()
    weights = torch.randn(1, 1, 16, generator=torch.Generator().manual_seed(1))

    def objective(m, b):  # a fixed projection of the last hidden state (its plain sum is flat)
        return (m(**b).last_hidden_state * weights).sum()

    scores = head_gradient_importance(model, [batch], objective)
    layout = attention_layout(model)
    assert scores.shape == (layout.n_total,) == (2 * 2 + 2 * 4,)
    gates = torch.ones(layout.n_layers, layout.n_heads, dtype=torch.float64)

    def loss(g):
        with gate_heads(model, g.float()), torch.no_grad():
            return float(objective(model, batch))

    eps = 1e-2
    up, down = gates.clone(), gates.clone()
    up[2, 3] += eps
    down[2, 3] -= eps
    np.testing.assert_allclose(scores[4 + 3], abs(loss(up) - loss(down)) / (2 * eps), rtol=2e-2)
