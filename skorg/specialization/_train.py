"""Online SGD on the single-location task, recording the order parameters over time."""

import math
import numbers
from dataclasses import dataclass

import numpy as np
import torch

from ._model import AttentionRegressor, attention_forward
from ._risk import OrderParameters, _check_pair, _order_tensors, model_risk
from ._task import _as_rng

__all__ = ["TrainingHistory", "train_online"]


@dataclass(frozen=True)
class TrainingHistory:
    """Order parameters of one training run, recorded against ``t = samples seen / D``.

    Attributes
    ----------
    t : ndarray of shape (n_records,)
    order : OrderParameters
        Each array has a leading axis of length ``n_records``.
    risk : ndarray of shape (n_records,) or None
        Monte Carlo test risk at each record, when asked for.
    learning_rate, value_learning_rate, bias_learning_rate : float
    batch_size : int
    """

    t: np.ndarray
    order: OrderParameters
    risk: np.ndarray | None
    learning_rate: float
    value_learning_rate: float
    bias_learning_rate: float
    batch_size: int

    @property
    def m(self):
        """Alignments ``m_{h,f}``, shape (n_records, n_heads, F)."""
        return self.order.m


def _positive(name, val, integer=False):
    ok = isinstance(val, numbers.Integral) if integer else isinstance(val, numbers.Real)
    if not ok or isinstance(val, bool) or not np.isfinite(val) or val <= 0:
        kind = "positive integer" if integer else "finite positive number"
        raise ValueError(f"{name} must be a {kind}, got {val!r}.")


