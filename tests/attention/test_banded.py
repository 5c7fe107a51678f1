"""Longformer's sliding-window attention on the query x key grid, against the model's band.

Oracle: the model's own eager ``output_attentions``, a (batch, head, query, offset) band whose
offset j of query i is key i + j - w; every band entry must be the map's entry at its key, and
every key outside the window must be masked (mask False, logit -inf, probability 0).
"""

import numpy as np
import pytest
import torch

from skorg.attention import extract_attention

from .families_long import led, longformer
from .test_families import _mask_one_head, eager_everywhere


def _case(case):
    """Batch, maps and the model's eager band of one case (LED: its other kinds checked)."""
    if case == "led":  # its encoder is Longformer's; its decoder and cross-attention are full
        model, batch, _ = led()
        maps = extract_attention(model, batch)
        field, full = "encoder_attentions", maps
        maps = full["encoder"]
    else:
        seq = int(case.split("-")[1])
        model, batch, _ = longformer(seq=seq)
        maps = full = extract_attention(model, batch)
        field = "attentions"
    with eager_everywhere(model), torch.no_grad():
        out = model(**batch, output_attentions=True)
    if case == "led":
        for kind in ("decoder", "cross"):
            ref = torch.stack(out[f"{kind}_attentions"], 1).double().numpy()
            allowed = np.isfinite(full[kind].logits)
            np.testing.assert_allclose(full[kind].probs[allowed], ref[allowed], atol=1e-5)
    band = torch.stack(out[field], 1).double().numpy()  # (batch, layer, head, query, 2w+1)
    return batch, maps, band


# longformer-7: the model pads its 7 tokens to a multiple of its window
@pytest.mark.parametrize("case", ["longformer-7", "longformer-8", "led"])
def test_sliding_window_maps_are_the_band_placed_at_its_keys(case):
    batch, maps, band = _case(case)
    seq = batch["input_ids"].shape[1]
    assert maps.probs.shape == (2, 2, 4, seq, seq) and "window are masked" in maps.source
    w = (band.shape[-1] - 1) // 2
    real = batch["attention_mask"].numpy().astype(bool)
    covered = np.zeros(maps.probs.shape, dtype=bool)
    for i in range(seq):
        for j in range(2 * w + 1):
            k = i + j - w
            if 0 <= k < seq:
                covered[..., i, k] = True
                np.testing.assert_allclose(maps.probs[..., i, k], band[..., i, j], atol=1e-6)
    # outside every window: masked, not a zero-probability key the query could attend
    assert np.all(maps.probs[~covered] == 0) and np.all(np.isneginf(maps.logits[~covered]))
    window = covered[:, 0, 0]
    want = window & real[:, None, :] & real[:, :, None]  # padding keys and padding queries
    np.testing.assert_array_equal(maps.mask, want)
    assert maps.mask[1].sum() < maps.mask[0].sum()  # the padded input
    # the softmax of the logits gives the probabilities; real query rows sum to 1
    back = torch.softmax(torch.from_numpy(maps.logits).double(), -1).nan_to_num(0.0).numpy()
    np.testing.assert_allclose(back, maps.probs, atol=1e-6)
    sums = maps.probs.sum(-1)
    np.testing.assert_allclose(sums[np.broadcast_to(real[:, None, None], sums.shape)], 1, atol=1e-6)


def test_longformer_global_attention_is_refused():
    model, batch, _ = longformer()
    glob = torch.zeros_like(batch["input_ids"])
    glob[:, 0] = 1
    with pytest.raises(ValueError, match=r"^longformer: global attention .* refuses this input"):
        extract_attention(model, {**batch, "global_attention_mask": glob})


@pytest.mark.parametrize("seq", [8, 4])  # 4: as many tokens as heads
def test_longformer_mask_removes_exactly_one_head(seq):
    # its softmax is (batch, sequence, heads, window): the gate must land on axis 2
    model, batch, _ = longformer(seq=seq, heads=4)
    assert seq != 4 or batch["input_ids"].shape[1] == model.config.num_attention_heads
    with eager_everywhere(model):
        _mask_one_head("longformer", model, batch, {"self": r"attention\.output\.dense$"})


def test_led_mask_removes_exactly_one_head_of_every_kind():
    model, batch, _ = led()
    out_proj = {
        "encoder": r"encoder\.layers\.\d+\.self_attn\.output$",
        "decoder": r"decoder\.layers\.\d+\.self_attn\.out_proj$",
        "cross": r"encoder_attn\.out_proj$",
    }
    with eager_everywhere(model):
        _mask_one_head("led", model, batch, out_proj)
