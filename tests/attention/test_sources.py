"""Other sources of attention: TransformerLens (both APIs), nnsight, nn.Transformer, threads."""

import threading

import numpy as np
import pytest
import torch

from skorg.attention import attention_layout, extract_attention, mask_heads

from .families import bert, falcon, gpt2, t5


def _tlens_batch():
    ids = torch.tensor([[5, 9, 3, 7, 11, 4], [8, 2, 6, 10, 1, 1]])
    mask = torch.ones(2, 6, dtype=torch.long)
    mask[1, 4:] = 0
    return ids, mask


def _causal_reference(q, k, mask, scale):
    """softmax(q k^T * scale) under causal and key-padding masks, in float64; (B, H, Q, K)."""
    scores = torch.einsum("bqhd,bkhd->bhqk", q.double(), k.double()) * scale
    n = q.shape[1]
    allowed = torch.ones(n, n, dtype=torch.bool).tril()[None] & mask.bool()[:, None, :]
    scores = scores.masked_fill(~allowed[:, None], float("-inf"))
    return torch.softmax(scores, -1).nan_to_num(0.0).numpy(), allowed.numpy()


def test_hooked_transformer_matches_recomputation_and_masks():
    tl = pytest.importorskip("transformer_lens")
    cfg = tl.HookedTransformerConfig(
        n_layers=2, d_model=32, n_ctx=16, d_head=8, n_heads=4, d_vocab=50, act_fn="gelu",
        seed=0,
    )  # fmt: skip
    model = tl.HookedTransformer(cfg).eval()
    ids, mask = _tlens_batch()
    maps = extract_attention(model, {"input": ids, "attention_mask": mask})
    _, cache = model.run_with_cache(ids, attention_mask=mask)
    for layer in range(2):
        ref, allowed = _causal_reference(cache["q", layer], cache["k", layer], mask, 1 / np.sqrt(8))
        ok = np.broadcast_to(allowed[:, None], ref.shape)
        np.testing.assert_allclose(maps.probs[:, layer][ok], ref[ok], atol=1e-5)
    assert np.isneginf(maps.logits[0, 0, 0, 0, 1]) and not maps.mask[1, :, 5].any()
    back = torch.softmax(torch.from_numpy(maps.logits).double(), -1).nan_to_num(0.0).numpy()
    np.testing.assert_allclose(back, maps.probs, atol=1e-6)
    # masking: hook_z of (1, 2) is zero, the rest unchanged
    _, plain = model.run_with_cache(ids)
    with mask_heads(model, [(1, 2)]):
        _, masked = model.run_with_cache(ids)
    assert torch.all(masked["z", 1][:, :, 2] == 0)
    assert torch.equal(masked["z", 1][:, :, [0, 1, 3]], plain["z", 1][:, :, [0, 1, 3]])
    assert torch.equal(masked["z", 0], plain["z", 0])


def test_transformer_bridge_matches_the_hf_models_eager_attentions(tmp_path):
    bridge_mod = pytest.importorskip("transformer_lens.model_bridge")
    model, _, _ = gpt2()
    from transformers import GPT2LMHeadModel

    lm = GPT2LMHeadModel(model.config).eval()
    lm.save_pretrained(tmp_path)
    _save_tokenizer(tmp_path)
    bridge = bridge_mod.TransformerBridge.boot_transformers(str(tmp_path), device="cpu")
    ids, mask = _tlens_batch()
    maps = extract_attention(bridge, {"input": ids, "attention_mask": mask})
    assert attention_layout(bridge).kind == "tlens"
    hf = GPT2LMHeadModel.from_pretrained(tmp_path, attn_implementation="eager").eval()
    with torch.no_grad():
        out = hf(ids, attention_mask=mask, output_attentions=True)
    ref = torch.stack(out.attentions, 1).numpy()
    allowed = np.broadcast_to(maps.mask[:, None, None], ref.shape)
    assert not maps.mask[1, :, 5].any()  # the padding
    np.testing.assert_allclose(maps.probs[allowed], ref[allowed], atol=1e-5)
    back = torch.softmax(torch.from_numpy(maps.logits).double(), -1).numpy()
    np.testing.assert_allclose(back, maps.probs, atol=1e-6)
    seen = {}

    def keep(z, hook):  # the bridge names this hook by its canonical name, o.hook_in
        seen["z"] = z.detach().clone()

    hooks = [("blocks.1.attn.hook_z", keep)]
    bridge.run_with_hooks(ids, fwd_hooks=hooks)
    plain = seen.pop("z")
    with mask_heads(bridge, [(1, 2)]):
        bridge.run_with_hooks(ids, fwd_hooks=hooks)
    z, plain = seen["z"], plain
    if z.dim() == 3:  # (batch, position, heads * d_head)
        z, plain = z.unflatten(-1, (4, -1)), plain.unflatten(-1, (4, -1))
    assert torch.all(z[:, :, 2] == 0) and plain[:, :, 2].abs().max() > 0
    assert torch.equal(z[:, :, [0, 1, 3]], plain[:, :, [0, 1, 3]])


