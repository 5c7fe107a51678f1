"""Sensitivity of the conclusions to the thresholds the paper fixed."""

from __future__ import annotations

import numpy as np

__all__ = ["sensitivity_sweep"]


def _top_mask(score, m):
    mask = np.zeros(score.size, dtype=bool)
    mask[np.argsort(score, kind="stable")[-m:]] = True
    return mask


def _is_real(x):
    return not isinstance(x, (bool, np.bool_)) and isinstance(
        x, (int, float, np.integer, np.floating)
    )


def _reals(values, name):
    if isinstance(values, (str, bytes)) or not np.iterable(values):
        raise TypeError(f"{name} must be a sequence of numbers, got {values!r}.")
    values = list(values)
    if not values:
        raise ValueError(f"{name} must hold at least one value.")
    for v in values:
        if not _is_real(v):
            raise TypeError(f"{name} must hold real numbers, got {v!r}.")
    return values


def _integers(values, name, minimum):
    values = _reals(values, name)
    for v in values:
        if not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must hold integers, got {v!r}.")
        if v < minimum:
            raise ValueError(f"{name} must hold integers of at least {minimum}, got {v}.")
    return [int(v) for v in values]


def _fractions(values, name):
    for v in _reals(values, name):
        if not 0 < v <= 0.5:
            raise ValueError(f"{name} must lie in (0, 0.5], got {v!r}.")


