"""Swin and Swinv2 with windows="image": every block as one query x key map per image.

Oracles: the model's own softmax calls (recorded by patching torch's softmax, apart from
skorg) placed at image positions by the definition of the block's windows (a patch at (r, c)
lands, after the roll by -shift, in window ((r - s) mod H // w, (c - s) mod W // w), at slot
((r - s) mod H % w, (c - s) mod W % w)), written as loops; the block's own attention output,
recomputed from the image maps and the values at image positions; one image alone; and the
per-input functions, which see images.
"""

import functools

import numpy as np
import pytest
import torch

from skorg.attention import (
    RaggedAttentionMaps,
    extract_attention,
    network_tensor,
    sensitivity_sweep,
    softmax_invariance_survey,
)
from skorg.trees import dyadic_tree

from .families_long import LONG_WINDOWED
from .test_windowed import LAYOUT, _blocks, _model_softmaxes

# family -> (patches per side, window, shift) of each stage's blocks
GEOMETRY = {
    "swin": [(4, 2, 0), (4, 2, 1)],
    "swin-2stages": [(4, 2, 0), (4, 2, 1), (2, 2, 0), (2, 2, 0)],
    "swinv2": [(4, 2, 0), (4, 2, 1)],
    "donut-swin": [(4, 2, 0), (4, 2, 1), (2, 2, 0), (2, 2, 0)],
    "swin2sr": [(8, 2, 0), (8, 2, 1), (8, 2, 0), (8, 2, 1)],
}


def _heads(name):
    depths, heads, _ = LAYOUT[name]
    return [h for d, h in zip(depths, heads, strict=True) for _ in range(d)]


@functools.cache
def _extracted(name):
    try:
        model, batch, _ = LONG_WINDOWED[name]()
    except (ImportError, AttributeError) as exc:  # pragma: no cover - older transformers
        pytest.skip(f"{name} is not in the installed transformers: {exc}")
    return model, batch, extract_attention(model, batch, windows="image")


