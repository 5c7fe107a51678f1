"""Head masking by hooks, for models whose library no longer offers ``head_mask``."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np
import torch

from ._extract import _backend

__all__ = ["attention_layout", "gate_heads", "mask_heads"]


@dataclass(frozen=True)
class _Layout:
    kind: str
    n_layers: int
    n_heads: int
    attention: str = "self"
    # heads of every layer where layers differ (stages of Swin, SegFormer); n_heads is the most
    layer_heads: tuple | None = field(default=None, repr=False)

    @property
    def heads_per_layer(self):
        """The number of heads of every layer."""
        return self.layer_heads or (self.n_heads,) * self.n_layers

    @property
    def n_total(self):
        """Heads of all layers: the length of a flat, layer-major head id list."""
        return int(sum(self.heads_per_layer))


def _kinds(model):
    """Backend name and ``{attention kind: (n_layers, n_heads)}`` of a model."""
    backend = _backend(model)
    name = backend.__name__.rsplit("._", 1)[-1]
    if name == "hf":
        from ._hf_gating import gating_plan

        return name, gating_plan(model)
    if name == "mha":
        kinds = {}
        for kind, units in backend.modules(model).items():
            heads = {m.num_heads for m in units}
            if len(heads) != 1:
                raise ValueError(
                    f"{kind} attention layers have different numbers of heads {sorted(heads)}."
                )
            kinds[kind] = (len(units), heads.pop())
        return name, kinds
    return name, {"self": backend.n_layers_heads(model)}


def attention_layout(model, kind=None):
    """Kind of backend and the number of layers and heads per layer that masking acts on.

    Parameters
    ----------
    model : transformers model, TransformerLens model, or torch.nn.Module
    kind : {"self", "encoder", "decoder", "cross"}, optional
        The kind of attention; required for models with several (encoder-decoder models).

    Returns
    -------
    layout : object with attributes ``kind`` ("hf", "mha" or "tlens"), ``n_layers``,
        ``n_heads`` (the most heads of a layer), ``attention`` (the kind of attention),
        ``heads_per_layer`` and ``n_total`` (all heads). Models whose stages differ in heads
        (Swin, SegFormer) number their heads layer-major: flat id = the heads of the earlier
        layers + head.

    Examples
    --------
    >>> import torch
    >>> from skorg.attention import attention_layout
    >>> enc = torch.nn.TransformerEncoder(
    ...     torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 3,
    ...     enable_nested_tensor=False)
    >>> attention_layout(enc)
    _Layout(kind='mha', n_layers=3, n_heads=2, attention='self')
    """
    from ._extract import _unwrap

    name, kinds = _kinds(_unwrap(model))
    if kind is None:
        if len(kinds) > 1:
            raise ValueError(
                f"the model has several kinds of attention {sorted(kinds)}; pass kind=."
            )
        kind = next(iter(kinds))
    if kind not in kinds:
        raise ValueError(f"the model has no {kind!r} attention; it has {sorted(kinds)}.")
    n_layers, n_heads = kinds[kind]
    per_layer = None
    if name == "hf" and kind == "self":
        from ._layout import layer_heads

        per_layer = layer_heads(model)
    return _Layout(name, n_layers, n_heads, kind, per_layer)


@contextlib.contextmanager
def gate_heads(model, gates, *, layers=None, kind=None):
    """Multiply every head's contribution by a gate, before the layer's output projection.

    The gates may require gradients: this is how the gradient importance of a head mask is
    computed (Michel et al., 2019). For Hugging Face models the attention probabilities of
    head h are multiplied by its gate inside the model's own eager attention (which scales the
    head's context ``P_h V_h``, exactly what enters the output projection), so every family
    that extraction reads can be gated; TransformerLens models are gated on ``hook_z``; for
    ``nn.MultiheadAttention``, whose fused forward does not expose the head contexts, the layer
    output is recomputed from its weights with gated heads.

    Parameters
    ----------
    model : transformers model, TransformerLens model, or torch.nn.Module
    gates : torch.Tensor of shape (n_layers, n_heads)
        ``n_heads`` is the most heads of a layer; where a layer has fewer (stages of Swin or
        SegFormer), its gates past them are not used.
    layers : sequence of int, optional
        Only these layers get hooks (the others run untouched); all by default.
    kind : {"self", "encoder", "decoder", "cross"}, optional
        The kind of attention gated; required for encoder-decoder models.

    Yields
    ------
    model
        The same model, gated until the block exits; the hooks are removed (and a Hugging
        Face model's attention implementation restored) afterwards. The gates act on forward
        passes run in any thread while the block is open.
    """
    from ._extract import _index_list, _unwrap

    model = _unwrap(model)
    layout = attention_layout(model, kind)
    if not isinstance(gates, torch.Tensor):
        raise TypeError(f"gates must be a torch.Tensor, got {type(gates).__name__}.")
    if tuple(gates.shape) != (layout.n_layers, layout.n_heads):
        raise ValueError(
            f"gates must have shape {(layout.n_layers, layout.n_heads)}, got {tuple(gates.shape)}."
        )
    layers = range(layout.n_layers) if layers is None else _index_list(layers, "layers")
    if max(layers, default=-1) >= layout.n_layers:
        raise ValueError(f"layers must lie in [0, {layout.n_layers}), got {list(layers)}.")
    if layout.kind == "hf":
        from ._hf_gating import gating
    elif layout.kind == "mha":
        from ._mha import gating
    else:
        from ._tlens import gating
    with gating(model, gates, layers, layout.attention):
        yield model


def _head_matrix(heads, layout):
    mask = np.zeros((layout.n_layers, layout.n_heads), dtype=bool)
    per_layer = np.asarray(layout.heads_per_layer)
    exists = np.arange(layout.n_heads)[None, :] < per_layer[:, None]
    if heads is None:
        return mask
    if isinstance(heads, torch.Tensor):
        heads = heads.detach().cpu().numpy()
    arr = np.asarray(heads)
    if arr.dtype == bool:
        if arr.shape != mask.shape:
            raise ValueError(f"a boolean head mask must have shape {mask.shape}, got {arr.shape}.")
        if (arr & ~exists).any():
            layer = int(np.flatnonzero((arr & ~exists).any(axis=1))[0])
            raise ValueError(
                f"the head mask marks heads past the {per_layer[layer]} heads of layer {layer}."
            )
        return arr.copy()
    if arr.size == 0:
        return mask
    if arr.dtype.kind not in "iu":
        raise TypeError(
            "heads must be flat integer ids, (layer, head) integer pairs or a boolean matrix; "
            f"got dtype {arr.dtype} ({heads!r}); floats are refused rather than truncated."
        )
    arr = arr.astype(np.int64, copy=False)
    if arr.ndim == 1:  # flat, layer-major head ids
        if arr.min() < 0 or arr.max() >= layout.n_total:
            raise ValueError(f"flat head ids must lie in [0, {layout.n_total}), got {arr}.")
        offsets = np.concatenate([[0], np.cumsum(per_layer)])
        layer = np.searchsorted(offsets, arr, side="right") - 1
        mask[layer, arr - offsets[layer]] = True
        return mask
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError("heads must be flat ids, (layer, head) pairs or a boolean matrix.")
    if (
        arr.min() < 0
        or (arr[:, 0] >= layout.n_layers).any()
        or (arr[:, 1] >= per_layer[np.minimum(arr[:, 0], layout.n_layers - 1)]).any()
    ):
        raise ValueError(
            f"(layer, head) pairs out of range for {layout.n_layers} layers of "
            f"{_heads_text(per_layer)} heads: {arr.tolist()}."
        )
    mask[arr[:, 0], arr[:, 1]] = True
    return mask


@contextlib.contextmanager
def mask_heads(model, heads, *, kind=None):
    """Zero the contribution of chosen heads inside a ``with`` block.

    Parameters
    ----------
    model : transformers model, TransformerLens model, or torch.nn.Module
    heads : bool array of shape (n_layers, n_heads), (layer, head) pairs, or flat ids
        The heads to remove; flat ids are layer-major, ``layer * n_heads + head`` (where the
        layers differ in heads, the heads of the earlier layers + head).
    kind : {"self", "encoder", "decoder", "cross"}, optional
        The kind of attention whose heads are removed; required for encoder-decoder models.

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
    from ._extract import _unwrap

    model = _unwrap(model)
    layout = attention_layout(model, kind)
    removed = _head_matrix(heads, layout)
    gates = torch.from_numpy((~removed).astype(np.float32))
    if not removed.any():  # no hook at all (nor a switch of kernels): the model as it is
        yield model
        return
    param = next(iter(model.parameters()), None)
    if param is not None:
        gates = gates.to(param.device)
    hooked = np.flatnonzero(removed.any(axis=1)).tolist()
    with gate_heads(model, gates, layers=hooked, kind=layout.attention):
        yield model


def _heads_text(per_layer):
    counts = sorted(set(per_layer.tolist()))
    return str(counts[0]) if len(counts) == 1 else "/".join(map(str, per_layer.tolist()))
