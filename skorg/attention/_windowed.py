"""Swin's windowed attention: every block, with the windows as a named sample axis.

Each Swin block runs its softmax inside the windows of the image: a (batch * windows, head,
W, W) tensor, image-major, W the tokens of a window. skorg keeps every block (the model's
``output_attentions`` holds only the last block of each stage, against which those blocks are
checked) and names the sample axis: ``sample_axis="window"`` and ``windows_per_image``. The
shifted blocks run on the cyclically shifted image, and the pairs of tokens that the shift
brought together from different regions get an additive -100 from the model (its mask, passed
to the attention module): skorg marks them masked (logit -inf, probability 0), the probability
they lose being below 1e-30 (e^-100 relative to the row).
"""

from __future__ import annotations

import torch

FAMILIES = ("swin", "swinv2")
_CLASSES = ("SwinAttention", "Swinv2SelfAttention")

SOURCE = (
    "; windowed attention: the sample axis holds the windows of each image (image-major, "
    "sample_axis='window'), every block returned (output_attentions holds the last block of "
    "each stage), the shifted blocks' windows taken on the cyclically shifted image and the "
    "token pairs their mask separates marked masked"
)


class Windowed:
    """Captures the window mask of every block and applies it to the block's softmax call."""

    def __init__(self, model):
        self.model = model
        self.modules = {m for m in model.modules() if type(m).__name__ in _CLASSES}
        self.masks = {}
        self.handles = []

    def __enter__(self):
        for module in self.modules:
            self.handles.append(module.register_forward_pre_hook(self._keep_mask, with_kwargs=True))
        return self

    def __exit__(self, *exc):
        for handle in self.handles:
            handle.remove()
        self.handles = []
        self.masks = {}

    def _keep_mask(self, module, args, kwargs):
        mask = kwargs.get("attention_mask", args[1] if len(args) > 1 else None)
        self.masks[module] = mask if isinstance(mask, torch.Tensor) else None

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


def depths(model):
    """Blocks per stage, from the config."""
    return [int(d) for d in model.config.depths]
