"""Swin's windowed attention: every block, on a named window axis or at image positions.

Each Swin block runs its softmax inside the windows of the image: a (batch * windows, head,
W, W) tensor, image-major, W the tokens of a window. skorg keeps every block (the model's
``output_attentions`` holds only the last block of each stage, against which those blocks are
checked). The shifted blocks run on the cyclically shifted image, and the pairs of tokens that
the shift brought together from different regions get an additive -100 from the model (its
mask, passed to the attention module): skorg marks them masked (logit -inf, probability 0),
the probability they lose being below 1e-30 (e^-100 relative to the row).

Two layouts of the result. ``windows="axis"``: the sample axis holds the windows
(``sample_axis="window"``, ``windows_per_image``). ``windows="image"``: every block becomes one
(positions x positions) query x key map per image, the positions being the block's patch
tokens in the model's row-major order; a query's keys outside its window (after the block's
cyclic shift) are masked (logit -inf, mask False), never zero probabilities of allowed keys.
"""

from __future__ import annotations

import numpy as np
import torch

from .._validation import check_memory

FAMILIES = ("swin", "swinv2", "donut-swin", "swin2sr")
_CLASSES = (
    "SwinAttention", "Swinv2SelfAttention", "DonutSwinSelfAttention",
    "Swin2SRSelfAttention",
)  # fmt: skip
_BLOCKS = ("SwinLayer", "Swinv2Layer", "DonutSwinLayer", "Swin2SRLayer")
LAYOUTS = ("axis", "image")

SOURCE = (
    "; windowed attention: the sample axis holds the windows of each image (image-major, "
    "sample_axis='window'), every block returned (output_attentions holds the last block of "
    "each stage), the shifted blocks' windows taken on the cyclically shifted image and the "
    "token pairs their mask separates marked masked"
)
IMAGE_SOURCE = (
    "; windowed attention mapped back to image positions (windows='image'): every block "
    "(output_attentions holds the last block of each stage) as one positions x positions map "
    "per image, the positions being the block's patch tokens in row-major order; keys outside "
    "the query's window (taken after the block's cyclic shift) and the token pairs the shifted "
    "blocks' mask separates are masked (logit -inf), never zero probabilities of allowed keys"
)