def train_online(
    models,
    task,
    *,
    t_max=10.0,
    learning_rate=0.5,
    batch_size=1,
    value_learning_rate=None,
    bias_learning_rate=None,
    train_keys=True,
    train_biases=True,
    train_values=True,
    record_every=0.1,
    risk_samples=0,
    random_state=0,
):
    """Train attention regressors by online SGD, one fresh batch per step, in place.

    Parameters
    ----------
    models : AttentionRegressor or list of AttentionRegressor
        A list is trained as independent replicas in one batched computation (each replica sees
        its own fresh samples); the models must share ``dim``, ``n_heads``, normalization and
        dtype.
    task : SingleLocationTask
    t_max : float, default=10.0
        Training length in ``t = samples seen / D`` (per replica).
    learning_rate : float, default=0.5
        Step ``eta`` of the keys per sample.
    batch_size : int, default=1
        Fresh samples per step; the step is ``eta`` times the *sum* of their gradients, which is
        ``batch_size`` single-sample steps up to ``O(batch_size / D)`` (keep it much smaller
        than ``D``).
    value_learning_rate : float, default=None
        Step of the values per sample; ``eta`` when None. The SGD noise a value step injects is
        not damped by the attention weights as a key step's is, so values usually need a smaller
        step than keys.
    bias_learning_rate : float, default=None
        Step of the biases per sample; ``eta / D`` when None. The biases are order parameters
        already, so this scaling makes them move on the same ``t`` scale as the alignments.
    train_keys, train_biases, train_values : bool, default=True
        Freeze a group of weights with False.
    record_every : float, default=0.1
        Spacing of the records in ``t`` (rounded to whole steps).
    risk_samples : int, default=0
        When positive, :func:`model_risk` with this many samples is recorded as well.
    random_state : int, Generator or None, default=0
        Seeds the training samples.

    Returns
    -------
    TrainingHistory or list of TrainingHistory
        One per model (a list when ``models`` is a list).

    Notes
    -----
    The per-sample loss is ``(y - y_hat)^2 / 2``. A key or value step moves an alignment
    ``k_h . k*_f / D`` by ``O(eta / D)``, so ``D`` samples (one unit of ``t``) move it by
    ``O(eta)``: in ``t`` the order parameters follow a deterministic limit as ``D`` grows, with
    the SGD noise entering the overlaps ``q`` at order ``eta^2``.

    Examples
    --------
    >>> from skorg.specialization import AttentionRegressor, SingleLocationTask, spike_prior
    >>> task = SingleLocationTask(spike_prior([2.0]), dim=32)
    >>> model = AttentionRegressor(32, 2)
    >>> hist = train_online(model, task, t_max=1.0, record_every=0.5)
    >>> hist.t
    array([0. , 0.5, 1. ])
    """
    single = isinstance(models, AttentionRegressor)
    models = [models] if single else list(models)
    if not models:
        raise ValueError("models must not be empty.")
    for model in models:
        _check_pair(model, task)
    first = models[0]
    for model in models[1:]:
        same = (model.n_heads, model.normalization, model.keys.dtype) == (
            first.n_heads,
            first.normalization,
            first.keys.dtype,
        )
        if not same:
            raise ValueError("replicas must share n_heads, normalization and dtype.")
    _positive("t_max", t_max)
    _positive("learning_rate", learning_rate)
    _positive("record_every", record_every)
    _positive("batch_size", batch_size, integer=True)
    if bias_learning_rate is None:
        bias_learning_rate = learning_rate / task.dim
    _positive("bias_learning_rate", bias_learning_rate)
    if value_learning_rate is None:
        value_learning_rate = learning_rate
    _positive("value_learning_rate", value_learning_rate)
    if not isinstance(risk_samples, numbers.Integral) or risk_samples < 0:
        raise ValueError(f"risk_samples must be a non-negative integer, got {risk_samples!r}.")

    rng = _as_rng(random_state)
    R, D, L, B = len(models), task.dim, task.n_tokens, int(batch_size)
    dtype = first.keys.dtype
    stack = [
        torch.stack([getattr(m, name).detach() for m in models]).clone().requires_grad_(flag)
        for name, flag in (("keys", train_keys), ("biases", train_biases), ("values", train_values))
    ]
    keys, biases, values = stack
    rates = (learning_rate, bias_learning_rate, value_learning_rate)
    trained = [(p, lr) for p, lr in zip(stack, rates, strict=True) if p.requires_grad]
    kstar = torch.from_numpy(task.key_directions)
    vstar = torch.from_numpy(task.value_direction)

    n_steps = math.ceil(t_max * D / B)
    every = max(1, round(record_every * D / B))
    record_steps = sorted(set(range(0, n_steps + 1, every)) | {n_steps})
    records, times, risks = [], [], []

    def record(step):
        with torch.no_grad():
            records.append(
                [x.numpy().copy() for x in _order_tensors(keys, biases, values, kstar, vstar)]
            )
        times.append(step * B / D)
        if not all(np.all(np.isfinite(x)) for x in records[-1]):
            raise FloatingPointError(
                f"the weights are no longer finite at t={times[-1]:.3g}: the learning rates "
                "are too large for this task; lower them."
            )
        if risk_samples:
            risks.append(
                [
                    _replica_risk(keys, biases, values, r, first, task, risk_samples, rng)
                    for r in range(R)
                ]
            )

    next_record = 0
    for step in range(n_steps + 1):
        if step == record_steps[next_record]:
            record(step)
            next_record += 1
        if step == n_steps:
            break
        X, y = task.sample(R * B, rng, backend="torch", dtype=dtype)
        y_hat = attention_forward(X.view(R, B, L, D), keys, biases, values, first.normalization)
        loss = 0.5 * ((y.view(R, B) - y_hat) ** 2).sum()
        grads = torch.autograd.grad(loss, [p for p, _ in trained]) if trained else []
        with torch.no_grad():
            for (p, lr), g in zip(trained, grads, strict=True):
                p.sub_(lr * g)

    with torch.no_grad():
        for r, model in enumerate(models):
            model.keys.copy_(keys[r])
            model.biases.copy_(biases[r])
            model.values.copy_(values[r])

    t = np.asarray(times)
    fields = [np.stack([rec[i] for rec in records], axis=1) for i in range(5)]  # (R, T, ...)
    risk_arr = np.asarray(risks).T if risk_samples else None
    histories = [
        TrainingHistory(
            t=t,
            order=OrderParameters(*(f[r] for f in fields)),
            risk=None if risk_arr is None else risk_arr[r],
            learning_rate=float(learning_rate),
            value_learning_rate=float(value_learning_rate),
            bias_learning_rate=float(bias_learning_rate),
            batch_size=B,
        )
        for r in range(R)
    ]
    return histories[0] if single else histories


def _replica_risk(keys, biases, values, r, first, task, n_samples, rng):
    model = AttentionRegressor.from_weights(
        keys[r].detach(), biases[r].detach(), values[r].detach(), first.normalization
    )
    return model_risk(model, task, n_samples, rng)[0]
