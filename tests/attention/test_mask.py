import numpy as np
import pytest
import torch
import torch.nn.functional as F

from skorg.attention import attention_layout, mask_heads

from .conftest import tiny_encoder


def n_hooks(model):
    return sum(len(m._forward_pre_hooks) + len(m._forward_hooks) for m in model.modules())


def test_mha_mask_matches_manual_output():
    model = tiny_encoder()
    layer = model.layers[0]
    x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = model(x)
        _, w = layer.self_attn(x, x, x, need_weights=True, average_attn_weights=False)
    mha = layer.self_attn
    seen = []
    with mask_heads(model, [(0, 1), (0, 3)]), torch.no_grad():
        # registered after the gating hook, so it sees the gated output
        handle = mha.register_forward_hook(lambda m, a, out: seen.append(out[0].detach()))
        masked = model(x)
    handle.remove()
    v = F.linear(x, mha.in_proj_weight[32:], mha.in_proj_bias[32:]).unflatten(-1, (4, 4))
    z = torch.einsum("bhqk,bkhd->bqhd", w, v)
    z[:, :, [1, 3]] = 0
    expected = F.linear(z.flatten(-2), mha.out_proj.weight, mha.out_proj.bias)
    torch.testing.assert_close(seen[0], expected, atol=1e-5, rtol=0)
    assert not torch.equal(masked, ref)
    with mask_heads(model, []), torch.no_grad():
        assert torch.equal(model(x), ref)
    assert n_hooks(model) == 0


def test_tlens_mask_on_hook_z(fake_tlens):
    tokens = torch.tensor([[1, 2, 3, 4]])
    seen = {}

    def keep(z, hook):
        seen[hook.name] = z

    names = [("blocks.0.attn.hook_z", keep), ("blocks.1.attn.hook_z", keep)]
    with torch.no_grad():
        ref = fake_tlens.run_with_hooks(tokens, fwd_hooks=names)
        before = dict(seen)
        with mask_heads(fake_tlens, [1]):  # flat id 1 = (layer 0, head 1)
            masked = fake_tlens.run_with_hooks(tokens, fwd_hooks=names)
    z0 = seen["blocks.0.attn.hook_z"]
    assert torch.all(z0[:, :, 1] == 0) and torch.equal(
        z0[:, :, 0], before["blocks.0.attn.hook_z"][:, :, 0]
    )
    assert not torch.equal(masked, ref)
    assert attention_layout(fake_tlens).kind == "tlens"


def test_mask_argument_errors():
    model = tiny_encoder()
    with pytest.raises(ValueError, match="shape"):
        with mask_heads(model, np.zeros((3, 4), dtype=bool)):
            pass
    with pytest.raises(ValueError, match="out of range"):
        with mask_heads(model, [(2, 0)]):
            pass
    with pytest.raises(ValueError, match="flat head ids"):
        with mask_heads(model, [8]):
            pass
