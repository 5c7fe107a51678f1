"""Multi-head attention regressor with softmax, softmax-1 and Bayes-softmax normalizations."""

import math
import numbers

import numpy as np
import torch

from ._task import DiscretePrior, SingleLocationTask, _as_rng

__all__ = ["NORMALIZATIONS", "AttentionRegressor", "attention_forward", "attention_weights"]

NORMALIZATIONS = ("softmax", "softmax1", "bayes_softmax")


def _check_normalization(normalization):
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}.")


def attention_weights(scores, normalization):
    """Attention weights from scores of shape (..., n_tokens, n_heads).

    ``"softmax"`` normalizes over tokens within each head, ``"softmax1"`` adds one to each head's
    denominator (a head whose scores are all very negative switches off), ``"bayes_softmax"``
    normalizes jointly over all (token, head) pairs.

    Examples
    --------
    >>> attention_weights(torch.zeros(2, 2), "bayes_softmax")
    tensor([[0.2500, 0.2500],
            [0.2500, 0.2500]])
    """
    _check_normalization(normalization)
    if normalization == "softmax":
        return torch.softmax(scores, dim=-2)
    if normalization == "bayes_softmax":
        shape = scores.shape
        flat = torch.softmax(scores.reshape(*shape[:-2], -1), dim=-1)
        return flat.reshape(shape)
    # softmax-1: exp(s) / (1 + sum_l exp(s)), shifted by max(s, 0) so nothing overflows
    shift = scores.amax(dim=-2, keepdim=True).clamp_min(0.0).detach()
    ex = torch.exp(scores - shift)
    return ex / (torch.exp(-shift) + ex.sum(dim=-2, keepdim=True))


def attention_forward(X, keys, biases, values, normalization, *, dim=None):
    """Output of the attention regressor, a functional core that broadcasts leading axes.

    Parameters
    ----------
    X : tensor of shape (``*R``, ..., n_tokens, p)
    keys, values : tensors of shape (``*R``, n_heads, p)
        ``R`` are optional replica axes: replica ``r`` of the weights acts on ``X[r]``.
    biases : tensor of shape (``*R``, n_heads)
    normalization : {"softmax", "softmax1", "bayes_softmax"}
    dim : int, default=None
        ``D`` in the ``1 / sqrt(D)`` scaling; ``p`` when None. Passing the true ``D`` lets ``X``
        and the weights be given in coordinates of a ``p``-dimensional subspace holding the
        weights (see :func:`model_risk`).

    Returns
    -------
    y_hat : tensor of shape (``*R``, ...)
        ``sum_h sum_l a_{h,l} x_l . v_h / sqrt(D)`` with ``a`` from ``x_l . k_h / sqrt(D) + b_h``.
    """
    scale = 1.0 / math.sqrt(X.shape[-1] if dim is None else dim)
    lead = keys.shape[:-2]
    if X.shape[: len(lead)] != lead:
        raise ValueError(f"X of shape {tuple(X.shape)} does not start with the weights' {lead}.")
    # one (n * L, p) @ (p, H) product per replica: a plain bmm, much faster than broadcasting
    flat = X.reshape(*lead, -1, X.shape[-1])
    out_shape = (*X.shape[:-1], keys.shape[-2])
    bias_shape = (*lead, *([1] * (X.ndim - 1 - len(lead))), keys.shape[-2])
    scores = (flat @ keys.transpose(-1, -2)).reshape(out_shape) * scale + biases.reshape(bias_shape)
    z = (flat @ values.transpose(-1, -2)).reshape(out_shape) * scale
    a = attention_weights(scores, normalization)
    return (a * z).sum(dim=(-2, -1))


