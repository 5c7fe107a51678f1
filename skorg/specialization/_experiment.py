"""The reviewers' falsification test of sequential specialization (arXiv 2603.03993)."""

from dataclasses import dataclass, field

import numpy as np

from ._events import order_outcome, specialization_events
from ._model import AttentionRegressor
from ._task import GaussianPrior, SingleLocationTask, _as_rng, _real_array
from ._train import train_online

__all__ = ["SpecializationExperiment", "run_specialization_experiment"]


@dataclass(frozen=True)
class SpecializationExperiment:
    """Outcome of :func:`run_specialization_experiment`.

    Attributes
    ----------
    dims : tuple of int
    learning_rates : tuple of float
    variances : ndarray of shape (F,)
    predicted_order : ndarray of int of shape (F,)
        Directions by decreasing variance.
    times : ndarray of shape (n_dims, n_learning_rates, n_seeds, F)
        Capture times (``inf``: not captured within ``t_max``).
    heads, signs : ndarray of int of the same shape
    max_drop : ndarray of the same shape
        See :class:`SpecializationEvents`.
    outcomes : ndarray of int of shape (n_dims, n_learning_rates, n_seeds)
        :func:`order_outcome` of each run (1 in order, -1 violated, 0 undetermined). A direction
        not captured within ``t_max`` counts as captured after every captured one, so "in
        order" includes runs that captured only the leading directions in the predicted order;
        :meth:`all_captured_fraction` tells how many captured all of them.
    params : dict
        Every setting of the run.
    """

    dims: tuple
    learning_rates: tuple
    variances: np.ndarray
    predicted_order: np.ndarray
    times: np.ndarray
    heads: np.ndarray
    signs: np.ndarray
    max_drop: np.ndarray
    outcomes: np.ndarray
    params: dict = field(default_factory=dict)

    def order_fraction(self):
        """Fraction of runs in the predicted order, shape (n_dims, n_learning_rates)."""
        return np.mean(self.outcomes == 1, axis=-1)

    def all_captured_fraction(self):
        """Fraction of runs that captured every direction within ``t_max``."""
        return np.mean(np.all(np.isfinite(self.times), axis=-1), axis=-1)

    def violation_fraction(self):
        """Fraction of runs known to break the predicted order."""
        return np.mean(self.outcomes == -1, axis=-1)

    def excursion_fraction(self, drop=0.1):
        """Fraction of runs in which some captured direction fell by more than ``drop``."""
        return np.mean(np.any(self.max_drop > drop, axis=-1), axis=-1)

    def onset_times(self):
        """First specialization time of each run (min over directions), (n_dims, n_lr, n_seeds)."""
        return np.min(self.times, axis=-1)

    def onset_log_slope(self, learning_rate_index=0):
        """Least-squares slope of the median onset time against ``log D`` (NaN if undefined)."""
        med = np.median(self.onset_times()[:, learning_rate_index], axis=-1)
        ok = np.isfinite(med)
        if ok.sum() < 2:
            return float("nan")
        return float(np.polyfit(np.log(np.asarray(self.dims)[ok]), med[ok], 1)[0])

    def summary(self):
        """A plain-text table of the ordering statistics and onset times."""
        lines = [
            "   D      lr  in_order  violated  undetermined  all_captured  excursion  "
            "median_onset  median tau_f (by decreasing variance)"
        ]
        for i, D in enumerate(self.dims):
            for j, lr in enumerate(self.learning_rates):
                out = self.outcomes[i, j]
                tau = np.median(self.times[i, j][:, self.predicted_order], axis=0)
                lines.append(
                    f"{D:5d} {lr:6.3g} {np.mean(out == 1):9.2f} {np.mean(out == -1):9.2f} "
                    f"{np.mean(out == 0):13.2f} {self.all_captured_fraction()[i, j]:13.2f} "
                    f"{self.excursion_fraction()[i, j]:10.2f} "
                    f"{np.median(self.onset_times()[i, j]):13.2f}  "
                    + " ".join(f"{x:7.2f}" for x in tau)
                )
        return "\n".join(lines)


