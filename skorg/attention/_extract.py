"""Attention maps from any source: the container and the dispatching extractor."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

__all__ = ["AttentionMaps", "extract_attention"]

_DTYPES = {"float32": (torch.float32, np.float32), "float16": (torch.float16, np.float16)}


@dataclass
class AttentionMaps:
    """Attention probabilities (and logits) of chosen layers and heads for a batch of inputs.

    Attributes
    ----------
    probs : ndarray of shape (n_samples, n_layers, n_heads, n_queries, n_keys)
        Attention probabilities; every query row sums to 1 over its allowed keys.
    logits : ndarray of the same shape, or None
        The softmax input (scaled query-key scores plus any additive mask) with disallowed
        entries set to ``-inf``, so that ``softmax(logits, axis=-1) == probs``.
    mask : ndarray of bool, shape (n_samples, n_queries, n_keys)
        True where a query may attend to a key (padding and causal masks removed).
    layers, heads : ndarray of int
        The layer and head indices along axes 1 and 2.
    tokens : list of list of str, or None
        Token labels per sample where the model has a tokenizer.
    """

    probs: np.ndarray
    logits: np.ndarray | None = None
    mask: np.ndarray | None = None
    layers: np.ndarray = field(default=None)
    heads: np.ndarray = field(default=None)
    tokens: list | None = None

    def __post_init__(self):
        n, n_layers, n_heads, nq, nk = self.probs.shape
        if self.mask is None:
            self.mask = np.ones((n, nq, nk), dtype=bool)
        if self.layers is None:
            self.layers = np.arange(n_layers)
        if self.heads is None:
            self.heads = np.arange(n_heads)
        self.layers = np.asarray(self.layers, dtype=np.int64)
        self.heads = np.asarray(self.heads, dtype=np.int64)

    @classmethod
    def from_array(cls, probs, logits=None, mask=None, *, tokens=None):
        """Wrap attention arrays computed elsewhere (any framework).

        Parameters
        ----------
        probs : array-like of shape (n_samples, n_layers, n_heads, n_queries, n_keys)
            A 4-D array is read as one sample. Torch tensors are accepted.
        logits : array-like of the same shape, optional
        mask : array-like of bool, shape (n_samples, n_queries, n_keys), optional
            Allowed query-key pairs; by default every pair.
        tokens : list of list of str, optional

        Returns
        -------
        maps : AttentionMaps

        Examples
        --------
        >>> import numpy as np
        >>> from skorg.attention import AttentionMaps
        >>> maps = AttentionMaps.from_array(np.full((2, 3, 4, 4), 0.25))
        >>> maps.probs.shape
        (1, 2, 3, 4, 4)
        """
        probs = _as_array(probs, "probs")
        if probs.ndim == 4:
            probs = probs[None]
            logits = None if logits is None else _as_array(logits, "logits")[None]
            mask = None if mask is None else np.asarray(mask)[None]
        if probs.ndim != 5:
            raise ValueError(
                "probs must have shape (n_samples, n_layers, n_heads, n_queries, n_keys) "
                f"(or 4-D for one sample), got ndim={probs.ndim}."
            )
        if min(probs.shape) < 1:
            raise ValueError(f"probs has an empty axis: shape {probs.shape}.")
        if mask is None:
            mask = np.ones((probs.shape[0], *probs.shape[3:]), dtype=bool)
        mask = np.asarray(mask)
        if mask.dtype != bool or mask.shape != (probs.shape[0], *probs.shape[3:]):
            raise ValueError(
                f"mask must be a bool array of shape {(probs.shape[0], *probs.shape[3:])}, "
                f"got {mask.dtype} {mask.shape}."
            )
        allowed = np.broadcast_to(mask[:, None, None], probs.shape)
        if not np.all(np.isfinite(probs[allowed])) or np.any(probs[allowed] < 0):
            raise ValueError("probs must be finite and non-negative where the mask allows.")
        if logits is not None:
            logits = _as_array(logits, "logits")
            if logits.shape != probs.shape:
                raise ValueError(f"logits shape {logits.shape} differs from probs {probs.shape}.")
        return cls(probs=probs, logits=logits, mask=mask, tokens=tokens)

    @property
    def n_samples(self):
        return self.probs.shape[0]

    def head_index(self):
        """Map from flat head index (layer-major) to ``(layer, head)``, shape (n_total, 2)."""
        ll, hh = np.meshgrid(self.layers, self.heads, indexing="ij")
        return np.column_stack([ll.ravel(), hh.ravel()])

    def valid_tokens(self, sample):
        """Positions of the non-padding tokens of one sample (keys that some query sees)."""
        return np.flatnonzero(self.mask[sample].any(axis=0))


def _as_array(x, name):
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x)
    if not np.issubdtype(arr.dtype, np.floating):
        raise TypeError(f"{name} must be a float array, got dtype {arr.dtype}.")
    return arr


class _Recorder:
    """Receives the scores of every attention call of one forward pass and keeps the chosen ones.

    Selection, down-casting and the move to the CPU happen per layer, as soon as a layer has run,
    so at most one layer's full maps live on the accelerator at a time.
    """

    def __init__(self, layers, heads, dtype, want_logits):
        self.layers = None if layers is None else [int(v) for v in layers]
        self.heads = None if heads is None else torch.as_tensor(np.asarray(heads, dtype=np.int64))
        self.torch_dtype, self.np_dtype = _DTYPES[dtype]
        self.want_logits = want_logits
        self.start()

    def start(self):
        self.calls = 0
        self.current = {}

    def next_layer(self):
        layer = self.calls
        self.calls += 1
        return layer

    def wants(self, layer):
        return self.layers is None or layer in self.layers

    def record(self, layer, logits, probs, valid):
        """Store one layer: logits/probs (B, H, Q, K) tensors, valid (B, Q, K) bool tensor."""
        if not self.wants(layer):
            return
        with torch.no_grad():
            if self.heads is not None:
                idx = self.heads.to(probs.device)
                probs = probs.index_select(1, idx)
                logits = logits.index_select(1, idx)
            p = probs.detach().to("cpu", self.torch_dtype).numpy()
            lg = logits.detach().to("cpu", self.torch_dtype).numpy() if self.want_logits else None
            self.current[layer] = (p, lg, valid.detach().to("cpu").numpy())

    def finish(self):
        if not self.current and self.calls == 0:
            raise RuntimeError(
                "no attention was captured during the forward pass: the model has no attention "
                "layer skorg can see (or none of the requested layers ran)."
            )
        order = self.layers if self.layers is not None else sorted(self.current)
        missing = [v for v in order if v not in self.current]
        if missing:
            raise ValueError(
                f"requested layers {missing} did not run; the model has {self.calls} attention "
                "calls per forward pass."
            )
        probs = np.stack([self.current[v][0] for v in order], axis=1)
        logits = np.stack([self.current[v][1] for v in order], axis=1) if self.want_logits else None
        valid = self.current[order[0]][2]
        n_heads = probs.shape[2]
        heads = np.arange(n_heads) if self.heads is None else self.heads.numpy()
        self.start()
        return probs, logits, valid, np.asarray(order), heads


def _backend(model):
    if hasattr(model, "run_with_hooks") and hasattr(model, "cfg") and hasattr(model, "hooks"):
        from . import _tlens

        return _tlens
    if hasattr(model, "config") and hasattr(model.config, "_attn_implementation"):
        from . import _hf

        return _hf
    if isinstance(model, torch.nn.Module):
        from . import _mha

        return _mha
    raise TypeError(
        "model must be a transformers model, a TransformerLens model, or a torch.nn.Module "
        "built on nn.MultiheadAttention; for attention computed elsewhere use "
        f"AttentionMaps.from_array. Got {type(model).__name__}."
    )


def _is_single_batch(inputs):
    return isinstance(inputs, Mapping | torch.Tensor | np.ndarray | str)


def _iterate(batches, progress):
    if not progress:
        return batches
    # the library's one progress mechanism: off under skorg.set_config(progress=False)
    from .._progress import progress_bar

    return progress_bar(batches, desc="attention", total=len(batches), enabled=None)


def extract_attention(
    model,
    inputs=None,
    *,
    layers=None,
    heads=None,
    logits=True,
    dtype="float32",
    tokenizer=None,
    progress=False,
):
    """Attention probabilities and pre-softmax logits of chosen layers and heads.

    Parameters
    ----------
    model : torch.nn.Module, transformers model, TransformerLens model, or array-like
        Hugging Face models are run through a registered attention function (whatever their
        ``attn_implementation``, sdpa and flash included, which return no attention weights);
        plain modules through hooks on their ``nn.MultiheadAttention`` layers (also when these
        are called with ``need_weights=False``); TransformerLens models through their
        ``hook_attn_scores`` and ``hook_pattern`` hooks. An array is passed to
        :meth:`AttentionMaps.from_array`.
    inputs : Mapping, Tensor, or list of them (None for an array source)
        One batch (a mapping is passed as keyword arguments, e.g. a tokenizer's output; a
        tensor positionally), or a list of batches that all have the same sequence length
        (pad with ``padding="max_length"``).
    layers : sequence of int, optional
        Layers to keep (attention calls in forward order); all by default.
    heads : sequence of int, optional
        Heads to keep in every chosen layer; all by default.
    logits : bool, default=True
        Keep the pre-softmax logits as well.
    dtype : {"float32", "float16"}, default="float32"
        Storage precision of the returned arrays (the model runs in its own precision).
    tokenizer : optional
        Hugging Face tokenizer for token labels of mapping inputs holding ``input_ids``.
    progress : bool, default=False
        Show a tqdm progress bar over the batches (if tqdm is installed).

    Returns
    -------
    maps : AttentionMaps

    Examples
    --------
    >>> import torch
    >>> from skorg.attention import extract_attention
    >>> _ = torch.manual_seed(0)
    >>> layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    >>> maps = extract_attention(layer.eval(), torch.randn(3, 5, 8))
    >>> maps.probs.shape
    (3, 1, 2, 5, 5)
    >>> bool(abs(maps.probs.sum(-1) - 1).max() < 1e-6)
    True
    """
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}.")
    if isinstance(model, np.ndarray | torch.Tensor):
        if inputs is not None:
            raise ValueError("an array source carries its own maps: pass inputs=None.")
        return AttentionMaps.from_array(model)
    if inputs is None:
        raise ValueError("inputs is required to run a model.")
    backend = _backend(model)
    batches = [inputs] if _is_single_batch(inputs) else list(inputs)
    if not batches:
        raise ValueError("inputs holds no batch.")
    recorder = _Recorder(layers, heads, dtype, logits)
    parts, tokens = [], [] if tokenizer is not None else None
    with torch.no_grad(), backend.capturing(model, recorder):
        for batch in _iterate(batches, progress):
            recorder.start()
            backend.run(model, batch)
            parts.append(recorder.finish())
            if tokenizer is not None and isinstance(batch, Mapping) and "input_ids" in batch:
                tokens.extend(tokenizer.convert_ids_to_tokens(row) for row in batch["input_ids"])
    shapes = {p[0].shape[3:] for p in parts}
    if len(shapes) > 1:
        raise ValueError(
            f"batches have different sequence lengths {sorted(shapes)}; pad every batch to the "
            "same length (tokenizer(..., padding='max_length', max_length=...))."
        )
    _, _, _, order, head_ids = parts[0]
    probs = np.concatenate([p[0] for p in parts])
    lg = np.concatenate([p[1] for p in parts]) if logits else None
    mask = np.concatenate([p[2] for p in parts])
    return AttentionMaps(probs, lg, mask, order, head_ids, tokens or None)
