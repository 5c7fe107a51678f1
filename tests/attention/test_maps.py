"""AttentionMaps.from_array (layouts, validation), argument checks and the viewer exports."""

import numpy as np
import pytest
import torch

from skorg.attention import AttentionMaps, extract_attention, mask_heads

from .conftest import tiny_encoder
from .families import bert, gpt_oss


def random_probs(shape, seed=0):
    p = np.random.default_rng(seed).random(shape)
    return p / p.sum(-1, keepdims=True)


def test_hf_tuple_is_read_as_layers_and_matches_extraction():
    model, batch, _ = bert()
    with torch.no_grad():
        model.set_attn_implementation("eager")
        out = model(**batch, output_attentions=True)
    maps = AttentionMaps.from_array(out.attentions)  # 2 layers of (2 samples, 4 heads, 6, 6)
    assert maps.probs.shape == (2, 2, 4, 6, 6)
    ours = extract_attention(model, batch)
    ok = np.broadcast_to(ours.mask[:, None, None], ours.probs.shape)
    np.testing.assert_allclose(maps.probs[ok], ours.probs[ok], atol=1e-6)
    # the extracted probabilities and logits round-trip, the mask derived from the -inf logits
    back = AttentionMaps.from_array(ours.probs, ours.logits)
    np.testing.assert_array_equal(back.mask, ours.mask)  # derived from the -inf logits


@pytest.mark.parametrize(
    ("layout", "shape", "expected"),
    [
        ("nlhqk", (2, 3, 4, 5, 5), (2, 3, 4, 5, 5)),
        ("lnhqk", (3, 2, 4, 5, 5), (2, 3, 4, 5, 5)),
        ("lhqk", (3, 4, 5, 5), (1, 3, 4, 5, 5)),
        ("nhqk", (2, 4, 5, 5), (2, 1, 4, 5, 5)),
        ("hqk", (4, 5, 5), (1, 1, 4, 5, 5)),
    ],
)
def test_layouts(layout, shape, expected):
    p = random_probs(shape)
    maps = AttentionMaps.from_array(p, layout=layout)
    assert maps.probs.shape == expected
    if layout == "lnhqk":  # a transposition, nothing else
        np.testing.assert_array_equal(maps.probs, p.swapaxes(0, 1))


def test_ambiguous_and_invalid_arrays_are_refused():
    with pytest.raises(ValueError, match="ambiguous"):
        AttentionMaps.from_array(random_probs((2, 3, 4, 4)))
    with pytest.raises(ValueError, match="ambiguous"):
        AttentionMaps.from_array(random_probs((3, 4, 4)))
    with pytest.raises(ValueError, match="layout must be one of"):
        AttentionMaps.from_array(random_probs((2, 3, 4, 4)), layout="nqk")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        AttentionMaps.from_array(np.full((1, 1, 1, 2, 2), 2.0))
    with pytest.raises(ValueError, match="sum to 1"):
        AttentionMaps.from_array(np.full((1, 1, 1, 3, 3), 0.2))  # scores, not probabilities
    with pytest.raises(ValueError, match="finite"):
        AttentionMaps.from_array(np.full((1, 1, 1, 2, 2), np.nan))
    p = random_probs((1, 1, 2, 4, 4))
    mask = np.ones((4, 4), dtype=bool)
    mask[:, 3] = False
    with pytest.raises(ValueError, match="disallows"):
        AttentionMaps.from_array(p, mask=mask)
    with pytest.raises(ValueError, match="bool"):
        AttentionMaps.from_array(p, mask=mask.astype(int))
    lg = np.log(p)
    lg[0, 0, 0, 0, 0] = np.inf
    with pytest.raises(ValueError, match="finite"):
        AttentionMaps.from_array(p, lg)
    with pytest.raises(ValueError, match="softmax"):
        AttentionMaps.from_array(p, np.log(p) * 2)
    with pytest.raises(ValueError, match="differ in shape"):
        AttentionMaps.from_array([random_probs((2, 4, 4, 4)), random_probs((2, 4, 5, 5))])
    with pytest.raises(TypeError, match="float"):
        AttentionMaps.from_array(np.ones((1, 1, 1, 2, 2), dtype=int))


