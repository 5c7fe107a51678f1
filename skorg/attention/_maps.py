"""The attention container: validation of arrays from anywhere, and exports to viewers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

__all__ = ["AttentionMaps"]

# axis letters: n samples, l layers, h heads, q queries, k keys
_LAYOUTS = ("nlhqk", "lnhqk", "lhqk", "nhqk", "hqk")


@dataclass
class AttentionMaps:
    """Attention probabilities (and logits) of chosen layers and heads for a batch of inputs.

    Attributes
    ----------
    probs : ndarray of shape (n_samples, n_layers, n_heads, n_queries, n_keys)
        Attention probabilities, zero where the mask disallows a key. Every query row with an
        allowed key sums to 1, or to ``1 - sink`` for models with attention sinks.
    logits : ndarray of the same shape, or None
        The softmax input as the model computes it (scaling, position biases, ALiBi,
        soft-capping and additive masks included), with disallowed entries set to ``-inf``, so
        that ``softmax(logits, axis=-1) == probs`` (times ``1 - sink`` with sinks). None when
        the model does not expose them (see ``source``) or when not requested.
    mask : ndarray of bool, shape (n_samples, n_queries, n_keys)
        True where a query may attend to a key (padding, causal and window masks removed).
    layers, heads : ndarray of int
        The layer and head indices along axes 1 and 2.
    tokens : list of list of str, or None
        Token labels per sample where the model has a tokenizer.
    kind : str
        ``"self"``, or for encoder-decoder models ``"encoder"``, ``"decoder"`` or ``"cross"``.
    sink : ndarray of shape (n_samples, n_layers, n_heads, n_queries), or None
        Probability mass that each query row gives to the model's attention sink (GPT-OSS);
        None for models without sinks.
    source : str or None
        How the maps were read, e.g. ``"softmax input, checked against output_attentions"``.
    sample_axis : {"input", "window"}
        What axis 0 holds: one entry per input, or (windowed models such as Swin) one per
        window of each input, image-major.
    windows_per_image : int or None
        Windows per input when ``sample_axis == "window"``.
    """

    probs: np.ndarray
    logits: np.ndarray | None = None
    mask: np.ndarray | None = None
    layers: np.ndarray = field(default=None)
    heads: np.ndarray = field(default=None)
    tokens: list | None = None
    kind: str = "self"
    sink: np.ndarray | None = None
    source: str | None = None
    sample_axis: str = "input"
    windows_per_image: int | None = None

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
    def from_array(
        cls, probs, logits=None, mask=None, *, layout=None, tokens=None, sink=None, atol=None
    ):
        """Wrap attention arrays computed elsewhere (any framework), after checking them.

        Parameters
        ----------
        probs : array-like, or sequence of per-layer arrays
            A 5-D array is read as ``(n_samples, n_layers, n_heads, n_queries, n_keys)``
            unless ``layout`` says otherwise. A tuple or list of 4-D arrays is read as one
            ``(n_samples, n_heads, n_queries, n_keys)`` array per layer, which is what Hugging
            Face models return as ``outputs.attentions``. A 3-D or 4-D array is ambiguous and
            needs ``layout``. Torch tensors are accepted.
        logits : array-like of the same layout, optional
            The softmax input; ``-inf`` (or the dtype minimum) marks disallowed entries.
        mask : array-like of bool, shape (n_samples, n_queries, n_keys) or (n_queries, n_keys)
            Allowed query-key pairs; by default the finite logits, or every pair without them.
        layout : {"nlhqk", "lnhqk", "lhqk", "nhqk", "hqk"}, optional
            The axes of ``probs`` (and ``logits``): n samples, l layers, h heads, q queries,
            k keys. For a sequence of arrays it describes each element (default ``"nhqk"``).
        tokens : list of list of str, optional
        sink : array-like of shape (n_samples, n_layers, n_heads, n_queries), optional
            Attention-sink mass per row; rows then sum to ``1 - sink``.
        atol : float, optional
            Tolerance of the probability checks, in [0, 1); by default 1e-4, or 1e-2 for
            16-bit input.

        Returns
        -------
        maps : AttentionMaps

        Raises
        ------
        ValueError
            If the array is ambiguous, an entry lies outside [0, 1], a row with an allowed
            key does not sum to 1, a disallowed entry has probability, an allowed logit is not
            finite, or ``softmax(logits)`` does not give ``probs``.

        Examples
        --------
        >>> import numpy as np
        >>> from skorg.attention import AttentionMaps
        >>> maps = AttentionMaps.from_array(np.full((2, 3, 4, 4), 0.25), layout="lhqk")
        >>> maps.probs.shape
        (1, 2, 3, 4, 4)
        >>> per_layer = (np.full((5, 3, 4, 4), 0.25), np.full((5, 3, 4, 4), 0.25))
        >>> AttentionMaps.from_array(per_layer).probs.shape  # Hugging Face's tuple
        (5, 2, 3, 4, 4)
        """
        arr, low_precision = _to_nlhqk(probs, layout, "probs")
        lg = None
        if logits is not None:
            lg, _ = _to_nlhqk(logits, layout, "logits")
            if lg.shape != arr.shape:
                raise ValueError(f"logits shape {lg.shape} differs from probs {arr.shape}.")
        if min(arr.shape) < 1:
            raise ValueError(f"probs has an empty axis: shape {arr.shape}.")
        n, _, _, nq, nk = arr.shape
        if atol is None:
            atol = 1e-2 if low_precision else 1e-4
        elif (
            isinstance(atol, (bool, np.bool_))
            or not isinstance(atol, (int, float, np.integer, np.floating))
            or not 0 <= atol < 1
        ):
            raise ValueError(f"atol must be a number in [0, 1), got {atol!r}.")
        mask = _mask_of(mask, lg, (n, nq, nk))
        sk = None
        if sink is not None:
            sk = np.asarray(sink.detach().cpu() if isinstance(sink, torch.Tensor) else sink)
            if sk.dtype.kind not in "biuf":
                raise TypeError(f"sink must hold real numbers, got dtype {sk.dtype}.")
            if sk.shape != arr.shape[:4] or not np.all(np.isfinite(sk)):
                raise ValueError(
                    f"sink must be a finite array of shape {arr.shape[:4]}, got {sk.shape}."
                )
            if sk.min() < 0 or sk.max() > 1:
                raise ValueError(
                    f"sink is a probability mass and must lie in [0, 1]; found {sk.min():.3g} "
                    f"to {sk.max():.3g}."
                )
        _check_probabilities(arr, lg, mask, sk, atol)
        if lg is not None:
            allowed = np.broadcast_to(mask[:, None, None], lg.shape)
            lg = np.where(allowed, lg, -np.inf).astype(lg.dtype, copy=False)
        return cls(probs=arr, logits=lg, mask=mask, tokens=tokens, sink=sk, source="array")

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

    def valid_queries(self, sample):
        """Positions of the real query rows of one sample.

        For square (self-attention) maps these are :meth:`valid_tokens`, so that a padding
        token is dropped both as a query and as a key; for cross-attention, the queries that
        see some key.
        """
        if self.probs.shape[-2] == self.probs.shape[-1]:
            return self.valid_tokens(sample)
        return np.flatnonzero(self.mask[sample].any(axis=1))

    def _sample_view(self, sample):
        if isinstance(sample, bool) or not isinstance(sample, int | np.integer):
            raise TypeError(f"sample must be an int, got {type(sample).__name__}.")
        if not 0 <= sample < self.n_samples:
            raise ValueError(f"sample must lie in [0, {self.n_samples}), got {sample}.")
        if self.probs.shape[-2] != self.probs.shape[-1]:
            raise ValueError(
                f"{self.kind} attention is not square (queries {self.probs.shape[-2]}, keys "
                f"{self.probs.shape[-1]}); the viewers show self-attention maps."
            )
        keep = self.valid_tokens(sample)  # padding dropped as keys and as queries
        if keep.size == 0:
            raise ValueError(
                f"sample {sample} is fully masked (its mask allows no query-key pair): it has "
                "no token to show."
            )
        probs = self.probs[sample][:, :, keep][:, :, :, keep].astype(np.float32)
        tokens = self.tokens[sample] if self.tokens is not None else None
        if tokens is not None and len(tokens) == self.probs.shape[-1]:
            labels = [str(tokens[i]) for i in keep]
        else:
            labels = [str(i) for i in keep]
        return probs, labels

    def to_bertviz(self, sample=0):
        """Inputs of bertviz's ``head_view`` / ``model_view`` for one sample.

        Padding is removed; token labels are the tokens (or the key positions without a
        tokenizer).

        Parameters
        ----------
        sample : int, default=0

        Returns
        -------
        attention : tuple of torch.Tensor
            One ``(1, n_heads, n_tokens, n_tokens)`` tensor per layer.
        tokens : list of str

        Examples
        --------
        >>> import numpy as np
        >>> from skorg.attention import AttentionMaps
        >>> maps = AttentionMaps.from_array(np.full((1, 2, 3, 4, 4), 0.25))
        >>> attention, tokens = maps.to_bertviz()
        >>> len(attention), tuple(attention[0].shape), tokens
        (2, (1, 3, 4, 4), ['0', '1', '2', '3'])

        With bertviz installed: ``from bertviz import head_view; head_view(*maps.to_bertviz())``.
        """
        probs, labels = self._sample_view(sample)
        attention = tuple(torch.from_numpy(layer[None].copy()) for layer in probs)
        return attention, labels

    def to_circuitsvis(self, sample=0):
        """Keyword arguments of circuitsvis' ``attention.attention_patterns`` for one sample.

        Every (layer, head) becomes one pattern, layer-major like :meth:`head_index`.

        Parameters
        ----------
        sample : int, default=0

        Returns
        -------
        kwargs : dict
            ``tokens`` (list of str) and ``attention`` (ndarray of shape
            (n_layers * n_heads, n_tokens, n_tokens)).

        Examples
        --------
        >>> import numpy as np
        >>> from skorg.attention import AttentionMaps
        >>> maps = AttentionMaps.from_array(np.full((1, 2, 3, 4, 4), 0.25))
        >>> maps.to_circuitsvis()["attention"].shape
        (6, 4, 4)

        With circuitsvis installed:
        ``circuitsvis.attention.attention_patterns(**maps.to_circuitsvis())``.
        """
        probs, labels = self._sample_view(sample)
        return {"tokens": labels, "attention": probs.reshape(-1, *probs.shape[2:])}


def _as_array(x, name):
    if isinstance(x, torch.Tensor):
        low = x.dtype in (torch.float16, torch.bfloat16)
        x = x.detach().cpu()
        if x.dtype == torch.bfloat16:
            x = x.float()
        return x.numpy(), low
    arr = np.asarray(x)
    if not np.issubdtype(arr.dtype, np.floating):
        raise TypeError(f"{name} must be a float array, got dtype {arr.dtype}.")
    return arr, arr.dtype == np.float16


def _to_nlhqk(x, layout, name):
    """Any accepted input as one (n, l, h, q, k) array, and whether it is 16-bit."""
    if layout is not None and layout not in _LAYOUTS:
        raise ValueError(f"layout must be one of {list(_LAYOUTS)}, got {layout!r}.")
    if isinstance(x, Sequence) and not isinstance(x, str):
        if not len(x):
            raise ValueError(f"{name} is an empty sequence.")
        parts = [_as_array(t, name) for t in x]
        element = layout or "nhqk"
        if element not in ("nhqk", "hqk"):
            raise ValueError(
                f"a sequence of per-layer arrays takes layout 'nhqk' or 'hqk', got {element!r}."
            )
        shapes = {p.shape for p, _ in parts}
        if len(shapes) > 1:
            raise ValueError(f"the per-layer arrays of {name} differ in shape: {sorted(shapes)}.")
        want = len(element)
        if parts[0][0].ndim != want:
            raise ValueError(
                f"each per-layer array of {name} must be {want}-D ({element}), "
                f"got ndim={parts[0][0].ndim}."
            )
        arr = np.stack([p for p, _ in parts], axis=0)  # l first
        low = any(lo for _, lo in parts)
        return _arrange(arr, "l" + element, name), low
    arr, low = _as_array(x, name)
    if layout is None:
        if arr.ndim == 5:
            layout = "nlhqk"
        elif arr.ndim in (3, 4):
            raise ValueError(
                f"a {arr.ndim}-D {name} array is ambiguous: pass layout= "
                + ("'hqk'" if arr.ndim == 3 else "'lhqk' (one sample) or 'nhqk' (one layer)")
                + ", or a sequence of per-layer arrays."
            )
        else:
            raise ValueError(
                f"{name} must have shape (n_samples, n_layers, n_heads, n_queries, n_keys), "
                f"got ndim={arr.ndim}."
            )
    if arr.ndim != len(layout):
        raise ValueError(f"layout {layout!r} needs a {len(layout)}-D {name}, got ndim={arr.ndim}.")
    return _arrange(arr, layout, name), low


def _arrange(arr, layout, name):
    for axis in "nlh":
        if axis not in layout:
            arr = arr[None]
            layout = axis + layout
    order = [layout.index(a) for a in "nlhqk"]
    return np.ascontiguousarray(np.transpose(arr, order))


def _mask_of(mask, logits, shape):
    if mask is None:
        if logits is None:
            return np.ones(shape, dtype=bool)
        with np.errstate(invalid="ignore"):
            lim = np.finfo(logits.dtype).min / 2
            finite = np.isfinite(logits) & (logits > lim)
        return finite.any(axis=(1, 2))
    mask = np.asarray(mask.detach().cpu() if isinstance(mask, torch.Tensor) else mask)
    if mask.dtype != bool:
        raise ValueError(f"mask must be a bool array, got dtype {mask.dtype}.")
    if mask.shape == shape[1:]:
        mask = np.broadcast_to(mask, shape)
    if mask.shape != shape:
        raise ValueError(f"mask must have shape {shape} or {shape[1:]}, got {mask.shape}.")
    return np.array(mask)


def _check_probabilities(probs, logits, mask, sink, atol):
    allowed = np.broadcast_to(mask[:, None, None], probs.shape)
    if not np.all(np.isfinite(probs)):
        raise ValueError("probs must be finite.")
    if probs.min() < -atol or probs.max() > 1 + atol:
        raise ValueError(
            f"probs must lie in [0, 1]; found {probs.min():.3g} to {probs.max():.3g}. "
            "Pass probabilities (after the softmax), not scores."
        )
    outside = np.where(allowed, 0.0, np.abs(probs))
    if outside.max(initial=0.0) > atol:
        raise ValueError(f"probs has mass up to {outside.max():.3g} on entries the mask disallows.")
    rows = mask.any(axis=-1)[:, None, None]  # queries with an allowed key
    sums = probs.sum(axis=-1, dtype=np.float64)
    target = 1.0 if sink is None else 1.0 - sink
    err = np.where(rows, np.abs(sums - target), 0.0)
    if err.max(initial=0.0) > atol * max(1.0, np.sqrt(probs.shape[-1])):
        raise ValueError(
            f"rows of probs must sum to 1 over the allowed keys; one is off by {err.max():.3g}. "
            "Pass the mask of the allowed keys, and probabilities rather than scores."
        )
    if logits is None:
        return
    # -inf is a layer-specific mask (sliding windows) where the probability is 0
    bad = np.isnan(logits) | np.isposinf(logits) | (np.isneginf(logits) & (probs > atol))
    if bad[allowed].any():
        raise ValueError("logits must be finite where the mask allows (or -inf where probs is 0).")
    lg = np.where(allowed, logits.astype(np.float64), -np.inf)
    top = np.max(lg, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(lg - top)
    total = e.sum(axis=-1, keepdims=True)
    back = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    if sink is not None:
        back = back * (1.0 - sink)[..., None]
    gap = np.abs(back - probs).max(initial=0.0)
    if gap > atol:
        raise ValueError(f"softmax(logits) differs from probs by {gap:.3g} (> {atol:g}).")