def run_specialization_experiment(
    *,
    variances=(24.0, 16.0, 8.0),
    n_heads=8,
    n_tokens=4,
    dims=(250,),
    learning_rates=(1.0, 3.0),
    value_learning_rate=0.2,
    normalization="softmax",
    n_seeds=40,
    t_max=100.0,
    batch_size=8,
    noise=0.1,
    key_scale=0.1,
    threshold=1.0,
    drop=0.1,
    record_every=0.5,
    random_state=0,
):
    """Run the falsification test of sequential specialization proposed in the review.

    For each token dimension ``D`` and key learning rate, ``n_seeds`` independent models (fresh
    initialization and fresh data) are trained by :func:`train_online` on the single-location
    task with a centred Gaussian prior of the given (distinct) variances; the capture time of
    each direction is read by :func:`specialization_events`.

    Parameters
    ----------
    variances : sequence of float, default=(24.0, 16.0, 8.0)
        ``Var(theta_f)``; the claim under test is that directions are captured in decreasing
        order of variance.
    n_heads, n_tokens : int, default=8, 4
    dims : sequence of int, default=(250,)
    learning_rates : sequence of float, default=(1.0, 3.0)
        Key learning rates (per sample).
    value_learning_rate : float, default=0.2
    normalization : str, default="softmax"
    n_seeds : int, default=40
    t_max : float, default=100.0
    batch_size : int, default=8
    noise, key_scale, threshold, drop, record_every : float
        See :class:`SingleLocationTask`, :class:`AttentionRegressor`,
        :func:`specialization_events` and :func:`train_online`.
    random_state : int, default=0

    Returns
    -------
    SpecializationExperiment

    Notes
    -----
    The paper leaves ``L``, ``D``, the learning rates and the batch open. The defaults were
    chosen so that the full experiment fits in minutes of CPU: the signal variances are large
    (the saddle-escape rate grows with ``Var(theta_f)``), the value step is small (value noise is
    not damped by the attention weights) and ``D = 250`` keeps the alignment noise floor
    ``~ sqrt(q / D)`` well under the capture threshold.

    Examples
    --------
    >>> res = run_specialization_experiment(dims=(32,), learning_rates=(1.0,), n_seeds=2,
    ...                                     t_max=2.0)
    >>> res.times.shape
    (1, 1, 2, 3)
    """
    variances = _real_array(variances, "variances")
    if variances.ndim != 1 or variances.size < 2 or np.any(variances < 0):
        raise ValueError("variances must be a 1-D array of at least two non-negative numbers.")
    if not isinstance(n_seeds, int) or n_seeds < 1:
        raise ValueError(f"n_seeds must be a positive integer, got {n_seeds!r}.")
    dims, learning_rates = tuple(int(d) for d in dims), tuple(float(x) for x in learning_rates)
    if not dims or not learning_rates:
        raise ValueError("dims and learning_rates must not be empty.")
    predicted = np.argsort(-variances, kind="stable")
    rng = _as_rng(random_state)
    shape = (len(dims), len(learning_rates), n_seeds, variances.size)
    times, max_drop = np.full(shape, np.inf), np.zeros(shape)
    heads, signs = np.full(shape, -1, dtype=np.int64), np.zeros(shape, dtype=np.int64)
    outcomes = np.zeros(shape[:3], dtype=np.int64)
    for i, D in enumerate(dims):
        task = SingleLocationTask(
            GaussianPrior(variances), n_tokens=n_tokens, dim=D, noise=noise, random_state=rng
        )
        for j, lr in enumerate(learning_rates):
            models = [
                AttentionRegressor(D, n_heads, normalization, key_scale=key_scale, random_state=rng)
                for _ in range(n_seeds)
            ]
            histories = train_online(
                models,
                task,
                t_max=t_max,
                learning_rate=lr,
                value_learning_rate=value_learning_rate,
                batch_size=batch_size,
                record_every=record_every,
                random_state=rng,
            )
            for s, hist in enumerate(histories):
                ev = specialization_events(hist.t, hist.m, threshold=threshold, drop=drop)
                times[i, j, s], heads[i, j, s] = ev.times, ev.heads
                signs[i, j, s], max_drop[i, j, s] = ev.signs, ev.max_drop
                outcomes[i, j, s] = order_outcome(ev.times, predicted)
    params = dict(
        variances=variances.tolist(),
        n_heads=n_heads,
        n_tokens=n_tokens,
        dims=dims,
        learning_rates=learning_rates,
        value_learning_rate=value_learning_rate,
        normalization=normalization,
        n_seeds=n_seeds,
        t_max=t_max,
        batch_size=batch_size,
        noise=noise,
        key_scale=key_scale,
        threshold=threshold,
        drop=drop,
        record_every=record_every,
        random_state=random_state,
    )
    return SpecializationExperiment(
        dims, learning_rates, variances, predicted, times, heads, signs, max_drop, outcomes, params
    )
