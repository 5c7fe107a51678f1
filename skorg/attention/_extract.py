"""Attention maps from any source: the container and the dispatching extractor."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

import numpy as np
import torch

from ._maps import AttentionMaps
from ._ragged import RaggedAttentionMaps

__all__ = ["extract_attention"]

_KINDS = ("self", "encoder", "decoder", "cross")

_DTYPES = {"float32": (torch.float32, np.float32), "float16": (torch.float16, np.float16)}


def _index_list(value, name):
    """A list of distinct non-negative ints from a sequence argument, or None."""
    if value is None:
        return None
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        value = [value]
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    arr = np.asarray(value)
    if arr.ndim != 1 or not (
        arr.dtype.kind in "iu" or (arr.dtype == object and all(_is_int(v) for v in arr))
    ):
        if arr.size == 0 and arr.ndim == 1:
            raise ValueError(f"{name} is empty; pass None for all.")
        raise TypeError(
            f"{name} must be a sequence of ints (indices), got {value!r}; floats and bools "
            "are refused rather than truncated."
        )
    out = [int(v) for v in arr]
    if not out:
        raise ValueError(f"{name} is empty; pass None for all.")
    if min(out) < 0:
        raise ValueError(f"{name} must be non-negative indices, got {out}.")
    if len(set(out)) != len(out):
        raise ValueError(f"{name} holds duplicates: {out}.")
    return out


def _is_int(v):
    return isinstance(v, int | np.integer) and not isinstance(v, bool)


class _Recorder:
    """Receives the attention of every layer of one forward pass and keeps the chosen ones.

    Selection, down-casting and the move to the CPU happen per layer, as soon as a layer has run,
    so at most one layer's full maps live on the accelerator at a time (besides the first batch,
    whose softmax calls are kept until they are checked against the model's own attentions).
    """

    def __init__(self, layers, heads, dtype, want_logits, windows="axis"):
        self.layers = layers
        self.windows = windows  # windowed models: "axis" (windows as samples) or "image"
        self.heads = None if heads is None else torch.as_tensor(heads, dtype=torch.int64)
        self.torch_dtype, self.np_dtype = _DTYPES[dtype]
        self.want_logits = want_logits
        self.source = None
        self.images = None  # inputs per batch of a windowed model (windows on the sample axis)
        self.start()

    def start(self):
        self.current = {}  # kind -> {layer: (probs, logits, valid, sink)}
        self.counts = {}  # kind -> number of layers that ran

    def seen(self, kind, layer):
        self.counts[kind] = max(self.counts.get(kind, 0), layer + 1)

    def wants(self, kind, layer):
        return self.layers is None or layer in self.layers

    def record_softmax(self, kind, layer, logits, probs, sink):
        """One softmax call: its input (B, H, Q, K[+1]) and output, with a sink column or not."""
        self.seen(kind, layer)
        if not self.wants(kind, layer):
            return
        from ._hf import masked

        with torch.no_grad():
            sink_mass = None
            if sink:
                sink_mass, probs, logits = probs[..., -1], probs[..., :-1], logits[..., :-1]
            allowed = masked(logits, probs)
            valid = allowed.any(dim=1)
            self.record(kind, layer, logits, probs, valid, sink_mass, allowed)

    def record_probs(self, kind, layer, probs):
        """Probabilities only (output_attentions): allowed keys are those with any mass."""
        self.seen(kind, layer)
        if not self.wants(kind, layer):
            return
        valid = (probs > 0).any(dim=1)
        self.record(kind, layer, None, probs, valid)

    def record(self, kind, layer, logits, probs, valid, sink=None, allowed=None):
        """Store one layer: logits/probs (B, H, Q, K) tensors, valid (B, Q, K) bool tensor."""
        self.seen(kind, layer)
        if not self.wants(kind, layer):
            return
        with torch.no_grad():
            if allowed is None:
                allowed = valid[:, None]
            probs = probs.masked_fill(~allowed, 0.0)
            if self.want_logits and logits is not None:
                logits = logits.masked_fill(~allowed, float("-inf"))
            if self.heads is not None:
                n_heads = probs.shape[1]
                if int(self.heads.max()) >= n_heads:
                    raise ValueError(
                        f"heads must lie in [0, {n_heads}) for {kind} layer {layer}, got "
                        f"{self.heads.tolist()}."
                    )
                idx = self.heads.to(probs.device)
                probs = probs.index_select(1, idx)
                if logits is not None:
                    logits = logits.index_select(1, idx)
                if sink is not None:
                    sink = sink.index_select(1, idx)
            p = probs.detach().to("cpu", self.torch_dtype).numpy()
            lg = None
            if self.want_logits and logits is not None:
                lg = logits.detach().to("cpu", self.torch_dtype).numpy()
            sk = None if sink is None else sink.detach().to("cpu", self.torch_dtype).numpy()
            self.current.setdefault(kind, {})[layer] = (p, lg, valid.detach().cpu().numpy(), sk)

    def finish(self):
        """Per kind: probs, logits, valid, layer order, head ids and sink of this batch."""
        if not self.counts:
            raise RuntimeError(
                "no attention was captured during the forward pass: the model has no attention "
                "layer skorg can see."
            )
        result = {}
        for kind in self.counts:
            got = self.current.get(kind, {})
            order = self.layers if self.layers is not None else sorted(got)
            missing = [v for v in order if v not in got]
            if missing:
                raise ValueError(
                    f"requested layers {missing} did not run; the model has "
                    f"{self.counts[kind]} {kind}-attention layers."
                )
            result[kind] = [self._stack(got, run) for run in _runs(order, got)]
        self.start()
        return result

    def _stack(self, got, order):
        """One group of equal-sized layers: probs, logits, valid, layer order, heads, sink."""
        parts = [got[v] for v in order]
        probs = np.stack([p[0] for p in parts], axis=1)
        with_logits = self.want_logits and all(p[1] is not None for p in parts)
        logits = np.stack([p[1] for p in parts], axis=1) if with_logits else None
        sink = None
        if all(p[3] is not None for p in parts):
            sink = np.stack([p[3] for p in parts], axis=1)
        n_heads = probs.shape[2]
        heads = np.arange(n_heads) if self.heads is None else self.heads.numpy()
        # one mask for all layers: a key counts as allowed if some kept layer allows it
        # (layer-specific masks such as sliding windows are the -inf logits, zero probs)
        valid = np.logical_or.reduce([p[2] for p in parts])
        windows = None if self.images is None else probs.shape[0] // self.images
        return probs, logits, valid, np.asarray(order), heads, sink, windows


def _runs(order, got):
    """The layers in order, cut into runs of one (heads, queries, keys) size."""
    runs = []
    for layer in order:
        size = got[layer][0].shape
        if runs and got[runs[-1][-1]][0].shape == size:
            runs[-1].append(layer)
        else:
            runs.append([layer])
    return runs


_LENGTHS_DIFFER = (
    "batches have different sequence lengths {}; pad every batch to the same length "
    "(tokenizer(..., padding='max_length', max_length=...))."
)


def _join(chunks, kind, labels, source, ragged):
    """One group's maps from its per-batch chunks."""
    shapes = {c[0].shape[2:] for c in chunks}
    if len(shapes) > 1 or len({tuple(c[3]) for c in chunks}) > 1:
        raise ValueError(_LENGTHS_DIFFER.format(sorted(shapes)))
    _, _, _, order, head_ids, _, _ = chunks[0]
    probs = np.concatenate([c[0] for c in chunks])
    lg = None if chunks[0][1] is None else np.concatenate([c[1] for c in chunks])
    mask = np.concatenate([c[2] for c in chunks])
    sink = None if chunks[0][5] is None else np.concatenate([c[5] for c in chunks])
    if ragged and labels is not None and any(len(row) != probs.shape[-1] for row in labels):
        labels = None  # pooled or reduced keys: no longer one key per token
    windows = chunks[0][6]
    if len({c[6] for c in chunks}) > 1:
        raise ValueError(_LENGTHS_DIFFER.format("(of different image sizes)"))
    return AttentionMaps(
        probs, lg, mask, order, head_ids, labels, kind=kind, sink=sink, source=source,
        sample_axis="input" if windows is None else "window", windows_per_image=windows,
    )  # fmt: skip


