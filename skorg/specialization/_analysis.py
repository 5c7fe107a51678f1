"""Analyses of specialization runs (SGD or effective dynamics) and the reviewers' flow test."""

import math
import numbers
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import norm as _normal

from .._validation import check_memory
from ._events import order_outcome, specialization_events
from ._flow import integrate_flow
from ._population import random_initial_order
from ._task import GaussianPrior, SingleLocationTask, _real_array

__all__ = [
    "FlowSpecializationTest",
    "participation_ratio",
    "run_flow_specialization_test",
    "unspecialized_time",
    "wilson_interval",
]


def participation_ratio(m):
    """How many latent directions each head combines: ``(sum_f m_f^2)^2 / sum_f m_f^4``.

    Parameters
    ----------
    m : array-like of shape (..., n_heads, F)
        Alignments (``TrainingHistory.m`` or ``FlowTrajectory.m``, or one record).

    Returns
    -------
    ratio : ndarray of shape (..., n_heads)
        1 for a head aligned with a single direction, ``k`` for an equal mixture of ``k``
        directions (such as ``+-e_1 +- e_2``: 2); NaN for a head with ``m = 0``.

    Examples
    --------
    >>> participation_ratio([[1.0, 0.0, 0.0], [1.0, -1.0, 0.0]])
    array([1., 2.])
    """
    m = _real_array(m, "m")
    if m.ndim < 2 or not np.all(np.isfinite(m)):
        raise ValueError(f"m must be a finite array of shape (..., n_heads, F), got {m.shape}.")
    # divide by the largest entry first so that tiny or huge alignments do not underflow
    scale = np.max(np.abs(m), axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        u = m / scale
        s2 = np.sum(u**2, axis=-1)
        return s2**2 / np.sum(u**4, axis=-1)


def unspecialized_time(t, m, mean, *, cosine=0.9, min_alignment=0.1):
    """First time at which every head is aligned with the mean signal.

    Parameters
    ----------
    t : array-like of shape (n_records,)
    m : array-like of shape (n_records, n_heads, F)
    mean : array-like of shape (F,)
        The mean signal ``E theta`` (non-zero).
    cosine : float, default=0.9
        Every head needs ``cos(m_h, E theta) >= cosine``...
    min_alignment : float, default=0.1
        ...and ``m_h . E theta / |E theta| >= min_alignment`` (so that the initial, random
        alignments of order ``1 / sqrt(D)`` never count).

    Returns
    -------
    time : float
        ``inf`` if it never happens within the records.

    Examples
    --------
    >>> m = [[[0.0, 0.01]], [[0.5, 0.1]], [[1.0, 0.0]]]
    >>> unspecialized_time([0.0, 1.0, 2.0], m, [1.0, 0.0])
    1.0
    """
    t, m, mean = (_real_array(v, name) for v, name in ((t, "t"), (m, "m"), (mean, "mean")))
    if m.ndim != 3 or t.shape != m.shape[:1] or mean.shape != m.shape[2:]:
        raise ValueError(
            f"t (n_records,), m (n_records, n_heads, F) and mean (F,) must agree; got "
            f"{t.shape}, {m.shape}, {mean.shape}."
        )
    if not np.all(np.isfinite(t)) or np.any(np.diff(t) < 0):
        raise ValueError("t must hold finite record times in increasing order.")
    for name, v in (("cosine", cosine), ("min_alignment", min_alignment)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) or not np.isfinite(v):
            raise ValueError(f"{name} must be a finite number, got {v!r}.")
    if not -1 <= cosine <= 1:
        raise ValueError(f"cosine must lie in [-1, 1], got {cosine!r}.")
    if not (np.all(np.isfinite(m)) and np.all(np.isfinite(mean))):
        raise ValueError("m and mean must be finite.")
    top = np.max(np.abs(mean)) if mean.size else 0.0
    if top == 0:
        raise ValueError("mean must be finite and non-zero: a centred prior has no mean signal.")
    unit = (mean / top) / np.linalg.norm(mean / top)  # no overflow of the squares near 1e308
    # each head's alignments scaled by their largest entry (a positive number: the cosine is
    # the same), so that their norms do not overflow either
    peak = np.max(np.abs(m), axis=-1, keepdims=True)
    scaled = m / np.where(peak > 0, peak, 1.0)
    along = scaled @ unit
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = along / np.linalg.norm(scaled, axis=-1)
    with np.errstate(over="ignore"):  # a projection past the float maximum passes any bound
        proj = along * np.where(peak > 0, peak, 1.0)[..., 0]
    ok = np.all((cos >= cosine) & (proj >= min_alignment), axis=1)
    hit = np.flatnonzero(ok)
    return float(t[hit[0]]) if hit.size else float("inf")


def _counts(values, name):
    """Whole numbers (integer arrays, or floats without a fraction) as float64."""
    arr = np.asarray(values)
    if arr.dtype == bool or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise TypeError(f"{name} must be whole numbers (counts), got dtype {arr.dtype}.")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)):
        raise ValueError(f"{name} must be whole numbers (counts), got {values!r}.")
    return arr


