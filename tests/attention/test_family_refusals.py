"""Families skorg refuses, each with a one-line message that names the family and the reason.

Refused: attention that is not a full query x key map of the input (windowed, blocked,
bucketed, approximated) and attention-free families (layers of different sizes, as Funnel's
and SegFormer's, are read per group: test_ragged.py; Swin's windows: test_windowed.py). The
refusals come from the family table; with that table emptied, the layout self-check of the
first batch (sample axis, heads, query and key lengths against the input, layers of one size,
4-D probabilities) still refuses every one of them, which is what protects the families not
listed.
"""

import pytest
import torch

from skorg.attention import _layout, extract_attention, mask_heads

from .families import llama
from .families_long import LONG_REFUSED
from .families_more import MORE_REFUSED, diffllama

REFUSED = {**LONG_REFUSED, **MORE_REFUSED}

# family -> what the extraction message must say (the family name and why)
_WHY = {
    "big-bird-sparse": r"^big_bird: the attentions the model returns .* not the output of any "
    r"softmax it calls .* banded, blocked or sparse",
    "maskformer-swin": r"^maskformer-swin: its forward fails with output_attentions=True",
    "reformer": r"^reformer: LSH and chunked local attention",
    "longt5-local": r"^longt5: the encoder's local or transient-global attention",
    "longt5-tglobal": r"^longt5: the encoder's local or transient-global attention",
    "pegasus-x": r"^pegasus_x: block-local attention with global tokens",
    "rwkv": r"^rwkv: an attention-free \(recurrent\) family",
    "mamba": r"^mamba: an attention-free \(state-space\) family",
    "prophetnet": r"^prophetnet: n-gram prediction",
    "yoso": r"^yoso: LSH-sampled attention",
    "nystromformer-landmarks": r"^nystromformer: Nystrom approximation",
    "data2vec-vision-sdpa": r"^data2vec-vision: .* load it with attn_implementation='eager'",
    "convnext": r"^convnext: the model returns no attentions",
    "mobilevit": r"^mobilevit: attention inside unfolded patches",
    # not in the family table: the layout check's reasons
    "convbert": r"^convbert: its self attention has 2 entries on the head axis but the config "
    r"says 4 heads",
    "canine": r"^canine: its self layers have attention maps of different sizes",
    "fnet": r"^fnet: the model returns no attentions",
}

# with the family table emptied: the layout check's own reason (None: same message as above)
_LAYOUT = {
    "reformer": r"output_attentions of self layer 0 is 5-D",
    "longt5-local": r"output_attentions of encoder layer 0 is 5-D",
    "longt5-tglobal": r"output_attentions of encoder layer 0 is 5-D",
    "pegasus-x": r"output_attentions holds a dict for encoder layer 0",
    "rwkv": r"output_attentions of self layer 0 is 3-D",
    "mamba": r"returns no attentions",
    "prophetnet": r"cross attention is 15 queries x 6 keys for an input of 5 x 6 tokens",
    "yoso": r"output_attentions of self layer 0 is 3-D",
    "nystromformer-landmarks": r"6 queries x 3 keys for an input of 6 x 6 tokens",
    "mobilevit": r"sample axis of its self attention holds 8 entries for a batch of 2",
}


def build(name):
    try:
        return REFUSED[name]()
    except (ImportError, AttributeError) as exc:  # a family the installed transformers lacks
        pytest.skip(f"{name} is not in the installed transformers: {exc}")


def _refused(model, batch, pattern):
    with pytest.raises((TypeError, ValueError, RuntimeError), match=pattern) as info:
        extract_attention(model, batch)
    message = str(info.value)
    assert "\n" not in message  # one line, for the command line's exit-2 message
    return message


@pytest.mark.parametrize("name", list(_WHY))
def test_family_is_refused_with_its_reason(name, monkeypatch):
    model, batch, _ = build(name)
    _refused(model, batch, _WHY[name])
    if name in _LAYOUT:  # the generic layout check refuses it too
        monkeypatch.setattr(_layout, "_REFUSED", {})
        message = _refused(model, batch, _LAYOUT[name])
        assert message.startswith(_layout.family(model) + ":")


def _kinds(model):
    if getattr(model.config, "is_encoder_decoder", False):
        return ["encoder", "decoder", "cross"]
    return [None]


@pytest.mark.parametrize("name", list(_WHY))
def test_family_refuses_masking(name):
    model, batch, _ = build(name)
    for kind in _kinds(model)[:1]:
        with pytest.raises((TypeError, ValueError, RuntimeError)) as info:
            with mask_heads(model, [(1, 1)], kind=kind):
                model(**batch)
        message = str(info.value)
        assert message.startswith(_layout.family(model) + ":") and "\n" not in message


def test_pegasus_x_encoder_masking_is_refused_not_silent():
    model, batch, _ = REFUSED["pegasus-x"]()
    with pytest.raises(TypeError, match=r"^pegasus_x: .* refuses to mask"):
        with mask_heads(model, [(1, 2)], kind="encoder"):
            model(**batch)


def test_5d_softmax_refuses_masking_without_the_family_table(monkeypatch):
    monkeypatch.setattr(_layout, "_REFUSED", {})
    model, batch, _ = REFUSED["pegasus-x"]()
    with pytest.raises(RuntimeError, match=r"5-D softmax .* its heads cannot be gated"):
        with mask_heads(model, [(1, 2)], kind="encoder"):
            model(**batch)


def test_diffllama_says_which_map_and_refuses_masking():
    model, batch, _ = diffllama()
    maps = extract_attention(model, batch)
    assert "per-softmax-head maps P_h" in maps.source and "P_h - lambda" in maps.source
    with pytest.raises(TypeError, match=r"^diffllama: differential attention"):
        with mask_heads(model, [(1, 2)]):
            pass


def test_a_second_softmax_in_a_layer_is_refused():
    """A layer that calls a softmax the model does not return: the maps would be part of it."""
    model, batch, _ = llama()
    layer = model.layers[1].self_attn
    forward = layer.forward

    def with_extra(*args, **kwargs):
        out = forward(*args, **kwargs)
        torch.softmax(torch.randn(2, 4, 6, 3), -1)  # e.g. a local branch
        return out

    layer.forward = with_extra
    with pytest.raises(
        ValueError, match=r"calls a softmax of shape \(2, 4, 6, 3\) that .* not hold"
    ):
        extract_attention(model, batch)


def test_nystromformer_masking_refused_for_its_convolution():
    """Its maps are exact (test_families.py), but each head adds conv(V) besides P V."""
    from .families_more import MORE_EXACT

    model, _, _ = MORE_EXACT["nystromformer"]()
    with pytest.raises(TypeError, match=r"^nystromformer: each head adds a depthwise convolution"):
        with mask_heads(model, [(1, 2)]):
            pass