def _unwrap(model):
    """The torch module behind an nnsight wrapper (``NNsight`` / ``LanguageModel``)."""
    if type(model).__module__.split(".")[0] == "nnsight":
        inner = getattr(model, "_model", None)
        if isinstance(inner, torch.nn.Module):
            return inner
    return model


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
        "model must be a transformers model, a TransformerLens model, an nnsight wrapper, or a "
        "torch.nn.Module built on nn.MultiheadAttention; for attention computed elsewhere use "
        f"AttentionMaps.from_array. Got {type(model).__name__}."
    )


@contextlib.contextmanager
def _runner(backend, model, recorder):
    if backend.__name__.endswith("._hf"):
        with backend.Backend(model, recorder).session() as session:
            yield session.run
    else:
        with backend.capturing(model, recorder) as run:
            yield run or (lambda batch: backend.run(model, batch))


def _is_single_batch(inputs):
    return isinstance(inputs, Mapping | torch.Tensor | np.ndarray | str)


def _iterate(batches, progress):
    if not progress:
        return batches
    # the library's one progress mechanism: off under skorg.set_config(progress=False)
    from .._progress import progress_bar

    return progress_bar(batches, desc="attention", total=len(batches), enabled=None)


def _tokens_of(tokenizer, batch, kind):
    if tokenizer is None or not isinstance(batch, Mapping):
        return None
    key = "decoder_input_ids" if kind in ("decoder", "cross") else "input_ids"
    if key not in batch:
        return None
    return [tokenizer.convert_ids_to_tokens(row) for row in batch[key]]


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
    kind=None,
    windows="axis",
):
    """Attention probabilities and pre-softmax logits of chosen layers and heads.

    Parameters
    ----------
    model : torch.nn.Module, transformers model, TransformerLens model, or array-like
        Hugging Face models run their own eager attention (whatever their
        ``attn_implementation``, restored afterwards) and skorg reads the softmax they call,
        so every score modification of the family (scaling, relative position bias, ALiBi,
        soft-capping, sinks, sliding windows, masks, grouped-query heads) is in the result.
        On the first batch the model's own ``output_attentions`` are compared with what skorg
        reads, and a difference beyond 1e-5 raises an error naming the family; the layout is
        checked too (one sample per input, the config's heads, query and key lengths equal
        to the text's tokens, no layer or softmax call left out), and a family whose
        attention is not a full query x key map (banded, windowed, blocked, approximated,
        attention-free) is refused with the reason. Families whose layers differ in size
        (Funnel, SegFormer) give a :class:`RaggedAttentionMaps`, one group per size; Swin
        and Swinv2 give every block, with the windows on the sample axis
        (``maps.sample_axis == "window"``, ``maps.windows_per_image``) or mapped back to image
        positions (``windows="image"``). Plain modules
        are read through hooks on their ``nn.MultiheadAttention`` layers (also when these are
        called with ``need_weights=False``); TransformerLens models (``HookedTransformer`` and
        ``TransformerBridge``) through their ``hook_attn_scores`` and ``hook_pattern`` hooks;
        nnsight wrappers through the model they wrap. An array is passed to
        :meth:`AttentionMaps.from_array`.
    inputs : Mapping, Tensor, or list of them (None for an array source)
        One batch (a mapping is passed as keyword arguments, e.g. a tokenizer's output; a
        tensor positionally), or a list of batches that all have the same sequence length
        (pad with ``padding="max_length"``).
    layers : sequence of int, optional
        Layers to keep (attention calls of each kind in forward order); all by default.
    heads : sequence of int, optional
        Heads to keep in every chosen layer; all by default.
    logits : bool, default=True
        Keep the pre-softmax logits as well.
    dtype : {"float32", "float16"}, default="float32"
        Storage precision of the returned arrays (the model runs in its own precision).
    tokenizer : optional
        Hugging Face tokenizer for token labels of mapping inputs holding ``input_ids``
        (``decoder_input_ids`` for decoder and cross-attention).
    progress : bool, default=False
        Show a tqdm progress bar over the batches (if tqdm is installed).
    kind : {"self", "encoder", "decoder", "cross"}, optional
        The kind of attention to return. Encoder-decoder models have several; without
        ``kind`` they are all returned, in a dict.
    windows : {"axis", "image"}, default="axis"
        Windowed attention (Swin, Swinv2): ``"axis"`` keeps each block's windows on the
        sample axis (``sample_axis="window"``, image-major); ``"image"`` maps every block back
        to one (positions x positions) query x key map per image, the positions being the
        block's patch tokens in the model's row-major order, with the keys outside a query's
        window (after the block's cyclic shift) masked (logit -inf, probability 0): the
        per-input functions (:func:`network_tensor`, :func:`sensitivity_sweep`,
        :func:`softmax_invariance_survey`) then see images. Stages of different sizes give a
        :class:`RaggedAttentionMaps`. Other models have one sample per input either way.

    Returns
    -------
    maps : AttentionMaps, RaggedAttentionMaps, or dict of str to them
        One :class:`AttentionMaps` (a :class:`RaggedAttentionMaps` of groups of equal-sized
        layers when the layers differ in size); for a model with several kinds of attention
        (encoder self-, decoder self- and cross-attention) and ``kind=None``, a dict keyed by
        kind.

    Notes
    -----
    Thread safety: the softmax is intercepted through state local to the calling thread, so
    extractions from different models in different threads run concurrently and correctly;
    extractions from one Hugging Face model object are serialized by a lock held on that model
    (its attention implementation is switched to eager for the duration).

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
    if kind is not None and kind not in _KINDS:
        raise ValueError(f"kind must be one of {list(_KINDS)} or None, got {kind!r}.")
    if not isinstance(logits, bool):
        raise TypeError(f"logits must be True or False, got {logits!r}.")
    if not isinstance(windows, str) or windows not in ("axis", "image"):
        raise ValueError(f"windows must be 'axis' or 'image', got {windows!r}.")
    layers = _index_list(layers, "layers")
    heads = _index_list(heads, "heads")
    if isinstance(model, np.ndarray | torch.Tensor | tuple):
        if inputs is not None:
            raise ValueError("an array source carries its own maps: pass inputs=None.")
        return AttentionMaps.from_array(model)
    if inputs is None:
        raise ValueError("inputs is required to run a model.")
    model = _unwrap(model)
    backend = _backend(model)
    batches = [inputs] if _is_single_batch(inputs) else list(inputs)
    if not batches:
        raise ValueError("inputs holds no batch.")
    recorder = _Recorder(layers, heads, dtype, logits, windows)
    parts, tokens = [], {}
    with torch.no_grad(), _runner(backend, model, recorder) as run:
        for batch in _iterate(batches, progress):
            recorder.start()
            run(batch)
            found = recorder.finish()
            parts.append(found)
            for k in found:
                tokens.setdefault(k, []).append(_tokens_of(tokenizer, batch, k))
    kinds = list(parts[0])
    if any(list(p) != kinds for p in parts):
        raise RuntimeError("batches ran different kinds of attention; pass one model input type.")
    result = {}
    for k in kinds:
        labels = None
        if all(t is not None for t in tokens[k]):
            labels = [row for t in tokens[k] for row in t]
        source = recorder.source or backend.SOURCE
        runs = [[p[k][g] for p in parts] for g in range(len(parts[0][k]))]
        if any(len(p[k]) != len(runs) for p in parts):
            raise ValueError(_LENGTHS_DIFFER.format("(their layers group differently)"))
        ragged = len(runs) > 1
        groups = [_join(chunks, k, labels, source, ragged) for chunks in runs]
        result[k] = groups[0] if len(groups) == 1 else RaggedAttentionMaps(groups)
    if kind is not None:
        if kind not in result:
            raise ValueError(f"the model has no {kind!r} attention; it has {kinds}.")
        return result[kind]
    if len(result) == 1:
        return result[kinds[0]]
    return result
