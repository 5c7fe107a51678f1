"""The softmax-invariance verdict (the paper's Eq. 18) over every head of a model."""

from __future__ import annotations

import numpy as np

__all__ = ["softmax_invariance_survey"]

_VARIANTS = ("exact", "softmax", "softmax_exp", "softmax_collapsed")


def _derivative_sizes(f, row_tree, column_tree):
    """Largest softmax A' and A'' (diagonal) at the block averages of every scale pair."""
    from skorg.transforms import tensor_average

    f = f - f.max(axis=1, keepdims=True)  # the check analyses row-shifted logits too
    first = second = 0.0
    for j in range(column_tree.n_levels + 1):
        for jp in range(row_tree.n_levels + 1):
            u = tensor_average(f, j, jp, row_tree=row_tree, column_tree=column_tree)
            e = np.exp(u - u.max(axis=1, keepdims=True))
            s = e / e.sum(axis=1, keepdims=True)
            first = max(first, float(np.max(s * (1 - s))))
            second = max(second, float(np.max(np.abs(s * (1 - s) * (1 - 2 * s)))))
    return first, second


def _is_real(x):
    return not isinstance(x, (bool, np.bool_)) and isinstance(
        x, (int, float, np.integer, np.floating)
    )


def _head_ids(heads, n_heads):
    """Flat head ids: distinct integers in [0, n_heads) (floats, bools and [] refused)."""
    if isinstance(heads, (str, bytes)) or not np.iterable(heads):
        raise TypeError(f"heads must be a sequence of flat head ids (int), got {heads!r}.")
    ids = list(heads)
    if not ids:
        raise ValueError("heads is empty: give at least one flat head id, or None for all.")
    for h in ids:
        if isinstance(h, (bool, np.bool_)) or not isinstance(h, (int, np.integer)):
            raise TypeError(f"heads must hold integer flat head ids, got {h!r}.")
        if not 0 <= h < n_heads:
            raise ValueError(f"heads: head {h} is not in [0, {n_heads}).")
    if len(set(ids)) != len(ids):
        raise ValueError(f"heads holds a head more than once: {ids}.")
    return [int(h) for h in ids]


