import contextlib

import numpy as np
import pytest
import torch

torch.set_num_threads(2)


class HookPoint(torch.nn.Module):
    """Identity module with a name, like TransformerLens's HookPoint."""

    def __init__(self, name):
        super().__init__()
        self.name = name

    def forward(self, x):
        return x


class FakeAttention(torch.nn.Module):
    def __init__(self, layer, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.W_Q = torch.nn.Linear(d_model, d_model)
        self.W_K = torch.nn.Linear(d_model, d_model)
        self.W_V = torch.nn.Linear(d_model, d_model)
        self.W_O = torch.nn.Linear(d_model, d_model)
        p = f"blocks.{layer}.attn."
        self.hook_attn_scores = HookPoint(p + "hook_attn_scores")
        self.hook_pattern = HookPoint(p + "hook_pattern")
        self.hook_z = HookPoint(p + "hook_z")

    def split(self, t):
        return t.unflatten(-1, (self.n_heads, self.d_head))

    def forward(self, x):
        q, k, v = (self.split(f(x)) for f in (self.W_Q, self.W_K, self.W_V))  # (B, P, H, d)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / self.d_head**0.5
        n = x.shape[1]
        causal = torch.ones(n, n, dtype=torch.bool).triu(1)
        scores = self.hook_attn_scores(scores.masked_fill(causal, float("-inf")))
        pattern = self.hook_pattern(torch.softmax(scores, -1))
        z = self.hook_z(torch.einsum("bhqk,bkhd->bqhd", pattern, v))
        return x + self.W_O(z.flatten(-2))


class FakeTransformerLens(torch.nn.Module):
    """Tiny causal attention model with TransformerLens's hook names and hook API."""

    def __init__(self, n_layers=2, d_model=8, n_heads=2, vocab=11):
        super().__init__()
        self.cfg = type("Cfg", (), {"n_layers": n_layers, "n_heads": n_heads})()
        self.embed = torch.nn.Embedding(vocab, d_model)
        self.blocks = torch.nn.ModuleList(
            FakeAttention(i, d_model, n_heads) for i in range(n_layers)
        )
        self.hook_dict = {m.name: m for m in self.modules() if isinstance(m, HookPoint)}

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return x

    @contextlib.contextmanager
    def hooks(self, fwd_hooks=()):
        handles = []
        for name, fn in fwd_hooks:
            point = self.hook_dict[name]

            def wrapped(module, args, output, fn=fn):
                return fn(output, hook=module)

            handles.append(point.register_forward_hook(wrapped))
        try:
            yield self
        finally:
            for h in handles:
                h.remove()

    def run_with_hooks(self, *args, fwd_hooks=(), **kwargs):
        with self.hooks(fwd_hooks=fwd_hooks):
            return self(*args, **kwargs)


@pytest.fixture
def fake_tlens():
    torch.manual_seed(0)
    return FakeTransformerLens().eval()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def tiny_bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=37, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    return BertModel(config).eval()


def tiny_gpt2():
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=50, n_embd=32, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )  # fmt: skip
    return GPT2Model(config).eval()


def tiny_vit():
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(0)
    config = ViTConfig(
        image_size=8, patch_size=2, num_channels=1, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=37,
    )  # fmt: skip
    return ViTModel(config).eval()


def tiny_encoder():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
    return torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()


@pytest.fixture(scope="session")
def minilm():
    from skorg.attention._setups import load_minilm

    return load_minilm()