class AttentionRegressor(torch.nn.Module):
    """One-layer multi-head attention for the single-location task (see the user guide).

    Head ``h`` scores token ``l`` by ``s_{h,l} = x_l . k_h / sqrt(D) + b_h`` and reads the value
    ``z_{h,l} = x_l . v_h / sqrt(D)``; the prediction is ``sum_{h,l} a_{h,l} z_{h,l}``.

    Parameters
    ----------
    dim : int
        Token dimension ``D``.
    n_heads : int
    normalization : {"softmax", "softmax1", "bayes_softmax"}, default="softmax"
    key_scale : float, default=0.1
        Initial keys are ``key_scale * N(0, I_D)``, so ``k_h . k_h / D ~ key_scale^2`` and the
        alignments ``m_{h,f}`` start at order ``key_scale / sqrt(D)``.
    value_scale : float, default=0.0
        Initial values are ``value_scale * N(0, I_D)``.
    random_state : int, Generator or None, default=0
        Seeds the initial weights (NumPy generator, cast to ``dtype``).
    dtype : torch.dtype, default=torch.float32

    Attributes
    ----------
    keys : Parameter of shape (n_heads, dim)
    biases : Parameter of shape (n_heads,)
    values : Parameter of shape (n_heads, dim)

    Examples
    --------
    >>> model = AttentionRegressor(8, 2, normalization="softmax1", random_state=0)
    >>> model(torch.zeros(5, 3, 8)).shape
    torch.Size([5])
    """

    def __init__(
        self,
        dim,
        n_heads,
        normalization="softmax",
        *,
        key_scale=0.1,
        value_scale=0.0,
        random_state=0,
        dtype=torch.float32,
    ):
        super().__init__()
        for name, val in (("dim", dim), ("n_heads", n_heads)):
            if not isinstance(val, numbers.Integral) or isinstance(val, bool) or val < 1:
                raise ValueError(f"{name} must be a positive integer, got {val!r}.")
        _check_normalization(normalization)
        for name, val in (("key_scale", key_scale), ("value_scale", value_scale)):
            if not (isinstance(val, numbers.Real) and np.isfinite(val) and val >= 0):
                raise ValueError(f"{name} must be a finite non-negative number, got {val!r}.")
        self.dim = int(dim)
        self.n_heads = int(n_heads)
        self.normalization = normalization
        rng = _as_rng(random_state)
        keys = key_scale * rng.standard_normal((n_heads, dim))
        values = value_scale * rng.standard_normal((n_heads, dim))
        self.keys = torch.nn.Parameter(torch.tensor(keys, dtype=dtype))
        self.biases = torch.nn.Parameter(torch.zeros(n_heads, dtype=dtype))
        self.values = torch.nn.Parameter(torch.tensor(values, dtype=dtype))

    def forward(self, X):
        """Predictions for ``X`` of shape (..., n_tokens, dim)."""
        if X.shape[-1] != self.dim:
            raise ValueError(f"X has tokens of dimension {X.shape[-1]}, the model {self.dim}.")
        return attention_forward(X, self.keys, self.biases, self.values, self.normalization)

    @classmethod
    def from_weights(cls, keys, biases, values, normalization="softmax"):
        """A model holding copies of the given weights (arrays or tensors)."""
        keys, values = torch.as_tensor(keys), torch.as_tensor(values)
        biases = torch.as_tensor(biases)
        if keys.ndim != 2 or values.shape != keys.shape or biases.shape != keys.shape[:1]:
            raise ValueError(
                "keys and values must share a shape (n_heads, dim) and biases be (n_heads,); "
                f"got {tuple(keys.shape)}, {tuple(values.shape)}, {tuple(biases.shape)}."
            )
        model = cls(keys.shape[1], keys.shape[0], normalization, dtype=keys.dtype)
        with torch.no_grad():
            model.keys.copy_(keys)
            model.biases.copy_(biases.to(keys.dtype))
            model.values.copy_(values.to(keys.dtype))
        return model

    @classmethod
    def bayes_optimal(cls, task, normalization="bayes_softmax", *, dtype=torch.float64):
        """The closed-form Bayes-optimal estimator for a task with a discrete prior.

        One head per support point theta_h: ``k_h = sum_f theta_{h,f} k*_f``,
        ``b_h = log pi_h - |theta_h|^2 / 2``, ``v_h = v*``. With Bayes-softmax,
        ``sum_h a_{h,l}`` is the posterior of the relevant position (see
        :func:`posterior_position_weights`), so the output is ``E[y | X]``. Another
        ``normalization`` gives the same weights under that normalization, for comparison.

        Examples
        --------
        >>> from skorg.specialization import SingleLocationTask, flipped_spike_prior
        >>> task = SingleLocationTask(flipped_spike_prior([2.0]), dim=16)
        >>> AttentionRegressor.bayes_optimal(task).n_heads
        2
        """
        if not isinstance(task, SingleLocationTask):
            raise TypeError(f"task must be a SingleLocationTask, got {type(task).__name__}.")
        prior = task.prior
        if not isinstance(prior, DiscretePrior):
            raise ValueError("the closed-form Bayes estimator needs a DiscretePrior.")
        if np.any(prior.probabilities == 0):
            raise ValueError("drop zero-probability points before building the estimator.")
        pts = prior.points
        keys = pts @ task.key_directions
        biases = np.log(prior.probabilities) - 0.5 * np.sum(pts**2, axis=1)
        values = np.tile(task.value_direction, (pts.shape[0], 1))
        return cls.from_weights(
            torch.tensor(keys, dtype=dtype),
            torch.tensor(biases, dtype=dtype),
            torch.tensor(values, dtype=dtype),
            normalization,
        )

    def prune(self, heads):
        """A new model keeping only the listed heads (weights copied, same normalization)."""
        heads = np.asarray(heads, dtype=np.int64).reshape(-1)
        if heads.size == 0 or np.any(heads < 0) or np.any(heads >= self.n_heads):
            raise ValueError(f"heads must be a non-empty list of ids in [0, {self.n_heads}).")
        if np.unique(heads).size != heads.size:
            raise ValueError("heads must not repeat.")
        idx = torch.from_numpy(heads)
        return AttentionRegressor.from_weights(
            self.keys.detach()[idx],
            self.biases.detach()[idx],
            self.values.detach()[idx],
            self.normalization,
        )

    def extra_repr(self):
        return f"dim={self.dim}, n_heads={self.n_heads}, normalization={self.normalization!r}"
