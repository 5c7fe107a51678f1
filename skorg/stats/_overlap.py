"""Overlap of top sets across batches against random sets of the same size."""

from __future__ import annotations

import numpy as np

from .._validation import check_memory
from ._permutation import permutation_p_value

__all__ = ["jaccard_null", "mean_pairwise_jaccard", "top_set_overlap_test"]


def jaccard_null(n_items, set_size):
    """Exact distribution of the Jaccard index of two independent random sets of one size.

    Two sets of ``m`` items drawn uniformly without replacement from ``n`` share ``K`` items,
    with ``K`` hypergeometric (population ``n``, ``m`` successes, ``m`` draws); their Jaccard
    index is ``K / (2 m - K)``. The probabilities come from the ratio of consecutive terms,
    ``P(K = k + 1) / P(K = k) = (m - k)^2 / ((k + 1) (n - 2 m + k + 1))``, summed in logs and
    normalized: ``O(m)`` work whatever ``n`` (``n = 10**12`` costs what ``n = 100`` does).

    Parameters
    ----------
    n_items : int
    set_size : int
        ``1 <= set_size <= n_items``.

    Returns
    -------
    null : dict
        ``"values"``: the possible Jaccard indices (increasing), ``"pmf"``: their
        probabilities, ``"expectation"``: the mean, ``"shared"``: the matching counts ``K``.

    Examples
    --------
    >>> from skorg.stats import jaccard_null
    >>> null = jaccard_null(4, 2)
    >>> null["values"].tolist(), null["pmf"].round(4).tolist()
    ([0.0, 0.3333333333333333, 1.0], [0.1667, 0.6667, 0.1667])
    """
    n, m = _check_sizes(n_items, set_size)
    low = max(0, 2 * m - n)
    check_memory(40 * (m - low + 1), "the Jaccard null's support")
    k = np.arange(low, m + 1)
    # log P(k + 1) - log P(k), exact in integers up to the logs (float64 holds n - 2m + k + 1
    # to 2**53; beyond it the relative error of a term is below 1e-16 all the same)
    kk = k[:-1].astype(np.float64)
    steps = 2.0 * np.log(float(m) - kk) - np.log(kk + 1.0) - np.log(float(n - 2 * m) + kk + 1.0)
    log_w = np.concatenate([[0.0], np.cumsum(steps)])
    w = np.exp(log_w - log_w.max())
    pmf = w / w.sum()
    values = k / (2 * m - k)
    return {"values": values, "pmf": pmf, "expectation": float(values @ pmf), "shared": k}


