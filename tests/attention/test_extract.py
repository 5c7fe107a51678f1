import numpy as np
import pytest
import torch

from skorg.attention import AttentionMaps, extract_attention

from .conftest import tiny_bert, tiny_encoder, tiny_gpt2, tiny_vit


def inputs_of(modules, run):
    """Hidden states entering each module during run()."""
    seen = {}

    def make(i):
        def hook(module, args, kwargs):
            seen[i] = args[0] if args else kwargs["hidden_states"]

        return hook

    handles = [
        m.register_forward_pre_hook(make(i), with_kwargs=True) for i, m in enumerate(modules)
    ]
    with torch.no_grad():
        run()
    for h in handles:
        h.remove()
    return [seen[i] for i in range(len(modules))]


def manual(q, k, n_heads, allowed):
    """Reference softmax attention, in float64, from projected queries and keys."""
    b, n, e = q.shape
    d = e // n_heads
    q = q.double().view(b, n, n_heads, d).transpose(1, 2)
    k = k.double().view(b, -1, n_heads, d).transpose(1, 2)
    scores = (q @ k.transpose(-1, -2)) / d**0.5
    scores = scores.masked_fill(~allowed[:, None], float("-inf"))
    return torch.softmax(scores, -1).detach().numpy()


def check_maps(maps, expected):
    np.testing.assert_allclose(maps.probs, expected, atol=1e-5, rtol=0)
    rows = maps.mask.any(-1)  # queries with an allowed key
    sums = maps.probs.sum(-1).transpose(0, 3, 1, 2)[rows]
    np.testing.assert_allclose(sums, 1.0, atol=1e-5)
    assert np.all(maps.probs[~np.broadcast_to(maps.mask[:, None, None], maps.probs.shape)] == 0)
    back = torch.softmax(torch.from_numpy(maps.logits).double(), -1).numpy()
    np.testing.assert_allclose(back, maps.probs, atol=1e-6, rtol=0)