def _slot(r, c, side, window, shift):
    rr, cc = (r - shift) % side, (c - shift) % side
    return (rr // window) * (side // window) + cc // window, (rr % window) * window + cc % window


def _brute_force(window_probs, side, window, shift):
    """(images * windows, heads, w*w, w*w) -> (images, heads, N, N), and the allowed pairs."""
    n = side * side
    per_image = window_probs.shape[0] // (side // window) ** 2
    out = np.zeros((per_image, window_probs.shape[1], n, n))
    allowed = np.zeros((n, n), dtype=bool)
    n_windows = (side // window) ** 2
    for q in range(n):
        wq, tq = _slot(*divmod(q, side), side, window, shift)
        for k in range(n):
            wk, tk = _slot(*divmod(k, side), side, window, shift)
            if wq == wk:
                allowed[q, k] = True
                for b in range(per_image):
                    out[b, :, q, k] = window_probs[b * n_windows + wq, :, tq, tk]
    return out, allowed


@pytest.mark.parametrize("name", list(LAYOUT))
def test_every_block_is_the_models_softmax_at_image_positions(name, monkeypatch):
    model, batch, maps = _extracted(name)
    calls, _ = _model_softmaxes(model, batch, monkeypatch)
    depths = LAYOUT[name][0]
    sizes = {(g[0], h) for g, h in zip(GEOMETRY[name], _heads(name), strict=True)}
    assert isinstance(maps, RaggedAttentionMaps) == (len(sizes) > 1)
    assert maps.layers.tolist() == list(range(sum(depths)))
    assert "mapped back to image positions" in maps.source
    blocks = _blocks(maps)
    assert len(blocks) == len(calls) == len(GEOMETRY[name])
    for (group, i), (logits, probs), geometry in zip(blocks, calls, GEOMETRY[name], strict=True):
        assert group.sample_axis == "input" and group.windows_per_image is None
        want, allowed = _brute_force(probs, *geometry)
        separated, _ = _brute_force(logits < -50, *geometry)  # the shifted blocks' mask
        got = group.probs[:, i].astype(np.float64)
        assert got.shape == want.shape and group.probs.shape[0] == 2
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
        outside = np.broadcast_to(~allowed, got.shape) | (separated > 0)
        # keys outside the window (or separated by the shift) masked, never zero-probability
        # keys that are allowed
        assert np.array_equal(np.isneginf(group.logits[:, i]), outside)
        assert np.all(got[outside] == 0) and np.all(got[~outside] > 0)
        np.testing.assert_allclose(got.sum(-1), 1.0, rtol=0, atol=1e-6)
        assert np.all(group.mask[~outside[:, 0]])  # the mask holds every block's pairs
    shifts = [g[2] for g in GEOMETRY[name]]
    assert any(shifts)  # a shifted block is among them


# post-norm blocks (Swinv2, Swin2SR) normalize the attention output after it, and their
# values come from the block input; pre-norm blocks (Swin, Donut) normalize before
_POST_NORM = ("swinv2", "swin2sr")
_BLOCKS = ("SwinLayer", "Swinv2Layer", "DonutSwinLayer", "Swin2SRLayer")


def _parts(block):
    """(value projection, head count, output projection) of a block's attention."""
    att = block.attention
    if hasattr(att, "v_proj"):  # Swin
        return att.v_proj, att.num_attention_heads, att.o_proj
    return att.self.value, att.self.num_attention_heads, att.output.dense


def _values_and_output(model, name, batch):
    """Per block: the values at image positions and the block's attention output there."""
    got = []
    hooks = []
    post = name in _POST_NORM
    blocks = [m for m in model.modules() if type(m).__name__ in _BLOCKS]

    def keep(block):
        value, heads, _ = _parts(block)

        def before(module, args, kwargs):
            x = args[0]
            values = value(x if post else block.layernorm_before(x))
            got.append({"x": x, "values": values.unflatten(-1, (heads, -1)).transpose(1, 2)})

        def after_norm(module, args):
            entry = got[-1]
            entry["output"] = args[0] if post else args[0] - entry["x"]

        hooks.append(block.register_forward_pre_hook(before, with_kwargs=True))
        norm = block.layernorm_before if post else block.layernorm_after
        hooks.append(norm.register_forward_pre_hook(after_norm))

    for block in blocks:
        keep(block)
    try:
        with torch.no_grad():
            model(**batch)
    finally:
        for h in hooks:
            h.remove()
    return blocks, got


@pytest.mark.parametrize("name", list(LAYOUT))
def test_the_image_maps_give_the_blocks_own_attention_output(name):
    """o_proj(P_image @ V_image) is the block's attention output at every image position."""
    model, batch, maps = _extracted(name)
    blocks, got = _values_and_output(model, name, batch)
    assert len(blocks) == len(got) == len(_blocks(maps))
    for block, entry, (group, i) in zip(blocks, got, _blocks(maps), strict=True):
        p = torch.from_numpy(group.probs[:, i]).to(entry["values"].dtype)
        context = (p @ entry["values"]).transpose(1, 2).flatten(2)
        with torch.no_grad():
            output = _parts(block)[2](context)
        np.testing.assert_allclose(output.numpy(), entry["output"].numpy(), rtol=0, atol=1e-5)


def test_one_image_alone_gives_its_maps_back():
    model, batch, maps = _extracted("swin")
    alone = extract_attention(model, {"pixel_values": batch["pixel_values"][1:]}, windows="image")
    np.testing.assert_allclose(alone.probs[0], maps.probs[1], rtol=0, atol=1e-6)
    np.testing.assert_array_equal(np.isneginf(alone.logits[0]), np.isneginf(maps.logits[1]))


def test_the_per_input_functions_see_images():
    _, _, maps = _extracted("swin")
    X, index = network_tensor(maps, 1)
    assert X.shape == (16, 16, 4) and index.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    np.testing.assert_array_equal(X[:, :, 3], maps.probs[1, 1, 1])
    trees = [(dyadic_tree(16), dyadic_tree(16))] * 2
    rows = sensitivity_sweep(maps, trees, ks=(8, 16), default_k=16, n_resamples=50)
    assert {r["parameter"] for r in rows} >= {"k", "fraction"}
    survey = softmax_invariance_survey(maps, trees[0], n_resamples=50)
    exact = next(r for r in survey["summary"] if r["variant"] == "exact")
    assert exact["share_within"] == 1.0  # telescoping holds on each image's masked maps


def test_the_per_input_functions_refuse_windows_with_the_way_out():
    model, batch, _ = _extracted("swin")
    windows = extract_attention(model, batch)
    trees = [(dyadic_tree(4), dyadic_tree(4))] * windows.n_samples
    for call in (
        lambda: network_tensor(windows, 0),
        lambda: sensitivity_sweep(windows, trees, n_resamples=50),
        lambda: softmax_invariance_survey(windows, trees[0], n_resamples=50),
    ):
        with pytest.raises(ValueError, match=r"one sample per input.*windows='image'"):
            call()


def test_windows_must_be_axis_or_image():
    model, batch, _ = _extracted("swin")
    with pytest.raises(ValueError, match="windows must be 'axis' or 'image', got 'images'"):
        extract_attention(model, batch, windows="images")


def test_a_padded_block_is_refused_in_image_positions():
    """An image of 3 x 3 patches under windows of 2 is padded: the padding is not the image."""
    from .families import _make, _pixels

    model = _make(
        None, "SwinConfig", "SwinModel", image_size=6, patch_size=2, num_channels=1,
        embed_dim=8, depths=[2], num_heads=[2], window_size=2, mlp_ratio=2.0,
        drop_path_rate=0.0,
    )  # fmt: skip
    batch = _pixels(size=6)
    extract_attention(model, batch)  # the window axis keeps the padded windows
    with pytest.raises(ValueError, match=r"^swin: a block pads its 3 x 3 patches"):
        extract_attention(model, batch, windows="image")


def test_image_positions_are_refused_past_the_memory_budget(monkeypatch):
    """Dense maps grow as positions squared: the budget is asked before they are allocated."""
    model, batch, _ = _extracted("swin")
    monkeypatch.setenv("SKORG_MAX_MEMORY", "0.001")  # MiB: below one block's 2 x 2 x 16 x 16
    with pytest.raises(
        MemoryError, match=r"^swin: windows='image' .*\(2 images x 2 heads x 16 x 16"
    ):
        extract_attention(model, batch, windows="image")
    extract_attention(model, batch)  # the window axis stays small