def softmax_invariance_survey(
    maps,
    trees=None,
    *,
    sample=0,
    heads=None,
    tolerance=0.1,
    n_resamples=2000,
    confidence_level=0.95,
    random_state=0,
):
    """The Eq. 18 check on every head of one input: the distribution of each variant's error.

    For every head, :func:`skorg.transforms.softmax_invariance_check` compares softmax of the
    head's logits with its paraproduct expansions (exact telescoping, the true softmax
    derivatives, the paper's ``A' = A'' = exp`` and the collapsed Eq. 18 ``A' = A'' = 1``);
    the survey reports, per variant, the median and quartiles of the relative error over
    heads and the share of heads within ``tolerance`` of softmax (with a bootstrap interval
    over heads), and beside them the true sizes of ``A'`` and ``A''`` at the block averages,
    which the collapsed form sets to 1.

    Parameters
    ----------
    maps : AttentionMaps
        With logits (``extract_attention(..., logits=True)``, the default).
    trees : sequence of 2 PartitionTree, optional
        Query and key trees on the input's real tokens (e.g. the first two trees of an
        organizer fitted on :func:`network_tensor`); default: dyadic trees on the token order.
    sample : int, default=0
    heads : sequence of int, optional
        Distinct flat head ids (``layer * n_heads + head``), at least one; default: every
        head.
    tolerance : float, default=0.1
        A variant "holds" on a head when its relative error is at most this.
    n_resamples, confidence_level, random_state
        Bootstrap over heads of the share within tolerance.

    Returns
    -------
    survey : dict
        ``"heads"``: one row per head and variant (``head``, ``variant``, ``rel_error``,
        ``a1_max`` (largest true ``|A'|``, at most 1/4), ``a2_max`` (largest true diagonal
        ``|A''|``, at most ``1 / (6 sqrt 3)``)); ``"summary"``: one row per variant
        (``median``, ``q1``, ``q3``, ``share_within``, ``share_low``, ``share_high``,
        ``a1_median``, ``a2_median``); ``"tolerance"``, ``"n_heads"``.

    Notes
    -----
    For a softmax row ``s``, ``ds_i / du_i = s_i (1 - s_i) <= 1/4`` and
    ``d^2 s_i / du_i^2 = s_i (1 - s_i) (1 - 2 s_i)``, at most ``1 / (6 sqrt 3) = 0.096`` in
    absolute value: Eq. 18 replaces both by 1.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.attention import AttentionMaps, softmax_invariance_survey
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(size=(1, 1, 3, 8, 8))
    >>> probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    >>> maps = AttentionMaps.from_array(probs, logits)
    >>> out = softmax_invariance_survey(maps, n_resamples=200)
    >>> [r["variant"] for r in out["summary"]]
    ['exact', 'softmax', 'softmax_exp', 'softmax_collapsed']
    >>> out["summary"][0]["share_within"]  # the telescoping identity holds on every head
    1.0
    """
    from skorg.stats import bootstrap_of_means
    from skorg.transforms import softmax_invariance_check
    from skorg.trees import dyadic_tree

    from ._windowed import per_input

    per_input(maps, "softmax_invariance_survey")
    if maps.logits is None:
        raise ValueError("maps holds no logits: extract them with logits=True.")
    if isinstance(sample, (bool, np.bool_)) or not isinstance(sample, (int, np.integer)):
        raise TypeError(f"sample must be an int, got {sample!r}.")
    if not 0 <= sample < maps.n_samples:
        raise ValueError(f"sample must lie in [0, {maps.n_samples}), got {sample}.")
    if not _is_real(tolerance) or not (0 < tolerance < np.inf):
        raise ValueError(f"tolerance must be a finite positive number, got {tolerance!r}.")
    if not _is_real(confidence_level) or not 0 < confidence_level < 1:
        raise ValueError(f"confidence_level must lie in (0, 1), got {confidence_level!r}.")
    n_heads = maps.probs.shape[1] * maps.probs.shape[2]
    head_ids = range(n_heads) if heads is None else _head_ids(heads, n_heads)
    keep = maps.valid_tokens(sample)
    logits = np.asarray(maps.logits[sample], dtype=np.float64)
    logits = logits.reshape(-1, *logits.shape[2:])
    n = keep.size
    if trees is None:
        trees = [dyadic_tree(np.arange(n)), dyadic_tree(np.arange(n))]
    row_tree, column_tree = list(trees)[:2]
    if (row_tree.n_points, column_tree.n_points) != (n, n):
        raise ValueError(
            f"trees on {row_tree.n_points} x {column_tree.n_points} points do not match the "
            f"{n} real tokens of sample {sample}."
        )
    names = [f"L{int(a)}H{int(b)}" for a, b in maps.head_index()]
    rows = []
    for h in head_ids:
        f = logits[h][np.ix_(keep, keep)]
        f = np.where(np.isfinite(f), f, np.nan)
        if np.isnan(f).any():  # causal masks: -inf logits carry zero probability
            low = np.nanmin(f) - 50.0
            f = np.where(np.isnan(f), low, f)
        a1, a2 = _derivative_sizes(f, row_tree, column_tree)
        for r in softmax_invariance_check(f, row_tree=row_tree, column_tree=column_tree):
            rows.append(
                {
                    "head": names[h],
                    "variant": r["variant"],
                    "rel_error": r["rel_error"],
                    "a1_max": a1,
                    "a2_max": a2,
                }
            )
    summary = []
    for variant in _VARIANTS:
        err = np.array([r["rel_error"] for r in rows if r["variant"] == variant])
        a1 = np.array([r["a1_max"] for r in rows if r["variant"] == variant])
        a2 = np.array([r["a2_max"] for r in rows if r["variant"] == variant])
        within = (err <= tolerance).astype(float)
        row = {
            "variant": variant,
            "heads": int(err.size),
            "median": float(np.median(err)),
            "q1": float(np.quantile(err, 0.25)),
            "q3": float(np.quantile(err, 0.75)),
            "share_within": float(within.mean()),
            "share_low": float(within.mean()),
            "share_high": float(within.mean()),
            "a1_median": float(np.median(a1)),
            "a2_median": float(np.median(a2)),
        }
        if err.size > 1:
            ci = bootstrap_of_means(
                within,
                n_resamples=n_resamples,
                confidence_level=confidence_level,
                method="percentile",
                random_state=random_state,
            )
            row["share_low"], row["share_high"] = ci.low, ci.high
        summary.append(row)
    return {"heads": rows, "summary": summary, "tolerance": tolerance, "n_heads": len(head_ids)}