class Windowed:
    """Captures every block's window mask and geometry, and applies them to its softmax call."""

    def __init__(self, model, layout="axis"):
        self.model = model
        self.layout = layout
        self.modules = {m for m in model.modules() if type(m).__name__ in _CLASSES}
        self.blocks = {}  # attention module -> the block (layer) that partitions its windows
        for block in model.modules():
            if type(block).__name__ in _BLOCKS:
                for inner in block.modules():
                    if inner in self.modules:
                        self.blocks[inner] = block
        self.masks = {}
        self.sizes = {}  # block -> (height, width) of its input, in patches
        self.handles = []

    def __enter__(self):
        for module in self.modules:
            self.handles.append(module.register_forward_pre_hook(self._keep_mask, with_kwargs=True))
        for block in set(self.blocks.values()):
            self.handles.append(block.register_forward_pre_hook(self._keep_size, with_kwargs=True))
        return self

    def __exit__(self, *exc):
        for handle in self.handles:
            handle.remove()
        self.handles = []
        self.masks = {}
        self.sizes = {}

    def _keep_mask(self, module, args, kwargs):
        mask = kwargs.get("attention_mask", args[1] if len(args) > 1 else None)
        self.masks[module] = mask if isinstance(mask, torch.Tensor) else None

    def _keep_size(self, block, args, kwargs):
        size = kwargs.get("input_dimensions", args[1] if len(args) > 1 else None)
        self.sizes[block] = None if size is None else tuple(int(s) for s in size)

    def applies(self, module):
        return module in self.modules

    def expand_call(self, module, logits, probs):
        """The block's softmax with the pairs its window mask separates masked."""
        mask = self.masks.get(module)
        if mask is None:
            return logits, probs
        windows = mask.shape[0]
        if probs.dim() != 4 or probs.shape[0] % windows or mask.shape[1:] != probs.shape[2:]:
            raise ValueError(
                f"{self.model.config.model_type}: a window mask of shape {tuple(mask.shape)} for "
                f"a softmax of shape {tuple(probs.shape)}; skorg cannot name its windows."
            )
        separated = (mask != 0).repeat(probs.shape[0] // windows, 1, 1)[:, None]
        return logits.masked_fill(separated, float("-inf")), probs.masked_fill(separated, 0.0)

    def geometry(self, module):
        """``(height, width, window, shift)`` of the block that ran this attention call."""
        block = self.blocks.get(module)
        size = self.sizes.get(block)
        if block is None or size is None:
            raise ValueError(
                f"{self.model.config.model_type}: the block of attention module "
                f"{type(module).__name__} did not say its image size; skorg cannot map its "
                "windows back to image positions (use windows='axis')."
            )
        return (*size, int(block.window_size), int(block.shift_size))

    def to_images(self, module, logits, probs):
        """One block's (batch * windows, H, W, W) call as (batch, H, positions, positions)."""
        height, width, window, shift = self.geometry(module)
        family = self.model.config.model_type
        if height % window or width % window:
            raise ValueError(
                f"{family}: a block pads its {height} x {width} patches to multiples of its "
                f"window ({window}), and the padded positions, which its queries attend to, are "
                "not image positions; skorg cannot map these windows back to the image "
                "(use windows='axis', which keeps them)."
            )
        positions = window_positions(height, width, window, shift)  # (windows, W)
        n_windows, size = positions.shape
        if probs.shape[0] % n_windows or probs.shape[2:] != (size, size):
            raise ValueError(
                f"{family}: a softmax of shape {tuple(probs.shape)} for {n_windows} windows of "
                f"{size} tokens; skorg cannot map its windows back to image positions."
            )
        n = height * width
        batch, heads = probs.shape[0] // n_windows, probs.shape[1]
        # the dense maps grow as positions squared (the windows as positions x window size)
        check_memory(
            2 * batch * heads * n * n * probs.element_size(),
            f"{family}: windows='image' (windows='axis' keeps the windows, n / window^2 times "
            f"smaller): one block's maps at image positions ({batch} images x {heads} heads x "
            f"{n} x {n} positions, probabilities and logits)",
        )
        flat = torch.from_numpy((positions[:, :, None] * n + positions[:, None, :]).reshape(-1)).to(
            probs.device
        )

        def place(t, fill):
            batch, heads = t.shape[0] // n_windows, t.shape[1]
            by_window = t.reshape(batch, n_windows, heads, size, size).transpose(1, 2)
            out = t.new_full((batch, heads, n * n), fill)
            out[:, :, flat] = by_window.reshape(batch, heads, -1)
            return out.reshape(batch, heads, n, n)

        return place(logits, float("-inf")), place(probs, 0.0)


def window_positions(height, width, window, shift):
    """The image position (row-major) of every token of every window of a block.

    The block rolls its (height, width) grid of patches by ``-shift`` on both axes, then cuts
    it into ``window x window`` windows, row-major, their tokens row-major: token t of window
    w holds the patch at ``positions[w, t]``.
    """
    grid = np.arange(height * width).reshape(height, width)
    grid = np.roll(grid, (-shift, -shift), axis=(0, 1))
    tiles = grid.reshape(height // window, window, width // window, window).transpose(0, 2, 1, 3)
    return tiles.reshape(-1, window * window)


def depths(model):
    """Blocks per stage, from the config."""
    return [int(d) for d in model.config.depths]


def per_input(maps, what):
    """Refuse maps whose sample axis holds windows, where ``what`` needs one sample per input."""
    groups = getattr(maps, "groups", [maps])
    windowed = [g for g in groups if getattr(g, "sample_axis", "input") == "window"]
    if windowed:
        raise ValueError(
            f"{what} needs one sample per input, and these maps hold the windows of each image "
            f"on their sample axis (sample_axis='window', {windowed[0].windows_per_image} "
            "windows per image); extract them with extract_attention(..., windows='image') to "
            "map every block back to image positions."
        )
