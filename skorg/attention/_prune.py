"""Cumulative head pruning along a ranking: curves, areas and their uncertainty over inputs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from skorg.stats import bootstrap_of_means, permutation_p_value, permutation_test_paired

from ._mask import attention_layout, mask_heads

__all__ = ["PruningResult", "prune_curves"]


@dataclass
class PruningResult:
    """Metric against the fraction of heads removed, for several prune orders.

    Attributes
    ----------
    fractions : ndarray of shape (n_steps,)
    baseline : float
        Metric of the unpruned model (mean over inputs when the metric is per input).
    curves : dict of name -> ndarray of shape (n_steps,)
        Mean metric over inputs at each step. ``"random"`` is the mean over the random orders
        when ``n_random > 0``.
    auc : dict of name -> float
        Area under ``curve / baseline`` over the fractions (1 would be "no loss at all").
    prunable : dict of name -> float
        Largest fraction up to which the metric stays at or above ``threshold * baseline``.
    threshold : float
    per_input : dict of name -> ndarray of shape (n_steps, n_inputs), or None
        The metric of every input at every step (None for a scalar metric).
    intervals : dict of name -> dict
        ``"auc"``, ``"prunable"``, ``"curve"``: :class:`~skorg.stats.BootstrapResult` over
        resampled inputs (empty for a scalar metric).
    versus_random : dict of name -> dict
        Paired difference of each order's area to the random area: ``"difference"``,
        ``"low"``, ``"high"`` (bootstrap interval over inputs), ``"p_value"`` (paired
        permutation test over inputs), ``"p_value_orders"`` (share of random orders with an
        area at least as large, with the +1), ``"distinguishable"``.
    best_vs_rest : dict of name -> dict
        The same paired difference between the order of largest area and each other order.
    random_auc : ndarray of shape (n_random,)
        Area of every random order: the distribution of the random baseline.
    confidence_level : float
    """

    fractions: np.ndarray
    baseline: float
    curves: dict
    auc: dict
    prunable: dict
    threshold: float
    per_input: dict | None = None
    intervals: dict = field(default_factory=dict)
    versus_random: dict = field(default_factory=dict)
    best_vs_rest: dict = field(default_factory=dict)
    random_auc: np.ndarray = field(default_factory=lambda: np.zeros(0))
    confidence_level: float = 0.95

    @property
    def best(self):
        """Name of the order with the largest area (random excluded when others exist)."""
        names = [n for n in self.auc if n != "random"] or list(self.auc)
        return max(names, key=self.auc.get)

    def summary(self):
        """A text table: one row per order, best area first, with intervals when known."""
        level = f"{self.confidence_level:.0%}"
        head = f"{'ranking':<20}{'AUC':>8}{'prunable@' + str(self.threshold):>16}"
        if self.intervals:
            head += f"{level + ' CI of AUC':>22}{'vs random':>11}{'p':>8}"
        lines = [head]
        for name in sorted(self.auc, key=lambda n: -self.auc[n]):
            line = f"{name:<20}{self.auc[name]:>8.4f}{self.prunable[name]:>16.2f}"
            if name in self.intervals:
                ci = self.intervals[name]["auc"]
                line += f"{'[' + f'{ci.low:.4f}, {ci.high:.4f}' + ']':>22}"
                vs = self.versus_random.get(name)
                if vs is not None:
                    line += f"{vs['difference']:>+11.4f}{vs['p_value']:>8.3f}"
            lines.append(line)
        return "\n".join(lines)


def _relative(fractions, threshold):
    """Vectorized area and prunable fraction of mean curves laid out as [baseline, steps]."""
    widths = np.diff(fractions)

    def auc(means):
        rel = means[:, 1:] / means[:, :1]
        return ((rel[:, 1:] + rel[:, :-1]) / 2) @ widths

    def prunable(means):
        rel = means[:, 1:] / means[:, :1]
        below = rel < threshold
        first = np.where(below.any(axis=1), below.argmax(axis=1), -1)
        out = np.where(first == 0, 0.0, fractions[np.maximum(first - 1, 0)])
        return np.where(first < 0, fractions[-1], out)

    return auc, prunable


def _measure(model, order, counts, metric, baseline_values, cache, kind):
    values = []
    for c in counts:
        if c == 0:
            values.append(baseline_values)
            continue
        # the metric depends on the set of masked heads only: orders that reach the same set
        # (every order at fraction 1) share one model run
        key = np.sort(order[:c]).tobytes()
        if key not in cache:
            with mask_heads(model, order[:c], kind=kind):
                cache[key] = _metric_values(metric, model, baseline_values.shape)
        values.append(cache[key])
    return np.stack(values)


def _metric_values(metric, model, shape=None):
    value = metric(model)
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        value = value.detach().cpu().numpy()
    arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    if arr.ndim != 1 or (shape is not None and arr.shape != shape):
        raise ValueError(
            "metric must return a float or a 1-D array of per-input values of one length, "
            f"got shape {np.shape(value)}."
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError("metric returned NaN or infinite values.")
    return arr


def prune_curves(
    model,
    orders,
    metric,
    *,
    fractions=None,
    threshold=0.9,
    n_random=0,
    n_resamples=2000,
    confidence_level=0.95,
    method="bca",
    random_state=0,
    kind=None,
):
    """Mask heads cumulatively in each order and measure a task metric at every step.

    When the metric returns one value per input (sentence, image, batch), every curve, area
    and prunable fraction gets a bootstrap confidence interval over resampled inputs and
    every order a paired comparison with random pruning: the metric is computed once per
    input and step, then resampled (the model is never re-run per resample).

    Parameters
    ----------
    model : transformers model, TransformerLens model, or torch.nn.Module
    orders : mapping of name -> array of flat head ids, or the table of :func:`rank_heads`
        Flat ids are ``layer * n_heads + head``; the first id is removed first.
    metric : callable
        ``metric(model) -> float or array of shape (n_inputs,)``, higher is better, positive
        on average for the unpruned model; called while the heads are masked, once per
        distinct set of masked heads (a deterministic function of that set). Per-input
        values give the intervals and tests.
    fractions : array-like, default=0, 0.1, ..., 1
        Fractions of all heads removed at each step.
    threshold : float, default=0.9
        Level, relative to the unpruned metric, that defines the prunable fraction.
    n_random : int, default=0
        Random orders whose mean curve is the ``"random"`` baseline and whose areas form its
        distribution (``random_auc``). An order already named ``"random"`` (as in the table of
        :func:`rank_heads`) is the first of them. 0 keeps the orders as given.
    n_resamples : int, default=2000
        Bootstrap resamples of the inputs.
    confidence_level : float, default=0.95
    method : {"bca", "percentile"}, default="bca"
        Interval of the areas and differences (the prunable fraction, a step function,
        always uses the percentile interval).
    random_state : int, default=0
        Seed of the random orders, the resamples and the permutation tests.
    kind : {"self", "encoder", "decoder", "cross"}, optional
        The kind of attention whose heads are pruned; required for encoder-decoder models.

    Returns
    -------
    result : PruningResult

    Notes
    -----
    With per-input values ``v[i, t]`` the area is a function of the mean curve,
    ``AUC = trapz(mean_i v[i, t] / mean_i v[i, 0])``; resampling inputs resamples the means
    (:func:`skorg.stats.bootstrap_of_means`). Two orders are compared on the same resampled
    inputs (a paired bootstrap), and tested by a paired permutation test that swaps the two
    orders' curves on random inputs: under "the orders do not differ" each swap is as
    likely as none.
    """
    if isinstance(orders, Mapping) and "orders" in orders:
        orders = orders["orders"]
    if not isinstance(orders, Mapping) or not orders:
        raise ValueError("orders must be a non-empty mapping of name -> head ids.")
    layout = attention_layout(model, kind)
    n_total = layout.n_total
    if fractions is None:
        fractions = np.linspace(0, 1, 11)
    else:
        fractions = np.asarray(fractions)
        if fractions.dtype.kind not in "biuf":
            raise TypeError(f"fractions must hold real numbers, got dtype {fractions.dtype}.")
        fractions = fractions.astype(np.float64)
    if fractions.ndim != 1 or fractions.size < 2 or np.any(np.diff(fractions) <= 0):
        raise ValueError("fractions must be increasing with at least two steps.")
    if fractions[0] < 0 or fractions[-1] > 1:
        raise ValueError("fractions must lie in [0, 1].")
    if (
        isinstance(threshold, (bool, np.bool_))
        or not isinstance(threshold, (int, float, np.integer, np.floating))
        or not 0 < threshold <= 1
    ):
        raise ValueError(f"threshold must be a number in (0, 1], got {threshold!r}.")
    if isinstance(n_random, bool) or not isinstance(n_random, (int, np.integer)) or n_random < 0:
        raise ValueError(f"n_random must be a non-negative integer, got {n_random!r}.")
    # checked here, not only by the bootstrap: a metric of one number has no intervals, and
    # the result stores these settings all the same
    if not isinstance(method, str) or method not in ("bca", "percentile"):
        raise ValueError(f"method must be 'bca' or 'percentile', got {method!r}.")
    if (
        isinstance(confidence_level, (bool, np.bool_))
        or not isinstance(confidence_level, (int, float, np.integer, np.floating))
        or not 0 < confidence_level < 1
    ):
        raise ValueError(f"confidence_level must lie in (0, 1), got {confidence_level!r}.")
    if (
        isinstance(n_resamples, (bool, np.bool_))
        or not isinstance(n_resamples, (int, np.integer))
        or n_resamples < 2
    ):
        raise ValueError(f"n_resamples must be an integer of at least 2, got {n_resamples!r}.")
    checked = {}
    for name, order in orders.items():
        order = np.asarray(order, dtype=np.int64)
        if order.shape != (n_total,) or sorted(order.tolist()) != list(range(n_total)):
            raise ValueError(f"orders[{name!r}] must be a permutation of the {n_total} heads.")
        checked[name] = order
    counts = np.round(fractions * n_total).astype(np.int64)
    baseline_values = _metric_values(metric, model)
    baseline = float(baseline_values.mean())
    if not np.isfinite(baseline) or baseline <= 0:
        raise ValueError(f"the unpruned metric must be positive and finite, got {baseline}.")

    rng = np.random.default_rng(random_state)
    random_orders = []
    if n_random > 0:
        if "random" in checked:
            random_orders.append(checked.pop("random"))
        while len(random_orders) < n_random:
            random_orders.append(rng.permutation(n_total))
    cache = {}
    per_input = {
        name: _measure(model, order, counts, metric, baseline_values, cache, layout.attention)
        for name, order in checked.items()
    }
    random_values = [
        _measure(model, o, counts, metric, baseline_values, cache, layout.attention)
        for o in random_orders
    ]
    if random_values:
        per_input["random"] = np.mean(random_values, axis=0)

    auc_fn, prunable_fn = _relative(fractions, threshold)
    full = lambda v: np.concatenate([[baseline], v.mean(axis=1)])[None]  # noqa: E731
    curves = {name: v.mean(axis=1) for name, v in per_input.items()}
    auc = {name: float(auc_fn(full(v))[0]) for name, v in per_input.items()}
    prunable = {name: float(prunable_fn(full(v))[0]) for name, v in per_input.items()}
    random_auc = np.array([float(auc_fn(full(v))[0]) for v in random_values])
    result = PruningResult(
        fractions,
        baseline,
        curves,
        auc,
        prunable,
        threshold,
        per_input=per_input if baseline_values.size > 1 else None,
        random_auc=random_auc,
        confidence_level=confidence_level,
    )
    if baseline_values.size > 1:
        _add_uncertainty(
            result, baseline_values, n_resamples, confidence_level, method, random_state
        )
    return result


def _add_uncertainty(result, baseline_values, n_resamples, level, method, seed):
    fractions, threshold = result.fractions, result.threshold
    auc_fn, prunable_fn = _relative(fractions, threshold)
    n_steps = fractions.size
    # resampled baselines may only be used as denominators when every input's is positive
    base = baseline_values if np.all(baseline_values > 0) else None
    kwargs = {"n_resamples": n_resamples, "confidence_level": level, "random_state": seed}

    def table(v):
        cols = [base if base is not None else np.full(v.shape[1], result.baseline)]
        return np.column_stack([*cols, v.T])

    for name, v in result.per_input.items():
        T = table(v)
        result.intervals[name] = {
            "auc": bootstrap_of_means(T, lambda m: auc_fn(m), method=method, **kwargs),
            "prunable": bootstrap_of_means(
                T, lambda m: prunable_fn(m), method="percentile", **kwargs
            ),
            "curve": bootstrap_of_means(v.T, method="percentile", **kwargs),
        }

    def compare(a, b):
        Ta, Tb = table(result.per_input[a]), table(result.per_input[b])
        both = np.column_stack([Ta, Tb[:, 1:]])

        def diff(m):
            return auc_fn(m[:, : n_steps + 1]) - auc_fn(
                np.column_stack([m[:, :1], m[:, n_steps + 1 :]])
            )

        ci = bootstrap_of_means(both, diff, method=method, **kwargs)
        # per-input area difference (a positive multiple of the area difference of the means)
        widths = np.diff(fractions)
        d = result.per_input[a] - result.per_input[b]
        per = ((d[1:] + d[:-1]) / 2).T @ widths
        _, p = permutation_test_paired(per, n_resamples=9999, random_state=seed)
        return {
            "difference": ci.estimate,
            "low": ci.low,
            "high": ci.high,
            "p_value": p,
            "distinguishable": not bool(ci.contains(0.0)),
        }

    if "random" in result.per_input:
        for name in result.per_input:
            if name == "random":
                continue
            out = compare(name, "random")
            if result.random_auc.size:
                out["p_value_orders"] = permutation_p_value(
                    result.auc[name], result.random_auc, alternative="greater"
                )
            result.versus_random[name] = out
    best = result.best
    for name in result.per_input:
        if name != best:
            result.best_vs_rest[name] = compare(best, name)