def _save_tokenizer(path, vocab_size=50):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[PAD]": 0, "[UNK]": 1, **{f"w{i}": i + 2 for i in range(vocab_size - 2)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", bos_token="[PAD]",
        eos_token="[PAD]",
    )  # fmt: skip
    fast.save_pretrained(path)
    return fast


def test_nnsight_wrapper_is_read_through_its_model():
    nnsight = pytest.importorskip("nnsight")
    model, batch, _ = bert()
    wrapped = nnsight.NNsight(model)
    maps = extract_attention(wrapped, batch)
    np.testing.assert_array_equal(maps.probs, extract_attention(model, batch).probs)
    assert not maps.mask[1].all()  # its padding mask is the batch's


def test_nn_transformer_kinds_match_torch_weights():
    torch.manual_seed(0)
    model = torch.nn.Transformer(
        d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=32,
        dropout=0.0, batch_first=True,
    ).eval()  # fmt: skip
    gen = torch.Generator().manual_seed(5)
    src, tgt = torch.randn(2, 6, 16, generator=gen), torch.randn(2, 4, 16, generator=gen)
    src_pad = torch.zeros(2, 6, dtype=torch.bool)
    src_pad[1, 4:] = True
    causal = torch.nn.Transformer.generate_square_subsequent_mask(4)
    batch = {
        "src": src, "tgt": tgt, "tgt_mask": causal, "src_key_padding_mask": src_pad,
        "memory_key_padding_mask": src_pad,
    }  # fmt: skip
    maps = extract_attention(model, batch)
    assert sorted(maps) == ["cross", "decoder", "encoder"]
    assert maps["encoder"].probs.shape == (2, 2, 4, 6, 6)
    assert maps["decoder"].probs.shape == (2, 2, 4, 4, 4)
    assert maps["cross"].probs.shape == (2, 2, 4, 4, 6)
    calls = {}
    names = {
        "encoder": [f"encoder.layers.{i}.self_attn" for i in range(2)],
        "decoder": [f"decoder.layers.{i}.self_attn" for i in range(2)],
        "cross": [f"decoder.layers.{i}.multihead_attn" for i in range(2)],
    }
    modules = dict(model.named_modules())
    handles = []
    for kind, ns in names.items():
        for i, n in enumerate(ns):

            def hook(mod, args, kwargs, kind=kind, i=i):
                calls[kind, i] = (args, kwargs)

            handles.append(modules[n].register_forward_pre_hook(hook, with_kwargs=True))
    with torch.no_grad(), _no_fastpath():  # so that the layers call their modules
        model(**batch)
    for h in handles:
        h.remove()
    for (kind, i), (args, kwargs) in calls.items():
        kw = {k: v for k, v in kwargs.items() if k not in ("need_weights", "is_causal")}
        with torch.no_grad():
            _, w = modules[names[kind][i]](
                *args, **kw, need_weights=True, average_attn_weights=False
            )
        np.testing.assert_allclose(maps[kind].probs[:, i], w.nan_to_num(0.0), atol=1e-6)
    assert not maps["decoder"].mask[0, 0, 1]  # causal
    # masking a cross-attention head, by kind
    with mask_heads(model, [(1, 0)], kind="cross"), torch.no_grad():
        masked = model(**batch)
    with torch.no_grad():
        assert not torch.equal(masked, model(**batch))
    with pytest.raises(ValueError, match="pass kind="):
        with mask_heads(model, [(1, 0)]):
            pass


class _no_fastpath:
    def __enter__(self):
        self.prev = torch.backends.mha.get_fastpath_enabled()
        torch.backends.mha.set_fastpath_enabled(False)

    def __exit__(self, *exc):
        torch.backends.mha.set_fastpath_enabled(self.prev)


def test_encoder_decoder_kinds_rank_and_select():
    model, batch, _ = t5()
    maps = extract_attention(model, batch)
    assert {k: m.probs.shape for k, m in maps.items()} == {
        "encoder": (2, 2, 4, 6, 6),
        "decoder": (2, 2, 4, 5, 5),
        "cross": (2, 2, 4, 5, 6),
    }
    cross = extract_attention(model, batch, kind="cross", layers=[1], heads=[3, 0])
    np.testing.assert_array_equal(cross.probs, maps["cross"].probs[:, [1]][:, :, [3, 0]])
    from skorg.attention import attention_entropy

    assert attention_entropy(cross).shape == (2, 2)
    assert attention_layout(model, "cross").n_layers == 2
    with pytest.raises(ValueError, match="no 'self' attention"):
        extract_attention(model, batch, kind="self")