def wilson_interval(successes, trials, confidence=0.95):
    """Wilson score interval for a binomial proportion.

    Parameters
    ----------
    successes, trials : int or array of int
    confidence : float, default=0.95

    Returns
    -------
    low, high : float or ndarray

    Examples
    --------
    >>> [round(x, 3) for x in wilson_interval(100, 100)]
    [0.963, 1.0]
    """
    k = _counts(successes, "successes")
    n = _counts(trials, "trials")
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise ValueError("need 0 <= successes <= trials and trials >= 1.")
    if (
        isinstance(confidence, (bool, np.bool_))
        or not isinstance(confidence, numbers.Real)
        or not 0 < confidence < 1
    ):
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}.")
    z = _normal.ppf(0.5 + confidence / 2)
    p = k / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * np.sqrt(p * (1 - p) / n + (z / (2 * n)) ** 2) / (1 + z**2 / n)  # n up to 1e308
    low, high = np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)
    return (float(low), float(high)) if np.ndim(low) == 0 else (low, high)


@dataclass(frozen=True)
class FlowSpecializationTest:
    """Outcome of :func:`run_flow_specialization_test`.

    Attributes
    ----------
    learning_rates : tuple of float
    variances : ndarray of shape (F,)
    predicted_order : ndarray of int of shape (F,)
    tau : ndarray of shape (n_learning_rates, n_init, F)
        ``tau_f``: first rescaled time ``learning_rate * t`` with ``||m_{:,f}|| > threshold``
        (``inf`` if never within ``tau_max``).
    max_drop : ndarray of the same shape
        Largest relative fall of ``||m_{:,f}||`` below its running maximum after ``tau_f``.
    outcomes : ndarray of int of shape (n_learning_rates, n_init)
        :func:`order_outcome` (1 in order, -1 violated, 0 undetermined).
    participation : ndarray of shape (n_learning_rates, n_init, n_heads)
        :func:`participation_ratio` of each head at the end.
    final_risk : ndarray of shape (n_learning_rates, n_init)
    trajectories : list of list of FlowTrajectory or None
        Kept when asked for.
    params : dict
    """

    learning_rates: tuple
    variances: np.ndarray
    predicted_order: np.ndarray
    tau: np.ndarray
    max_drop: np.ndarray
    outcomes: np.ndarray
    participation: np.ndarray
    final_risk: np.ndarray
    trajectories: list | None = None
    params: dict = field(default_factory=dict)

    def table(self, confidence=0.95, drop=0.1):
        """Rows of the reviewers' table, one per learning rate, as dicts.

        ``order_held`` counts the runs whose captured directions came in the predicted order
        (a direction not captured counts as last), ``all_captured_in_order`` those that
        captured every direction, in order; ``captured_per_direction`` is in the predicted
        order; the intervals are Wilson's.
        """
        rows = []
        n = self.outcomes.shape[1]
        for j, lr in enumerate(self.learning_rates):
            out = self.outcomes[j]
            held = int(np.sum(out == 1))
            exc = int(np.sum(np.any(self.max_drop[j] > drop, axis=-1)))
            all_captured = np.all(np.isfinite(self.tau[j]), axis=-1)
            captured = int(np.sum(all_captured))
            strict = int(np.sum(all_captured & (out == 1)))
            rows.append(
                dict(
                    learning_rate=lr,
                    n_init=n,
                    order_held=held,
                    order_held_interval=wilson_interval(held, n, confidence),
                    violated=int(np.sum(out == -1)),
                    undetermined=int(np.sum(out == 0)),
                    all_captured=captured,
                    all_captured_in_order=strict,
                    all_captured_in_order_interval=wilson_interval(strict, n, confidence),
                    captured_per_direction=np.isfinite(self.tau[j][:, self.predicted_order]).sum(
                        axis=0
                    ),
                    excursions=exc,
                    excursions_interval=wilson_interval(exc, n, confidence),
                    median_tau=np.median(self.tau[j][:, self.predicted_order], axis=0),
                    median_participation=float(np.nanmedian(self.participation[j])),
                )
            )
        return rows

    def summary(self, confidence=0.95, drop=0.1):
        """The table as plain text."""
        pct = f"{100 * confidence:g}%"
        lines = [
            f"   lr  n  order held [{pct} Wilson]  violated  undetermined  all captured  "
            f"excursions [{pct}]  median tau_f (decreasing variance)  median PR  "
            f"captured per direction  all captured in order [{pct}]"
        ]
        for r in self.table(confidence, drop):
            lo, hi = r["order_held_interval"]
            elo, ehi = r["excursions_interval"]
            slo, shi = r["all_captured_in_order_interval"]
            lines.append(
                f"{r['learning_rate']:5.3g} {r['n_init']:3d} {r['order_held']:4d} "
                f"[{lo:.2f}, {hi:.2f}] {r['violated']:13d} {r['undetermined']:13d} "
                f"{r['all_captured']:13d} {r['excursions']:6d} [{elo:.2f}, {ehi:.2f}]  "
                + " ".join(f"{x:7.2f}" for x in r["median_tau"])
                + f"  {r['median_participation']:9.2f}  "
                + " / ".join(str(int(c)) for c in r["captured_per_direction"])
                + f"  {r['all_captured_in_order']:4d} [{slo:.2f}, {shi:.2f}]"
            )
        return "\n".join(lines)