def sensitivity_sweep(
    maps,
    trees,
    *,
    ks=(100, 200, 400, 800),
    fractions=(0.05, 0.1, 0.2),
    batch_counts=None,
    survey=None,
    tolerances=(0.01, 0.05, 0.1, 0.2, 0.5),
    default_k=400,
    default_fraction=0.1,
    default_scores=None,
    stability=None,
    n_resamples=1000,
    random_state=0,
):
    """How the head ranking, its stability and the Eq. 18 verdict move with their thresholds.

    Parameters
    ----------
    maps : AttentionMaps
    trees : sequence of (query tree, key tree)
        One pair per sample of ``maps`` (e.g. the first two trees of the organizer fitted on
        each sample's :func:`network_tensor`).
    ks : sequence of int, default=(100, 200, 400, 800)
        Support sizes of the bi-Haar entropy (``selection="support"``).
    fractions : sequence of float, default=(0.05, 0.1, 0.2)
        Sizes of the top and bottom sets of the stability test.
    batch_counts : sequence of int, optional
        Numbers of inputs (the first ones) for the stability test; default: 2, 4, 8, ... up
        to the number of samples.
    survey : dict, optional
        From :func:`softmax_invariance_survey`: adds the share of heads within each of
        ``tolerances`` for every variant.
    tolerances : sequence of float
    default_k, default_fraction : the settings the other rows are compared with
    default_scores : ndarray of shape (n_samples, n_heads), optional
        :func:`head_sparsity` at ``default_k`` if already computed (not recomputed then).
    stability : dict, optional
        :func:`ranking_stability` of ``default_scores`` at ``default_fraction`` if already
        computed: the rows of those settings (``fraction`` at ``default_fraction``,
        ``n_batches`` at all samples) report its numbers, so that one test has one p-value
        wherever it is printed. The other rows come from :func:`ranking_stability` too, with
        ``n_resamples`` null draws (give the same as for ``stability``).
    n_resamples : int, default=1000
        Null draws of the stability tests and bootstrap resamples of the shares.
    random_state : int, default=0

    Returns
    -------
    rows : list of dict
        One row per setting: ``parameter`` (``"k"``, ``"fraction"``, ``"n_batches"``,
        ``"tolerance"``), ``value`` and what it changes: for ``k`` the Spearman correlation of
        the mean scores with those at ``default_k`` and the Jaccard overlap of the pruned
        first 10%; for ``fraction`` and ``n_batches`` the top and bottom stability against
        random rankings (overlap, null expectation, p-value); for ``tolerance`` the share of
        heads within it per variant, with a bootstrap interval over heads.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.attention import AttentionMaps, sensitivity_sweep
    >>> from skorg.trees import dyadic_tree
    >>> p = np.random.default_rng(0).dirichlet(np.ones(8), size=(3, 1, 10, 8))
    >>> maps = AttentionMaps.from_array(p)
    >>> trees = [(dyadic_tree(8), dyadic_tree(8))] * 3
    >>> rows = sensitivity_sweep(maps, trees, ks=(16, 64), default_k=64, n_resamples=200)
    >>> sorted({r["parameter"] for r in rows})
    ['fraction', 'k', 'n_batches']
    """
    from scipy.stats import spearmanr

    from skorg.stats import bootstrap_of_means, mean_pairwise_jaccard

    from ._rank import head_sparsity, ranking_stability
    from ._windowed import per_input

    per_input(maps, "sensitivity_sweep")
    trees = list(trees)
    if len(trees) != maps.n_samples:
        raise ValueError(
            f"trees must hold one pair per sample ({maps.n_samples}), got {len(trees)}."
        )
    ks = sorted(set(_integers(ks, "ks", 1)) | set(_integers([default_k], "default_k", 1)))
    default_k = int(default_k)
    _fractions(fractions, "fractions")
    _fractions([default_fraction], "default_fraction")
    if not _is_real(default_fraction):
        raise TypeError(f"default_fraction must be a number, got {default_fraction!r}.")
    if survey is not None:
        for tol in _reals(tolerances, "tolerances"):
            if not (np.isfinite(tol) and tol >= 0):
                raise ValueError(f"tolerances must be finite and non-negative, got {tol!r}.")
    n_total = maps.probs.shape[1] * maps.probs.shape[2]
    scores = {}
    if default_scores is not None:
        given = np.asarray(default_scores)
        if given.dtype.kind not in "biuf":
            raise TypeError(f"default_scores must hold real numbers, got dtype {given.dtype}.")
        given = given.astype(np.float64)
        if given.shape != (maps.n_samples, n_total) or not np.all(np.isfinite(given)):
            raise ValueError(
                f"default_scores must be finite, of shape (n_samples, n_heads) = "
                f"{(maps.n_samples, n_total)}, got shape {given.shape}."
            )
        scores[default_k] = given  # as given (the report's own scores), not recomputed

    def replay():
        # head_sparsity asks for the trees of the samples in order: hand back the given ones
        it = iter(trees)
        return lambda X: next(it)

    for k in ks:
        if k not in scores:
            scores[k] = head_sparsity(maps, organize=replay(), selection="support", k=k)
    base = scores[default_k]
    n_samples, n_heads = base.shape
    m = max(1, int(np.ceil(default_fraction * n_heads - 1e-9)))
    rows = []
    first = _top_mask(-base.mean(axis=0), m)  # pruned first: the lowest sparsity scores
    for k in ks:
        mean = scores[k].mean(axis=0)
        rho = spearmanr(mean, base.mean(axis=0)).statistic if np.ptp(mean) > 0 else np.nan
        rows.append(
            {
                "parameter": "k",
                "value": k,
                "spearman_vs_default": float(rho),
                "pruned_first_jaccard_vs_default": mean_pairwise_jaccard(
                    np.stack([first, _top_mask(-mean, m)])
                ),
            }
        )

    def stability_of(S, fraction):
        # the report's stability test itself (same sets, ties and null draws); at the
        # default settings the given result, computed once
        if stability is not None and fraction == default_fraction and len(S) == n_samples:
            result = stability
        else:
            result = ranking_stability(
                S, fraction=fraction, n_resamples=n_resamples, random_state=random_state
            )
        out = {}
        for end in ("top", "bottom"):
            t = result[f"{end}_null"]
            out.update(
                {
                    f"{end}_overlap": t["overlap"],
                    f"{end}_null_mean": t["overlap_null_mean"],
                    f"{end}_p_value": t["overlap_p_value"],
                }
            )
        return out

    if n_samples >= 2:
        for fraction in fractions:
            rows.append(
                {"parameter": "fraction", "value": float(fraction), **stability_of(base, fraction)}
            )
        if batch_counts is None:
            batch_counts = [b for b in (2, 4, 8, 16, 32, 64) if b < n_samples] + [n_samples]
        for b in _integers(batch_counts, "batch_counts", 2):
            if not 2 <= b <= n_samples:
                raise ValueError(f"batch_counts must lie in [2, {n_samples}], got {b}.")
            row = {"parameter": "n_batches", "value": int(b)}
            rows.append({**row, **stability_of(base[:b], default_fraction)})
    if survey is not None:
        variants = list(dict.fromkeys(r["variant"] for r in survey["heads"]))
        for tol in tolerances:
            row = {"parameter": "tolerance", "value": float(tol)}
            for v in variants:
                err = np.array([r["rel_error"] for r in survey["heads"] if r["variant"] == v])
                within = (err <= tol).astype(float)
                row[f"{v}_share"] = float(within.mean())
                if within.size > 1:
                    ci = bootstrap_of_means(
                        within, n_resamples=n_resamples, method="percentile",
                        random_state=random_state,
                    )  # fmt: skip
                    row[f"{v}_low"], row[f"{v}_high"] = ci.low, ci.high
            rows.append(row)
    return rows
