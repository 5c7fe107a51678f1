"""Interception of the softmax calls that attention modules make, with thread-local state.

Rather than re-implement each model family's score modifications (scaling, relative position
bias, ALiBi, soft-capping, sinks, sliding windows, masks), skorg runs the model's own eager
attention and looks at the softmax it calls: its input already holds every modification, its
output is the attention. ``torch.nn.functional.softmax``, ``torch.softmax`` and
``Tensor.softmax`` are wrapped once, for the life of the process, by functions that pass
straight through unless the calling thread is inside a module watched by a session. Sessions
register forward pre/post hooks on every module of their model; the hooks push and pop frames
on a stack that is local to the running thread, so concurrent forward passes in other threads
(of this model or of others) never see each other's state.
"""

from __future__ import annotations

import functools
import itertools
import threading

import torch

_LOCAL = threading.local()
_INSTALL_LOCK = threading.Lock()
_INSTALLED = False
_CALLS = itertools.count()  # one id per module call: the softmax calls of one layer call


def _frames():
    frames = getattr(_LOCAL, "frames", None)
    if frames is None:
        frames = _LOCAL.frames = []
    return frames


def _softmax_dim(args, kwargs):
    if args:
        return args[0]
    return kwargs.get("dim")


def _dispatch(x, out, dim):
    frames = _LOCAL.frames
    if getattr(_LOCAL, "busy", False) or not isinstance(out, torch.Tensor):
        return out
    if x.dim() < 3 or dim is None or dim not in (-1, x.dim() - 1):
        return out
    module = frames[-1][1]
    _LOCAL.busy = True
    try:
        # every session watching the innermost running module, outermost registration first
        i = len(frames) - 1
        while i > 0 and frames[i - 1][1] is module:
            i -= 1
        for session, mod, call in frames[i:]:
            _LOCAL.call = call
            out = session.on_softmax(mod, x, out)
    finally:
        _LOCAL.busy = False
    return out


def _wrap_function(original):
    @functools.wraps(original)
    def softmax(input, *args, **kwargs):
        if not getattr(_LOCAL, "frames", None):
            return original(input, *args, **kwargs)
        # F.softmax calls Tensor.softmax: only the outermost wrapped call is one softmax
        depth = getattr(_LOCAL, "depth", 0)
        _LOCAL.depth = depth + 1
        try:
            out = original(input, *args, **kwargs)
        finally:
            _LOCAL.depth = depth
        if depth == 0:
            out = _dispatch(input, out, _softmax_dim(args, kwargs))
        return out

    softmax.__skorg_original__ = original
    return softmax


def install():
    """Wrap the softmax entry points (once; the wrappers are transparent when idle)."""
    global _INSTALLED
    with _INSTALL_LOCK:
        if _INSTALLED:
            return
        torch.nn.functional.softmax = _wrap_function(torch.nn.functional.softmax)
        torch.softmax = _wrap_function(torch.softmax)
        torch.Tensor.softmax = _wrap_function(torch.Tensor.softmax)
        _INSTALLED = True


class Session:
    """Watches the modules of one model; subclasses act on the softmax calls made inside.

    Parameters
    ----------
    model : torch.nn.Module
    this_thread_only : bool
        Capture sessions watch only the thread that opened them; gating sessions every thread.
    """

    def __init__(self, model, *, this_thread_only):
        self.model = model
        self.thread = threading.get_ident() if this_thread_only else None
        self.names = {}
        self.handles = []

    def _active(self):
        return self.thread is None or threading.get_ident() == self.thread

    def __enter__(self):
        install()
        for name, module in self.model.named_modules():
            if isinstance(module, torch.nn.Softmax):
                continue  # its softmax belongs to the module that calls it
            self.names[module] = name
            self.handles.append(module.register_forward_pre_hook(self._push))
            self.handles.append(module.register_forward_hook(self._pop, always_call=True))
        return self

    def __exit__(self, *exc):
        for handle in self.handles:
            handle.remove()
        self.handles = []
        frames = getattr(_LOCAL, "frames", None)
        if frames:
            frames[:] = [f for f in frames if f[0] is not self]
        return False

    def _push(self, module, args):
        if self._active():
            frames = _frames()
            if module is self.model and not any(f[0] is self for f in frames):
                self.start_forward()
            frames.append((self, module, next(_CALLS)))

    def _pop(self, module, args, output):
        if self._active():
            frames = _frames()
            for i in range(len(frames) - 1, -1, -1):
                if frames[i][0] is self and frames[i][1] is module:
                    del frames[i]
                    break
            if module is self.model and not any(f[0] is self for f in frames):
                if output is not None:  # None: the forward raised, and that error is the one
                    self.end_forward()

    def start_forward(self):
        """Called when the watched model's own forward starts (not nested in itself)."""

    def end_forward(self):
        """Called when the watched model's own forward returns."""

    def on_softmax(self, module, logits, probs):  # pragma: no cover - overridden
        return probs


def current_call():
    """Id of the module call whose softmax is being dispatched (one id per forward of a module)."""
    return getattr(_LOCAL, "call", None)


def name_kind(name, encoder_decoder):
    """The kind of an attention module from its qualified name.

    ``"cross"`` for cross-attention (T5 ``EncDecAttention``, BART/Whisper ``encoder_attn``,
    BERT-style ``crossattention``, ``nn.TransformerDecoderLayer.multihead_attn``); in
    encoder-decoder models ``"encoder"`` or ``"decoder"`` by the stack; ``"self"`` otherwise.
    """
    parts = name.lower().split(".")
    if any(p in ("encdecattention", "encoder_attn", "crossattention", "cross_attn") for p in parts):
        return "cross"
    if parts and parts[-1] == "multihead_attn":
        return "cross"
    if encoder_decoder:
        if "decoder" in parts:
            return "decoder"
        if "encoder" in parts:
            return "encoder"
    return "self"