def run_flow_specialization_test(
    *,
    variances=(3.0, 2.0, 1.0),
    n_heads=8,
    n_tokens=4,
    dim=10_000,
    n_init=100,
    learning_rates=(0.01, 1.0),
    value_rate_ratio=0.2,
    normalization="softmax",
    tau_max=250.0,
    noise=0.1,
    key_scale=0.1,
    value_scale=0.0,
    threshold=1.0,
    drop=0.1,
    record_every=1.0,
    n_samples=64,
    sgd_noise=True,
    keep_trajectories=False,
    random_state=0,
    progress=None,
    method="midpoint",
    rtol=1e-3,
    step=0.25,
    fresh_draws=True,
):
    """The reviewers' test of sequential specialization, on the effective dynamics.

    ``n_init`` initializations drawn at dimension ``dim`` (:func:`random_initial_order`) are
    integrated by :func:`integrate_flow` at each learning rate, with a centred Gaussian prior of
    the given variances; for each run ``tau_f`` (first rescaled time ``tau = learning_rate * t``
    with ``||m_{:,f}||_2 > threshold``) and every excursion (a fall of more than ``drop`` below
    the running maximum after ``tau_f``) are recorded.

    Parameters
    ----------
    variances : sequence of float, default=(3.0, 2.0, 1.0)
        Distinct ``Var(theta_f)``; the claim is that ``tau`` follows decreasing variance.
    n_heads, n_tokens, dim, n_init : int, default=8, 4, 10_000, 100
    learning_rates : sequence of float, default=(0.01, 1.0)
        Per-sample key steps (:func:`train_online`'s meaning); the biases use the same rate.
    value_rate_ratio : float, default=0.2
        Value step divided by the key step. With a ratio of one the online-SGD noise that the
        values inject (not damped by the attention weights) dominates at a key step of 1.
    normalization : str, default="softmax"
    tau_max : float, default=250.0
        Length of each run in ``tau = learning_rate * t``. From alignments of order
        ``key_scale / sqrt(dim)`` the first capture takes ``tau`` of about 100 to 150 at
        ``dim = 10^4`` (an escape rate of about 0.04 per unit of ``tau`` with eight heads,
        whose values share the signal), the second about 1.5 to 2 times longer.
    noise, key_scale, value_scale, threshold, drop, record_every, n_samples, sgd_noise
        See :class:`SingleLocationTask`, :func:`random_initial_order`,
        :func:`specialization_events` and :func:`integrate_flow` (``record_every`` in ``tau``).
    keep_trajectories : bool, default=False
    random_state : int, default=0
        Seeds the initializations (the same ones at every learning rate) and the Monte Carlo.
    progress : bool, default=None
        A bar per learning rate; None follows ``skorg.get_config()["progress"]``.
    method, rtol : str, float, default="midpoint", 1e-3
        Passed to :func:`integrate_flow` (``rtol`` only for the adaptive methods).
    step : float, default=0.25
        Step of ``"midpoint"`` in ``tau``.
    fresh_draws : bool, default=True
        Passed to :func:`integrate_flow`: new Monte Carlo draws at every step, so that a long
        run does not overfit one fixed set of draws.

    Returns
    -------
    FlowSpecializationTest

    Notes
    -----
    The thresholded alignment is the order parameter ``m_{h,f} = k_h . k*_f / D`` with
    ``|k*_f| = sqrt(D)``, the normalization of :func:`order_parameters` and of the records of
    :func:`train_online`; in it the Bayes-optimal key of a signal ``theta`` has
    ``m = theta``, so the threshold 1 is about one prior standard deviation of each direction
    (``sqrt(3), sqrt(2), 1`` for the default variances).

    At ``learning_rate = 0.01`` the SGD-noise term is ``10^-4`` of its value at 1, so the two
    rows compare the pure gradient flow with the flow perturbed by the online-SGD noise (at equal
    ``tau`` the drift is the same).

    Examples
    --------
    >>> res = run_flow_specialization_test(n_init=2, n_heads=2, learning_rates=(1.0,),
    ...                                    tau_max=1.0, n_samples=64)
    >>> res.tau.shape
    (1, 2, 3)
    """
    variances = _real_array(variances, "variances")
    if variances.ndim != 1 or variances.size < 2 or np.any(variances < 0):
        raise ValueError("variances must be a 1-D array of at least two non-negative numbers.")
    if not isinstance(n_init, numbers.Integral) or n_init < 1:
        raise ValueError(f"n_init must be a positive integer, got {n_init!r}.")
    for name, v in (("tau_max", tau_max), ("record_every", record_every), ("step", step)):
        if (
            isinstance(v, (bool, np.bool_))
            or not isinstance(v, numbers.Real)
            or not (np.isfinite(v) and v > 0)
        ):
            raise ValueError(f"{name} must be a finite positive number, got {v!r}.")
    if isinstance(learning_rates, (str, bytes)) or not np.iterable(learning_rates):
        raise TypeError(f"learning_rates must be a sequence of numbers, got {learning_rates!r}.")
    learning_rates = tuple(learning_rates)
    if not learning_rates:
        raise ValueError("learning_rates must not be empty.")
    for lr in learning_rates:
        if (
            isinstance(lr, (bool, np.bool_))
            or not isinstance(lr, numbers.Real)
            or not (np.isfinite(lr) and lr > 0)
        ):
            raise ValueError(
                f"learning_rates must hold finite positive numbers (tau = learning_rate * t), "
                f"got {lr!r}."
            )
    learning_rates = tuple(float(x) for x in learning_rates)
    # the records of every run (order parameters and risk), before any is integrated
    n_records = math.ceil(tau_max / record_every) + 1
    H = n_heads if isinstance(n_heads, numbers.Integral) else 1
    per_record = 4 * H * H + 2 * H * (variances.size + 1) + H + 2
    check_memory(
        8 * n_records * per_record * int(n_init),
        f"the records of tau_max={tau_max:g} every {record_every:g} ({n_records:.3g} records)",
    )
    predicted = np.argsort(-variances, kind="stable")
    task = SingleLocationTask(
        GaussianPrior(variances), n_tokens=n_tokens, dim=dim, noise=noise, random_state=0
    )
    init = random_initial_order(
        task,
        n_heads,
        int(n_init),
        key_scale=key_scale,
        value_scale=value_scale,
        random_state=random_state,
    )
    shape = (len(learning_rates), int(n_init), variances.size)
    tau, max_drop = np.full(shape, np.inf), np.zeros(shape)
    outcomes = np.zeros(shape[:2], dtype=np.int64)
    participation = np.zeros((*shape[:2], n_heads))
    final_risk = np.zeros(shape[:2])
    kept = [] if keep_trajectories else None
    for j, lr in enumerate(learning_rates):
        flows = integrate_flow(
            init,
            task,
            normalization,
            t_max=tau_max / lr,
            learning_rate=lr,
            value_learning_rate=value_rate_ratio * lr,
            record_every=record_every / lr,
            method=method,
            rtol=rtol,
            step=step / lr,
            fresh_draws=fresh_draws,
            n_samples=n_samples,
            sgd_noise=sgd_noise,
            random_state=random_state,
            progress=progress,
        )
        for s, fl in enumerate(flows):
            ev = specialization_events(lr * fl.t, fl.m, threshold=threshold, drop=drop)
            tau[j, s], max_drop[j, s] = ev.times, ev.max_drop
            outcomes[j, s] = order_outcome(ev.times, predicted)
            participation[j, s] = participation_ratio(fl.m[-1])
            final_risk[j, s] = fl.risk[-1]
        if kept is not None:
            kept.append(flows)
    params = dict(
        n_heads=n_heads,
        n_tokens=n_tokens,
        dim=dim,
        n_init=n_init,
        normalization=normalization,
        value_rate_ratio=value_rate_ratio,
        method=method,
        rtol=rtol,
        step=step,
        fresh_draws=fresh_draws,
        tau_max=tau_max,
        noise=noise,
        key_scale=key_scale,
        value_scale=value_scale,
        threshold=threshold,
        drop=drop,
        record_every=record_every,
        n_samples=n_samples,
        sgd_noise=sgd_noise,
        random_state=random_state,
    )
    return FlowSpecializationTest(
        learning_rates,
        variances,
        predicted,
        tau,
        max_drop,
        outcomes,
        participation,
        final_risk,
        kept,
        params,
    )