def test_multi_batch_of_a_family_without_dynamic_attention_switch():
    model, batch, _ = falcon()  # Falcon cannot set_attn_implementation: skorg switches configs
    assert model.config._attn_implementation == "sdpa"
    both = extract_attention(model, [batch, batch])
    one = extract_attention(model, batch)
    np.testing.assert_array_equal(both.probs[:2], one.probs)
    np.testing.assert_array_equal(both.probs[2:], one.probs)
    assert model.config._attn_implementation == "sdpa"


def test_two_models_in_two_threads_are_both_correct():
    (m1, b1, _), (m2, b2, _) = bert(), gpt2()
    expected = [extract_attention(m1, b1).probs, extract_attention(m2, b2).probs]
    errors, wrong = [], []
    start = threading.Barrier(2)

    def work(model, batch, ref):
        start.wait()
        for _ in range(8):
            try:
                got = extract_attention(model, batch).probs
                if not np.array_equal(got, ref):
                    wrong.append(1)
            except Exception as exc:  # collected and reported below
                errors.append(repr(exc))

    threads = [
        threading.Thread(target=work, args=(m1, b1, expected[0])),
        threading.Thread(target=work, args=(m2, b2, expected[1])),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and not wrong
    # and a forward pass in another thread is never recorded into this extraction
    assert sum(len(m._forward_pre_hooks) for m in m1.modules()) == 0


def _custom_eager(post=None):
    """BERT's eager attention with a softmax skorg cannot see, or a change after it."""

    def hidden(scores, dim):  # a softmax by hand, as a custom kernel would compute it
        e = (scores - scores.amax(dim, keepdim=True)).exp()
        return e / e.sum(dim, keepdim=True)

    def eager_attention_forward(module, query, key, value, attention_mask, scaling=None,
                                dropout=0.0, **kwargs):  # fmt: skip
        scores = torch.matmul(query, key.transpose(2, 3)) * scaling
        if attention_mask is not None:
            scores = scores + attention_mask
        if post is None:
            weights = hidden(scores, dim=-1)
        else:
            weights = post(torch.nn.functional.softmax(scores, dim=-1))
        return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights

    return eager_attention_forward


def test_a_hidden_softmax_is_read_through_output_attentions(monkeypatch):
    import transformers.models.bert.modeling_bert as modeling_bert

    model, batch, _ = bert()
    reference = extract_attention(model, batch)
    monkeypatch.setattr(modeling_bert, "eager_attention_forward", _custom_eager())
    maps = extract_attention(model, [batch, batch])
    assert maps.logits is None and "logits unavailable" in maps.source
    np.testing.assert_allclose(maps.probs[:2], reference.probs, atol=1e-6)
    np.testing.assert_array_equal(maps.mask[:2], reference.mask)


def test_a_model_that_changes_its_softmax_output_is_refused(monkeypatch):
    import transformers.models.bert.modeling_bert as modeling_bert

    model, batch, _ = bert()
    custom = _custom_eager(post=lambda p: p.pow(2))  # what it returns is not the softmax
    monkeypatch.setattr(modeling_bert, "eager_attention_forward", custom)
    match = r"bert: the softmax skorg intercepts differs .* > 1e-05"
    with pytest.raises(RuntimeError, match=match):
        extract_attention(model, batch)


def test_gates_have_the_gradient_of_the_model():
    model, batch, _ = gpt2()
    model = model.double()
    gates = torch.ones(2, 4, dtype=torch.float64, requires_grad=True)

    def loss(g):
        from skorg.attention import gate_heads

        with gate_heads(model, g):
            return model(**batch).last_hidden_state.pow(2).mean()

    loss(gates).backward()
    eps = 1e-5
    for layer, head in [(0, 1), (1, 3)]:
        up, down = torch.ones(2, 4, dtype=torch.float64), torch.ones(2, 4, dtype=torch.float64)
        up[layer, head] += eps
        down[layer, head] -= eps
        with torch.no_grad():
            numeric = (loss(up) - loss(down)) / (2 * eps)
        torch.testing.assert_close(gates.grad[layer, head], numeric, rtol=1e-5, atol=1e-9)


def test_pruning_and_gradient_importance_on_each_kind():
    from skorg.attention import head_gradient_importance, prune_curves

    model, batch, _ = t5()

    def metric(m):
        with torch.no_grad():
            return float(m(**batch).last_hidden_state.exp().mean())

    every = np.arange(8)
    result = prune_curves(model, {"id": every}, metric, fractions=[0, 0.5, 1], kind="cross")
    with mask_heads(model, every[:4], kind="cross"):
        half = metric(model)
    assert result.baseline == metric(model) and result.curves["id"][1] == half
    with mask_heads(model, every, kind="encoder"):
        assert metric(model) != result.curves["id"][2]  # another kind, another model

    def loss(m, b):
        return m(**b).last_hidden_state.pow(2).mean()

    scores = head_gradient_importance(model, [batch], loss, kind="decoder")
    assert scores.shape == (8,) and np.all(np.isfinite(scores)) and scores.max() > 0
    with pytest.raises(ValueError, match="pass kind="):
        head_gradient_importance(model, [batch], loss)
