"""Longformer's sliding-window attention on the query x key grid, against the model's band.

Oracle: the model's own eager ``output_attentions``, a (batch, head, query, offset) band whose
offset j of query i is key i + j - w; every band entry must be the map's entry at its key, and
every key outside the window must be masked (mask False, logit -inf, probability 0).
"""

import numpy as np
import pytest
import torch

from skorg.attention import extract_attention

from .families_long import longformer
from .test_families import _mask_one_head, eager_everywhere


@pytest.mark.parametrize("seq", [7, 8])  # 7: the model pads to a multiple of its window
def test_longformer_maps_are_the_band_placed_at_its_keys(seq):
    model, batch, _ = longformer(seq=seq)
    maps = extract_attention(model, batch)
    assert maps.probs.shape == (2, 2, 4, seq, seq) and "window are masked" in maps.source
    model.config._attn_implementation_internal = "eager"
    with torch.no_grad():
        out = model(**batch, output_attentions=True)
    band = torch.stack(out.attentions, 1).double().numpy()  # (batch, layer, head, query, 2w+1)
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
