"""Specialization events read from recorded alignments: capture times, heads, excursions."""

import numbers
from dataclasses import dataclass

import numpy as np

from ._task import _real_array

__all__ = ["SpecializationEvents", "order_outcome", "specialization_events"]


@dataclass(frozen=True)
class SpecializationEvents:
    """When each latent direction was first captured, and by which head.

    Attributes
    ----------
    times : ndarray of shape (F,)
        First recorded ``t`` with ``||m_{:,f}||_2 > threshold``; ``inf`` if never.
    heads : ndarray of int of shape (F,)
        ``argmax_h |m_{h,f}|`` at that time; -1 if never captured.
    signs : ndarray of int of shape (F,)
        Sign of that head's alignment (+1 or -1; 0 if never captured).
    max_drop : ndarray of shape (F,)
        Largest relative fall of ``||m_{:,f}||_2`` below its running maximum after the capture
        (0 if never captured).
    excursion : ndarray of bool of shape (F,)
        ``max_drop > drop``: the direction was partly unlearned after its capture.
    """

    times: np.ndarray
    heads: np.ndarray
    signs: np.ndarray
    max_drop: np.ndarray
    excursion: np.ndarray


def specialization_events(t, m, *, threshold=1.0, drop=0.1):
    """Read specialization events from alignments recorded over time.

    Parameters
    ----------
    t : array-like of shape (n_records,)
        Increasing record times.
    m : array-like of shape (n_records, n_heads, F)
        Alignments ``m_{h,f}(t)`` (``TrainingHistory.m``).
    threshold : float, default=1.0
        Direction ``f`` is captured once the norm over heads ``||m_{:,f}||_2`` exceeds it (the
        criterion of the falsification test proposed in the review of [1]_).
    drop : float, default=0.1
        Relative fall below the running maximum that counts as an excursion.

    Returns
    -------
    SpecializationEvents

    References
    ----------
    .. [1] Sagitova, Duranthon, Zdeborova, arXiv 2603.03993 (2026).

    Examples
    --------
    >>> t = [0.0, 1.0, 2.0]
    >>> m = [[[0.0, 0.0]], [[1.5, 0.2]], [[1.2, -2.0]]]
    >>> ev = specialization_events(t, m)
    >>> ev.times, ev.signs, ev.max_drop.round(2)
    (array([1., 2.]), array([ 1, -1]), array([0.2, 0. ]))
    """
    t = _real_array(t, "t")
    m = _real_array(m, "m")
    if t.ndim != 1 or t.size == 0:
        raise ValueError(f"t must be a non-empty 1-D array, got shape {t.shape}.")
    if m.ndim != 3 or m.shape[0] != t.shape[0]:
        raise ValueError(f"m must have shape (n_records={t.shape[0]}, n_heads, F), got {m.shape}.")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(m))):
        raise ValueError("t and m must be finite (no NaN or inf).")
    if np.any(np.diff(t) <= 0):
        raise ValueError("t must be strictly increasing.")
    for name, val in (("threshold", threshold), ("drop", drop)):
        if not (isinstance(val, numbers.Real) and np.isfinite(val) and val > 0):
            raise ValueError(f"{name} must be a finite positive number, got {val!r}.")
    # (n_records, F), through the largest entry so that alignments near 1e308 do not overflow
    peak = np.max(np.abs(m), axis=1, keepdims=True)
    peak = np.where(peak > 0, peak, 1.0)
    with np.errstate(over="ignore"):  # a norm past the float maximum is past any threshold
        norms = np.linalg.norm(m / peak, axis=1) * peak[:, 0]
    n_dir = m.shape[2]
    times = np.full(n_dir, np.inf)
    heads = np.full(n_dir, -1, dtype=np.int64)
    signs = np.zeros(n_dir, dtype=np.int64)
    max_drop = np.zeros(n_dir)
    for f in range(n_dir):
        above = np.flatnonzero(norms[:, f] > threshold)
        if above.size == 0:
            continue
        k = above[0]
        times[f] = t[k]
        heads[f] = int(np.argmax(np.abs(m[k, :, f])))
        signs[f] = 1 if m[k, heads[f], f] > 0 else -1
        after = norms[k:, f]
        running = np.maximum.accumulate(after)
        max_drop[f] = float(np.max(1.0 - after / running))
    return SpecializationEvents(times, heads, signs, max_drop, max_drop > drop)


def order_outcome(times, order):
    """Whether capture times follow a predicted order, allowing for censored (inf) times.

    Parameters
    ----------
    times : array-like of shape (F,)
        Capture times; ``inf`` for a direction not captured within the run.
    order : array-like of int of shape (F,)
        Predicted order (first-captured direction first).

    Returns
    -------
    outcome : {1, 0, -1}
        1: every pair is known and strictly in the predicted order; -1: some pair is known to be
        out of order (ties count as out of order); 0: undetermined (no violation, but two
        directions were never captured so their order is unknown).

    Examples
    --------
    >>> order_outcome([1.0, 3.0, float("inf")], [0, 1, 2])
    1
    >>> order_outcome([float("inf"), 3.0, float("inf")], [0, 1, 2])
    -1
    >>> order_outcome([1.0, float("inf"), float("inf")], [0, 1, 2])
    0
    """
    times = _real_array(times, "times")
    if times.ndim != 1 or np.any(np.isnan(times)):
        raise ValueError("times must be a 1-D array of capture times (inf if never), no NaN.")
    order = np.asarray(order)
    if order.shape != times.shape or (order.size and order.dtype.kind not in "iu"):
        raise ValueError(f"order must be {times.shape[0]} integer indices, got {order!r}.")
    if not np.array_equal(np.sort(order), np.arange(times.shape[0])):
        raise ValueError(f"order must be a permutation of 0..{times.shape[0] - 1}.")
    tau = times[order]
    unknown = False
    for i in range(tau.size):
        for j in range(i + 1, tau.size):
            if np.isinf(tau[i]) and np.isinf(tau[j]):
                unknown = True
            elif tau[i] >= tau[j]:
                return -1
    return 0 if unknown else 1