def _check_sizes(n_items, set_size):
    for name, v in (("n_items", n_items), ("set_size", set_size)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must be an integer, got {type(v).__name__}.")
    if not 1 <= set_size <= n_items:
        raise ValueError(f"set_size must lie in [1, n_items={n_items}], got {set_size}.")
    return int(n_items), int(set_size)


def mean_pairwise_jaccard(masks):
    """Mean Jaccard index over all pairs of rows of boolean set masks.

    Parameters
    ----------
    masks : array-like of bool, shape (n_sets, n_items) or (n_draws, n_sets, n_items)

    Returns
    -------
    value : float or ndarray of shape (n_draws,)
        Pairs whose union is empty count as 1 (two empty sets are the same set).
    """
    M = np.asarray(masks)
    if M.ndim not in (2, 3):
        raise ValueError(
            f"masks must have shape (n_sets, n_items) or (n_draws, n_sets, n_items), got {M.shape}."
        )
    if M.dtype != bool:
        if np.iscomplexobj(M) or not np.issubdtype(M.dtype, np.number):
            raise TypeError(f"masks must be boolean (or 0/1 numbers), got dtype {M.dtype}.")
        if not np.all((M == 0) | (M == 1)):
            raise ValueError("masks must hold booleans or the numbers 0 and 1 only (no NaN).")
        M = M.astype(bool)
    single = M.ndim == 2
    M = M[None] if single else M
    if M.shape[1] < 2:
        raise ValueError(f"masks must hold at least two sets to compare, got shape {M.shape}.")
    F = M.astype(np.float64)
    inter = np.einsum("rbi,rci->rbc", F, F)
    sizes = F.sum(axis=2)
    union = sizes[:, :, None] + sizes[:, None, :] - inter
    iu = np.triu_indices(M.shape[1], 1)
    inter, union = inter[:, iu[0], iu[1]], union[:, iu[0], iu[1]]
    jac = np.where(union > 0, inter / np.where(union > 0, union, 1.0), 1.0)
    out = jac.mean(axis=1)
    return float(out[0]) if single else out


def _random_masks(rng, n_draws, n_sets, n_items, m):
    keys = rng.random((n_draws, n_sets, n_items))
    picks = np.argpartition(keys, m - 1, axis=2)[:, :, :m]
    masks = np.zeros((n_draws, n_sets, n_items), dtype=bool)
    np.put_along_axis(masks, picks, True, axis=2)
    return masks


def top_set_overlap_test(masks, *, n_resamples=2000, random_state=0):
    """Test whether the same items fall in a set more often than sets drawn at random.

    The observed sets (one per batch, all of one size ``m``) are compared with ``n_resamples``
    draws of as many independent uniformly random ``m``-sets of the same items: the null of
    a ranking with no stable preference.

    Parameters
    ----------
    masks : array-like of bool, shape (n_sets, n_items)
        Row ``b``: the items in the set of batch ``b``; every row holds ``m >= 1`` items.
    n_resamples : int, default=2000
    random_state : int, Generator or None, default=0

    Returns
    -------
    result : dict
        ``"overlap"``: observed mean pairwise Jaccard; ``"overlap_null_mean"``: its exact
        expectation under the null (:func:`jaccard_null`); ``"overlap_null_quantiles"``:
        2.5%, 50%, 97.5% of the simulated null; ``"overlap_p_value"``: share of null draws at
        least as large (with the +1); ``"always"``: observed count of items in every set;
        ``"always_null_mean"``: exact expectation ``n (m / n) ** n_sets``;
        ``"always_p_value"``; ``"n_resamples"``.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.stats import top_set_overlap_test
    >>> masks = np.zeros((5, 20), dtype=bool); masks[:, :2] = True  # same 2 items every time
    >>> out = top_set_overlap_test(masks, n_resamples=999)
    >>> out["overlap"], out["always"], out["overlap_p_value"]
    (1.0, 2, 0.001)
    """
    M = np.asarray(masks)
    if M.ndim != 2 or M.shape[0] < 2 or M.shape[1] < 1:
        raise ValueError(f"masks must have shape (n_sets >= 2, n_items), got {M.shape}.")
    if M.dtype != bool:
        raise TypeError(f"masks must be boolean, got dtype {M.dtype}.")
    sizes = M.sum(axis=1)
    if sizes.min() != sizes.max() or sizes[0] < 1:
        raise ValueError("every set must hold the same number (at least 1) of items.")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)):
        raise TypeError("n_resamples must be an integer.")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}.")
    n_sets, n_items = M.shape
    m = int(sizes[0])
    observed = mean_pairwise_jaccard(M)
    always = int(M.all(axis=0).sum())
    rng = np.random.default_rng(random_state)
    # chunks keep the draws within a few tens of MB whatever the number of batches
    chunk = max(1, int(4e6 // (n_sets * max(n_items, n_sets))))
    null_overlap, null_always = [], []
    for start in range(0, n_resamples, chunk):
        draws = _random_masks(rng, min(chunk, n_resamples - start), n_sets, n_items, m)
        null_overlap.append(mean_pairwise_jaccard(draws))
        null_always.append(draws.all(axis=1).sum(axis=1))
    null_overlap = np.concatenate(null_overlap)
    null_always = np.concatenate(null_always)
    return {
        "overlap": observed,
        "overlap_null_mean": jaccard_null(n_items, m)["expectation"],
        "overlap_null_quantiles": np.quantile(null_overlap, [0.025, 0.5, 0.975]),
        "overlap_p_value": permutation_p_value(observed, null_overlap, alternative="greater"),
        "always": always,
        "always_null_mean": float(n_items * (m / n_items) ** n_sets),
        "always_p_value": permutation_p_value(always, null_always, alternative="greater"),
        "n_resamples": int(n_resamples),
    }
