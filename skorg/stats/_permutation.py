"""Permutation tests: paired (sign flips) and two-sample (label shuffles), p-values with +1."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._bootstrap import (
    BootstrapResult,
    _check_common,
    _check_values,
    bootstrap_of_means,
    real_array,
    row_blocks,
)

__all__ = [
    "PairedComparison",
    "compare_samples",
    "effect_size",
    "paired_comparison",
    "permutation_p_value",
    "permutation_test_paired",
    "permutation_test_two_sample",
]

_ALTERNATIVES = ("two-sided", "greater", "less")


def permutation_p_value(observed, null, *, alternative="two-sided"):
    """P-value of ``observed`` against draws of the statistic under the null, with the +1.

    ``p = (1 + #{null at least as extreme}) / (1 + n_null)``: the observed value counts as
    one of the draws, so the test is exact (never below its level) and p is never 0
    (Phipson and Smyth, 2010). Two-sided compares absolute values (a null centred at 0).

    Examples
    --------
    >>> from skorg.stats import permutation_p_value
    >>> permutation_p_value(3.0, [0.5, -1.0, 4.0, 2.0], alternative="greater")
    0.4
    """
    _check_alternative(alternative)
    observed = real_array(observed, "observed")
    if observed.ndim != 0:
        raise ValueError(f"observed must be one number, got shape {observed.shape}.")
    observed = float(observed)
    null = real_array(null, "null").reshape(-1)
    if null.size == 0:
        raise ValueError("null holds no draws.")
    # a relative tolerance, so that draws equal to the observed value up to rounding count
    tol = 1e-12 * max(abs(float(observed)), float(np.max(np.abs(null))), 1e-300)
    if alternative == "greater":
        hits = np.sum(null >= observed - tol)
    elif alternative == "less":
        hits = np.sum(null <= observed + tol)
    else:
        hits = np.sum(np.abs(null) >= abs(observed) - tol)
    return float((1 + hits) / (1 + null.size))


def _mean(x):
    """``x.mean()``, the same bits, through a power of two: finite for values near 1e308."""
    top = float(np.max(np.abs(x)))
    if not 0 < top < np.inf:
        return float(x.mean())
    p2 = np.ldexp(1.0, np.frexp(top)[1] - 1)
    return float((x / p2).mean() * p2)


def _check_alternative(alternative):
    if not isinstance(alternative, str) or alternative not in _ALTERNATIVES:
        raise ValueError(f"alternative must be one of {_ALTERNATIVES}, got {alternative!r}.")


def _check_resamples(n_resamples):
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)):
        raise TypeError(f"n_resamples must be an integer, got {type(n_resamples).__name__}.")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}.")


def _sign_flip_null(d, n_resamples, random_state):
    """Mean of d under random sign flips: exact enumeration when it is small enough."""
    n = d.size
    if 2**n <= n_resamples:
        # every sign pattern once (the identity included: an exact test)
        signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
        return (signs @ d) / n, True
    rng = np.random.default_rng(random_state)
    null = np.empty(n_resamples)
    # in blocks within the memory budget; each draw's sum on its own row (block-independent)
    for start, stop in row_blocks(n_resamples, 24 * n, "a block of sign flips"):
        signs = rng.integers(0, 2, size=(stop - start, n)) * 2 - 1
        null[start:stop] = np.add.reduce(signs * d, axis=1)
    return null / n, False


def permutation_test_paired(
    a, b=None, *, n_resamples=9999, alternative="two-sided", random_state=0
):
    """Paired permutation test of a zero mean difference (random sign flips of a - b).

    Parameters
    ----------
    a : array-like of shape (n,)
        Values under the first condition (or the differences themselves when ``b`` is None).
    b : array-like of shape (n,), optional
        Values under the second condition on the same inputs.
    n_resamples : int, default=9999
        Random sign patterns; when ``2 ** n <= n_resamples`` all of them are enumerated and
        the p-value is exact.
    alternative : {"two-sided", "greater", "less"}
        "greater": the mean of ``a - b`` is larger than 0 under the alternative.
    random_state : int, Generator or None, default=0

    Returns
    -------
    statistic : float
        Mean difference.
    p_value : float
        With the +1 correction of :func:`permutation_p_value` (for the enumerated test, the
        identity pattern is one of the draws and no +1 is added).

    Examples
    --------
    >>> from skorg.stats import permutation_test_paired
    >>> stat, p = permutation_test_paired([1.0, 2.0, 3.0], [0.0, 0.0, 0.0], alternative="greater")
    >>> stat, p
    (2.0, 0.125)
    """
    _check_resamples(n_resamples)
    _check_alternative(alternative)
    d = _paired_differences(a, b)
    scale = np.max(np.abs(d))
    z = d / scale if scale > 0 else d  # units do not matter
    observed = float(z.mean())
    null, exact = _sign_flip_null(z, n_resamples, random_state)
    if exact:
        p = _exact_p(observed, null, alternative)
    else:
        p = permutation_p_value(observed, null, alternative=alternative)
    return _mean(d), p


def _exact_p(observed, null, alternative):
    tol = 1e-12 * max(abs(observed), float(np.max(np.abs(null))), 1e-300)
    if alternative == "greater":
        return float(np.mean(null >= observed - tol))
    if alternative == "less":
        return float(np.mean(null <= observed + tol))
    return float(np.mean(np.abs(null) >= abs(observed) - tol))


def _paired_differences(a, b):
    a = _check_values(a, "a")
    if b is None:
        d = a
    else:
        b = _check_values(b, "b")
        if a.shape != b.shape:
            raise ValueError(f"a and b must have the same shape, got {a.shape} and {b.shape}.")
        d = a - b
    if d.ndim != 1:
        raise ValueError(f"paired values must be 1-D, got shape {d.shape}.")
    return d


def permutation_test_two_sample(a, b, *, n_resamples=9999, alternative="two-sided", random_state=0):
    """Two-sample permutation test of equal means (shuffled group labels).

    Parameters
    ----------
    a : array-like of shape (n_a,)
    b : array-like of shape (n_b,)
    n_resamples : int, default=9999
    alternative : {"two-sided", "greater", "less"}
        "greater": ``mean(a) > mean(b)`` under the alternative.
    random_state : int, Generator or None, default=0

    Returns
    -------
    statistic : float
        ``mean(a) - mean(b)``.
    p_value : float
        With the +1 correction.

    Examples
    --------
    >>> from skorg.stats import permutation_test_two_sample
    >>> stat, p = permutation_test_two_sample([5.0, 6.0, 7.0], [1.0, 2.0, 3.0])
    >>> stat, p < 0.2
    (4.0, True)
    """
    _check_resamples(n_resamples)
    _check_alternative(alternative)
    a = _check_values(a, "a").reshape(-1)
    b = _check_values(b, "b").reshape(-1)
    pooled = np.concatenate([a, b])
    scale = np.max(np.abs(pooled))
    z = pooled / scale if scale > 0 else pooled
    na, n_all = a.size, pooled.size
    observed = float(z[:na].mean() - z[na:].mean())
    rng = np.random.default_rng(random_state)
    null = np.empty(n_resamples)
    # in blocks within the memory budget; each shuffle reduced on its own row
    for start, stop in row_blocks(n_resamples, 24 * n_all, "a block of label shuffles"):
        labels = np.broadcast_to(np.arange(n_all), (stop - start, n_all))
        shuffled = z[rng.permuted(labels, axis=1)]
        null[start:stop] = shuffled[:, :na].mean(axis=1) - shuffled[:, na:].mean(axis=1)
    p = permutation_p_value(observed, null, alternative=alternative)
    return _mean(a) - _mean(b), p


@dataclass(frozen=True)
class PairedComparison:
    """Mean paired difference with its bootstrap interval, a permutation p-value and effect size.

    Attributes
    ----------
    difference : BootstrapResult
        Mean of ``a - b`` with its interval.
    p_value : float
        Paired permutation test (two-sided unless stated otherwise).
    effect_size : float
        Standardized mean difference of the pairs, ``mean(d) / std(d)`` (Cohen's d_z; 0 when
        every difference is 0, infinite in sign when they are all equal and non-zero).
    n : int
    alternative : str
    """

    difference: BootstrapResult
    p_value: float
    effect_size: float
    n: int
    alternative: str

    @property
    def distinguishable(self):
        """Whether the interval of the difference excludes 0."""
        return not bool(self.difference.contains(0.0))

    def to_dict(self):
        d = self.difference.to_dict()
        return {
            "difference": d["estimate"],
            "low": d["low"],
            "high": d["high"],
            "confidence_level": d["confidence_level"],
            "p_value": self.p_value,
            "effect_size": self.effect_size,
            "n": self.n,
            "alternative": self.alternative,
        }


def paired_comparison(
    a,
    b=None,
    *,
    n_resamples=2000,
    confidence_level=0.95,
    method="bca",
    alternative="two-sided",
    random_state=0,
):
    """Paired difference of two conditions on the same inputs: interval, p-value, effect size.

    Parameters
    ----------
    a, b : array-like of shape (n,)
        The two conditions on the same inputs (``b`` None: ``a`` holds the differences).
    n_resamples : int, default=2000
        Bootstrap resamples; the permutation test uses ``max(n_resamples, 9999)`` sign
        patterns (or all of them when fewer).
    confidence_level, method
        As in :func:`skorg.stats.bootstrap_ci`.
    alternative : {"two-sided", "greater", "less"}
    random_state : int, default=0

    Returns
    -------
    result : PairedComparison

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.stats import paired_comparison
    >>> a = np.arange(10.0) + 1.0
    >>> out = paired_comparison(a, a - 1.0)
    >>> float(out.difference.estimate), out.p_value < 0.01
    (1.0, True)
    """
    d = _paired_differences(a, b)
    boot = bootstrap_of_means(
        d,
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        method=method,
        random_state=random_state,
    )
    _, p = permutation_test_paired(
        d, n_resamples=max(n_resamples, 9999), alternative=alternative, random_state=random_state
    )
    return PairedComparison(boot, p, effect_size(d), int(d.size), alternative)


def effect_size(d):
    """Cohen's d_z of paired differences: ``mean(d) / std(d, ddof=1)``.

    0 when every difference is 0, infinite in sign when they are all equal and non-zero.

    Examples
    --------
    >>> from skorg.stats import effect_size
    >>> round(effect_size([1.0, 2.0, 3.0]), 12)  # mean 2, standard deviation 1
    2.0
    """
    d = real_array(d, "d").reshape(-1)
    if d.size < 2:
        raise ValueError(
            f"d holds {d.size} difference(s); effect_size needs at least two (a standard "
            "deviation)."
        )
    scale = np.max(np.abs(d))
    if scale == 0:
        return 0.0
    z = d / scale
    sd = z.std(ddof=1) if z.size > 1 else 0.0
    m = z.mean()
    if sd <= 1e-14 * abs(m):
        return float(np.sign(m) * np.inf)
    return float(m / sd)


def compare_samples(a, b, *, paired=None, n_resamples=2000, confidence_level=0.95, random_state=0):
    """Compare two sets of values: mean difference, interval, permutation p-value, effect size.

    Parameters
    ----------
    a, b : array-like of shape (n_a,), (n_b,)
    paired : bool, optional
        Whether ``a[i]`` and ``b[i]`` come from the same input (paired sign-flip test and a
        bootstrap of the differences); default: True when the lengths agree.
    n_resamples : int, default=2000
        Bootstrap resamples; the permutation tests use ``max(n_resamples, 9999)`` draws.
    confidence_level : float, default=0.95
    random_state : int, default=0

    Returns
    -------
    result : dict
        ``"difference"`` (mean a - mean b), ``"fraction_a_lower"`` (share of the first
        ``min(n_a, n_b)`` pairs with a < b), ``"paired"``, ``"interval_a"``, ``"interval_b"``,
        ``"interval_difference"`` (dicts with ``estimate``, ``low``, ``high``; None with too
        few values), ``"p_value"``, ``"effect_size"`` (d_z paired, pooled-sd Cohen's d
        otherwise), ``"distinguishable"`` (the interval of the difference excludes 0),
        ``"confidence_level"``.

    Examples
    --------
    >>> from skorg.stats import compare_samples
    >>> out = compare_samples([1.0, 2.0, 3.0, 4.0], [2.0, 3.0, 4.0, 5.0])
    >>> out["difference"], out["paired"], out["effect_size"]
    (-1.0, True, -inf)
    """
    _check_common(n_resamples, confidence_level, "bca")
    a = real_array(a, "a").reshape(-1)
    b = real_array(b, "b").reshape(-1)
    if a.size == 0 or b.size == 0:
        raise ValueError("both samples (a and b) need at least one value.")
    if paired is not None and not isinstance(paired, (bool, np.bool_)):
        raise TypeError(f"paired must be True, False or None, got {paired!r}.")
    paired = (a.size == b.size) if paired is None else bool(paired)
    if paired and a.size != b.size:
        raise ValueError(
            f"paired=True needs as many values in both samples, got {a.size} and {b.size}."
        )
    n = min(a.size, b.size)
    out = {
        "difference": _mean(a) - _mean(b),
        "fraction_a_lower": float(np.mean(a[:n] < b[:n])),
        "paired": paired,
        "interval_a": None,
        "interval_b": None,
        "interval_difference": None,
        "p_value": None,
        "effect_size": None,
        "distinguishable": None,
        "confidence_level": confidence_level,
    }
    opts = {
        "n_resamples": n_resamples,
        "confidence_level": confidence_level,
        "random_state": random_state,
    }
    n_perm = max(n_resamples, 9999)
    if a.size > 1:
        out["interval_a"] = bootstrap_of_means(a, **opts).to_dict()
    if b.size > 1:
        out["interval_b"] = bootstrap_of_means(b, **opts).to_dict()
    if paired and a.size > 1:
        d = a - b
        ci = bootstrap_of_means(d, **opts)
        out["interval_difference"] = ci.to_dict()
        out["p_value"] = permutation_test_paired(d, n_resamples=n_perm, random_state=random_state)[
            1
        ]
        out["effect_size"] = effect_size(d)
        out["distinguishable"] = not bool(ci.contains(0.0))
    elif not paired and a.size > 1 and b.size > 1:
        # independent resamples of each sample give the interval of the difference of means
        ca = bootstrap_of_means(a, method="percentile", **opts)
        seed_b = (
            None if random_state is None else np.random.default_rng(random_state).integers(2**32)
        )
        cb = bootstrap_of_means(b, method="percentile", **{**opts, "random_state": seed_b})
        alpha = (1 - confidence_level) / 2
        low, high = np.quantile(ca.distribution - cb.distribution, [alpha, 1 - alpha])
        out["interval_difference"] = {
            "estimate": out["difference"],
            "low": float(low),
            "high": float(high),
            "confidence_level": confidence_level,
            "method": "percentile",
        }
        out["p_value"] = permutation_test_two_sample(
            a, b, n_resamples=n_perm, random_state=random_state
        )[1]
        # Cohen's d in units of the largest magnitude: the same for data of any scale
        scale = max(np.max(np.abs(a)), np.max(np.abs(b)))
        za, zb = (a / scale, b / scale) if scale > 0 else (a, b)
        pooled = np.sqrt(
            ((za.size - 1) * za.var(ddof=1) + (zb.size - 1) * zb.var(ddof=1))
            / (za.size + zb.size - 2)
        )
        diff = float(za.mean() - zb.mean())
        if pooled > 0:
            out["effect_size"] = float(diff / pooled)
        else:
            out["effect_size"] = 0.0 if diff == 0 else float(np.sign(diff) * np.inf)
        out["distinguishable"] = not (low <= 0 <= high)
    return out