def test_masked_rows_and_causal_logits_pass():
    n = 4
    causal = np.tril(np.ones((n, n), dtype=bool))
    lg = np.where(causal, np.random.default_rng(1).normal(size=(1, 1, 2, n, n)), -np.inf)
    p = torch.softmax(torch.from_numpy(lg), -1).numpy()
    maps = AttentionMaps.from_array(p, lg)
    np.testing.assert_array_equal(maps.mask[0], causal)
    # the dtype minimum (what eager masks add) counts as masked too
    lg32 = np.where(causal, lg, np.finfo(np.float32).min).astype(np.float32)
    assert AttentionMaps.from_array(p.astype(np.float32), lg32).mask[0].tolist() == causal.tolist()


def test_sinks_round_trip():
    model, batch, _ = gpt_oss()
    maps = extract_attention(model, batch)
    back = AttentionMaps.from_array(maps.probs, maps.logits, sink=maps.sink)
    np.testing.assert_array_equal(back.sink, maps.sink)
    with pytest.raises(ValueError, match="sum to 1"):
        AttentionMaps.from_array(maps.probs, mask=maps.mask)  # rows short of their sink mass


def test_index_arguments_are_validated():
    model = tiny_encoder()
    x = torch.randn(1, 3, 16)
    for bad in ([0.9], [True], "0", [[0]]):
        with pytest.raises(TypeError, match="ints"):
            extract_attention(model, x, layers=bad)
    with pytest.raises(ValueError, match="non-negative"):
        extract_attention(model, x, heads=[-1])
    with pytest.raises(ValueError, match="duplicates"):
        extract_attention(model, x, heads=[1, 1])
    with pytest.raises(ValueError, match=r"heads must lie in \[0, 4\)"):
        extract_attention(model, x, heads=[4])
    with pytest.raises(ValueError, match="did not run"):
        extract_attention(model, x, layers=[2])
    with pytest.raises(ValueError, match="kind must be"):
        extract_attention(model, x, kind="encoder-decoder")
    assert extract_attention(model, x, layers=np.array([1]), heads=(3,)).probs.shape[1:3] == (1, 1)
    for bad in ([0.9], [(0.0, 1.0)], np.array([1.5])):
        with pytest.raises(TypeError, match="floats are refused"):
            with mask_heads(model, bad):
                pass
    hf, _, _ = bert()
    with pytest.raises(ValueError, match="out of range"):
        with mask_heads(hf, [(2, 0)]):
            pass
    with pytest.raises(ValueError, match="no 'cross' attention"):
        with mask_heads(hf, [(0, 0)], kind="cross"):
            pass


def test_bertviz_and_circuitsvis_exports():
    model, batch, _ = bert()
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    vocab = {f"t{i}": i for i in range(60)}
    tok = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="t1")), unk_token="t1"
    )
    maps = extract_attention(model, batch, tokenizer=tok)
    attention, tokens = maps.to_bertviz(1)  # the padded input: 4 real tokens
    assert len(attention) == 2 and tuple(attention[0].shape) == (1, 4, 4, 4)
    ids = batch["input_ids"][1, :4].tolist()
    assert tokens == [f"t{i}" for i in ids]
    np.testing.assert_array_equal(attention[1][0].numpy(), maps.probs[1, 1][:, :4, :4])
    cv = maps.to_circuitsvis(0)
    assert cv["attention"].shape == (8, 6, 6) and len(cv["tokens"]) == 6
    np.testing.assert_array_equal(cv["attention"][5], maps.probs[0, 1, 1])
    bertviz = pytest.importorskip("bertviz")
    html = bertviz.head_view(attention, tokens, html_action="return")
    assert f"t{ids[0]}" in html.data
    html = bertviz.model_view(attention, tokens, html_action="return")
    assert html.data
    circuitsvis = pytest.importorskip("circuitsvis")
    rendered = circuitsvis.attention.attention_patterns(**cv)
    assert "AttentionPatterns" in str(rendered)
    with pytest.raises(ValueError, match="sample must lie"):
        maps.to_bertviz(2)
    cross = AttentionMaps.from_array(random_probs((1, 1, 2, 3, 5)))
    cross.kind = "cross"
    with pytest.raises(ValueError, match="not square"):
        cross.to_circuitsvis()
