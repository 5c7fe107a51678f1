"""Head masking by hooks, for models whose library no longer offers ``head_mask``."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np
import torch

from ._extract import _backend

__all__ = ["attention_layout", "gate_heads", "mask_heads"]


@dataclass(frozen=True)
class _Layout:
    kind: str
    n_layers: int
    n_heads: int


def attention_layout(model):
    """Kind of backend and the number of layers and heads per layer that masking acts on.

    Parameters
    ----------
    model : transformers model, TransformerLens model, or torch.nn.Module

    Returns
    -------
    layout : object with attributes ``kind`` ("hf", "mha" or "tlens"), ``n_layers``,
        ``n_heads``.

    Examples
    --------
    >>> import torch
    >>> from skorg.attention import attention_layout
    >>> enc = torch.nn.TransformerEncoder(
    ...     torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 3,
    ...     enable_nested_tensor=False)
    >>> attention_layout(enc)
    _Layout(kind='mha', n_layers=3, n_heads=2)
    """
    backend = _backend(model)
    kind = backend.__name__.rsplit("._", 1)[-1]
    if kind == "hf":
        units, n_heads = backend.out_projections(model)
        return _Layout("hf", len(units), n_heads)
    if kind == "mha":
        units = backend.modules(model)
        heads = {m.num_heads for m in units}
        if len(heads) != 1:
            raise ValueError(f"layers have different numbers of heads {sorted(heads)}.")
        return _Layout("mha", len(units), heads.pop())
    n_layers, n_heads = backend.n_layers_heads(model)
    return _Layout("tlens", n_layers, n_heads)


@contextlib.contextmanager
def _hf_gating(model, gates, layers):
    from ._hf import out_projections

    units, n_heads = out_projections(model)
    handles = []

    def make_hook(index):
        def hook(module, args):
            x = args[0]
            shaped = x.unflatten(-1, (n_heads, x.shape[-1] // n_heads))
            gated = (shaped * gates[index].view(-1, 1).to(x.dtype)).flatten(-2)
            return (gated, *args[1:])

        return hook

    try:
        for i in layers:
            handles.append(units[i].register_forward_pre_hook(make_hook(i)))
        yield
    finally:
        for handle in handles:
            handle.remove()


@contextlib.contextmanager
def gate_heads(model, gates, *, layers=None):
    """Multiply every head's contribution by a gate, before the layer's output projection.

    The gates may require gradients: this is how the gradient importance of a head mask is
    computed (Michel et al., 2019). Gating acts on the concatenated head outputs that enter the
    output projection (BERT/ViT ``attention.output.dense``, GPT-2 ``attn.c_proj``,
    TransformerLens ``hook_z``); for ``nn.MultiheadAttention``, whose fused forward does not
    expose them, the layer output is recomputed from its weights with gated heads.

    Parameters
    ----------
    model : transformers model, TransformerLens model, or torch.nn.Module
    gates : torch.Tensor of shape (n_layers, n_heads)
    layers : sequence of int, optional
        Only these layers get hooks (the others run untouched); all by default.

    Yields
    ------
    model
        The same model, gated until the block exits; the hooks are removed afterwards.
    """
    layout = attention_layout(model)
    if tuple(gates.shape) != (layout.n_layers, layout.n_heads):
        raise ValueError(
            f"gates must have shape {(layout.n_layers, layout.n_heads)}, got {tuple(gates.shape)}."
        )
    layers = range(layout.n_layers) if layers is None else list(layers)
    if layout.kind == "hf":
        ctx = _hf_gating(model, gates, layers)
    elif layout.kind == "mha":
        from ._mha import gating

        ctx = gating(model, gates, layers)
    else:
        from ._tlens import gating

        ctx = gating(model, gates, layers)
    with ctx:
        yield model


def _head_matrix(heads, layout):
    mask = np.zeros((layout.n_layers, layout.n_heads), dtype=bool)
    if heads is None:
        return mask
    arr = np.asarray(heads)
    if arr.dtype == bool:
        if arr.shape != mask.shape:
            raise ValueError(f"a boolean head mask must have shape {mask.shape}, got {arr.shape}.")
        return arr.copy()
    arr = arr.astype(np.int64, copy=False)
    if arr.size == 0:
        return mask
    if arr.ndim == 1:  # flat, layer-major head ids
        if arr.min() < 0 or arr.max() >= mask.size:
            raise ValueError(f"flat head ids must lie in [0, {mask.size}), got {arr}.")
        mask.ravel()[arr] = True
        return mask
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError("heads must be flat ids, (layer, head) pairs or a boolean matrix.")
    if arr.min() < 0 or (arr[:, 0] >= layout.n_layers).any() or (arr[:, 1] >= layout.n_heads).any():
        raise ValueError(f"(layer, head) pairs out of range for {mask.shape}: {arr.tolist()}.")
    mask[arr[:, 0], arr[:, 1]] = True
    return mask


@contextlib.contextmanager
def mask_heads(model, heads):
    """Zero the contribution of chosen heads inside a ``with`` block.

    Parameters
    ----------
    model : transformers model, TransformerLens model, or torch.nn.Module
    heads : bool array of shape (n_layers, n_heads), (layer, head) pairs, or flat ids
        The heads to remove; flat ids are ``layer * n_heads + head``.

    Yields
    ------
    model
        The same model; only layers with a masked head are hooked, so masking nothing leaves
        the computation bit-identical, and the model is restored when the block exits.

    Examples
    --------
    >>> import torch
    >>> from skorg.attention import mask_heads
    >>> _ = torch.manual_seed(0)
    >>> layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()
    >>> x = torch.randn(1, 4, 8)
    >>> with mask_heads(layer, [(0, 1)]):
    ...     masked = layer(x)
    >>> bool((masked != layer(x)).any())
    True
    """
    layout = attention_layout(model)
    removed = _head_matrix(heads, layout)
    gates = torch.from_numpy((~removed).astype(np.float32))
    if not removed.any():  # no hook at all (nor a switch of kernels): the model as it is
        yield model
        return
    param = next(iter(model.parameters()), None)
    if param is not None:
        gates = gates.to(param.device)
    with gate_heads(model, gates, layers=np.flatnonzero(removed.any(axis=1)).tolist()):
        yield model