def padded_ids():
    ids = torch.randint(1, 50, (3, 7), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(3, 7, dtype=torch.long)
    mask[1, 5:] = 0
    mask[2, 3:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def test_bert_matches_manual_recomputation_with_padding():
    model, batch = tiny_bert(), padded_ids()
    assert model.config._attn_implementation == "sdpa"  # the fast kernel returns no weights
    maps = extract_attention(model, batch)
    assert model.config._attn_implementation == "sdpa"  # restored
    assert maps.probs.shape == (3, 2, 4, 7, 7)
    selfs = [layer.attention.self for layer in model.encoder.layer]
    hidden = inputs_of(selfs, lambda: model(**batch))
    allowed = batch["attention_mask"].bool()[:, None, :].expand(3, 7, 7)
    np.testing.assert_array_equal(maps.mask, allowed.numpy())
    expected = np.stack(
        [manual(s.query(h), s.key(h), 4, allowed) for s, h in zip(selfs, hidden, strict=True)],
        axis=1,
    )
    check_maps(maps, expected)


def test_gpt2_causal_and_padding():
    model, batch = tiny_gpt2(), padded_ids()
    maps = extract_attention(model, batch)
    attns = [block.attn for block in model.h]
    hidden = inputs_of(attns, lambda: model(**batch))
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    allowed = causal[None] & batch["attention_mask"].bool()[:, None, :]
    np.testing.assert_array_equal(maps.mask, allowed.numpy())
    expected = []
    for a, h in zip(attns, hidden, strict=True):
        q, k, _ = a.c_attn(h).split(32, dim=2)
        expected.append(manual(q, k, 4, allowed))
    check_maps(maps, np.stack(expected, axis=1))


def test_vit():
    model = tiny_vit()
    pixels = torch.randn(2, 1, 8, 8, generator=torch.Generator().manual_seed(2))
    maps = extract_attention(model, {"pixel_values": pixels})
    attns = [layer.attention for layer in model.layers]  # transformers 5 ViT layout
    hidden = inputs_of(attns, lambda: model(pixel_values=pixels))
    allowed = torch.ones(2, 17, 17, dtype=torch.bool)
    expected = np.stack(
        [manual(a.q_proj(h), a.k_proj(h), 4, allowed) for a, h in zip(attns, hidden, strict=True)],
        1,
    )
    check_maps(maps, expected)


def test_transformer_encoder_with_key_padding():
    model = tiny_encoder()
    x = torch.randn(2, 6, 16, generator=torch.Generator().manual_seed(3))
    pad = torch.zeros(2, 6, dtype=torch.bool)
    pad[1, 4:] = True
    maps = extract_attention(model, {"src": x, "src_key_padding_mask": pad})
    mhas = [layer.self_attn for layer in model.layers]
    hidden = inputs_of(mhas, lambda: model(x, src_key_padding_mask=pad))
    allowed = (~pad)[:, None, :].expand(2, 6, 6)
    expected = []
    for m, h in zip(mhas, hidden, strict=True):
        w_q, w_k, _ = m.in_proj_weight.split(16)
        b_q, b_k, _ = m.in_proj_bias.split(16)
        expected.append(manual(h @ w_q.T + b_q, h @ w_k.T + b_k, 4, allowed))
        # and torch's own weights, asked for explicitly
        _, w = m(h, h, h, key_padding_mask=pad, need_weights=True, average_attn_weights=False)
        np.testing.assert_allclose(maps.probs[:, len(expected) - 1], w.detach(), atol=1e-6)
    check_maps(maps, np.stack(expected, 1))


def test_layer_head_selection_dtype_batches_and_tokens(minilm):
    model, tokenizer = minilm
    sentences = ["A tree of folders.", "Attention heads organize.", "Haar wavelets."]
    batches = [
        tokenizer(s, padding="max_length", max_length=9, return_tensors="pt") for s in sentences
    ]
    full = extract_attention(model, batches, progress=True)
    part = extract_attention(
        model, batches, layers=[5, 0], heads=[3, 11], dtype="float16", tokenizer=tokenizer
    )
    assert part.probs.dtype == np.float16 and part.probs.shape == (3, 2, 2, 9, 9)
    assert part.layers.tolist() == [5, 0] and part.heads.tolist() == [3, 11]
    np.testing.assert_allclose(part.probs, full.probs[:, [5, 0]][:, :, [3, 11]], atol=1e-3)
    assert part.tokens[0][0] == "[CLS]" and len(part.tokens) == 3
    with pytest.raises(ValueError, match="different sequence lengths"):
        extract_attention(model, [batches[0], tokenizer("x", return_tensors="pt")])
    with pytest.raises(ValueError, match="did not run"):
        extract_attention(model, batches[0], layers=[6])


def test_minilm_matches_manual_recomputation(minilm):
    model, tokenizer = minilm
    batch = tokenizer(
        ["Organize the heads.", "A short docstring sentence from the library."],
        padding=True, return_tensors="pt",
    )  # fmt: skip
    maps = extract_attention(model, batch)
    assert maps.probs.shape[1:3] == (6, 12)
    selfs = [layer.attention.self for layer in model.encoder.layer]
    hidden = inputs_of(selfs, lambda: model(**batch))
    n = batch["input_ids"].shape[1]
    allowed = batch["attention_mask"].bool()[:, None, :].expand(2, n, n)
    expected = np.stack(
        [manual(s.query(h), s.key(h), 12, allowed) for s, h in zip(selfs, hidden, strict=True)], 1
    )
    check_maps(maps, expected)


def test_transformer_lens_duck_typing(fake_tlens):
    tokens = torch.tensor([[1, 2, 3, 4, 5], [5, 4, 3, 2, 1]])
    maps = extract_attention(fake_tlens, tokens)
    assert maps.probs.shape == (2, 2, 2, 5, 5)
    blocks = list(fake_tlens.blocks)
    hidden = inputs_of(blocks, lambda: fake_tlens(tokens))
    allowed = torch.ones(5, 5, dtype=torch.bool).tril().expand(2, 5, 5)
    expected = np.stack(
        [manual(b.W_Q(h), b.W_K(h), 2, allowed) for b, h in zip(blocks, hidden, strict=True)], 1
    )
    check_maps(maps, expected)
    assert np.isneginf(maps.logits[0, 0, 0, 0, 1])


def test_array_source_and_validation():
    p = np.full((1, 2, 3, 4, 4), 0.25)
    maps = extract_attention(p)
    assert isinstance(maps, AttentionMaps) and maps.probs.shape == (1, 2, 3, 4, 4)
    assert maps.head_index().tolist()[3] == [1, 0]
    with pytest.raises(ValueError, match="ndim"):
        AttentionMaps.from_array(np.ones((4, 4)))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        AttentionMaps.from_array(-p)
    with pytest.raises(ValueError, match="dtype must be"):
        extract_attention(tiny_encoder(), torch.randn(1, 3, 16), dtype="int8")
    with pytest.raises(TypeError, match="transformers model"):
        extract_attention(object(), [1])


def test_import_without_torch_names_the_extra():
    import subprocess
    import sys

    # a finder that refuses torch (a None entry in sys.modules would confuse scipy)
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'torch':\n"
        "            raise ImportError('no torch')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import skorg\n"
        "assert 'torch' not in sys.modules\n"
        "try:\n    import skorg.attention\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install skorg[attention]" in out.stdout
