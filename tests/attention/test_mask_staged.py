"""Head masking of pooled (Funnel), reduced (SegFormer) and windowed (Swin, Swinv2) layers.

Oracle: the same model with the head's slice of its layer's output-projection input zeroed by
hand (a hook apart from skorg). Masking one head gives that model's output exactly, and it
changes the output (the head contributes); stages with different head counts are refused.
"""

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
    "swin": (_windowed("swin"), lambda m: [a.o_proj for a in _of(m, "SwinAttention")]),
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
    maps = extract_attention(model, batch)
    assert layout.n_layers == len(maps.layers) == len(projections(model))
    assert all(
        h == layout.n_heads for g in getattr(maps, "groups", [maps]) for h in [g.probs.shape[2]]
    )
    plain = _output(model, batch)
    for layer in range(layout.n_layers):
        for head in (0, layout.n_heads - 1):
            want = _zeroed_by_hand(model, batch, projections(model), layer, head, layout.n_heads)
            with mask_heads(model, [(layer, head)]):
                got = _output(model, batch)
            torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
            assert (got - plain).abs().max() > 1e-6, (layer, head)  # the head contributes
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


@pytest.mark.parametrize(
    "name, build", [("swin", _windowed("swin-2stages")), ("segformer", segformer)]
)
def test_stages_with_different_head_counts_are_refused_by_name(name, build):
    model, batch = build()
    with pytest.raises(TypeError, match=rf"^{name}: its stages have \[2, 4\] heads .* refuses"):
        with mask_heads(model, [(0, 1)]):
            model(**batch)
