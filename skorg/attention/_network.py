"""The query x key x head network tensor and its tri-Haar entropy."""

from __future__ import annotations

import numpy as np

__all__ = ["compare_networks", "network_entropy", "network_tensor"]


def network_tensor(maps, sample=0, *, crop_padding=True):
    """The query x key x head tensor of one sample, heads of all layers stacked.

    Parameters
    ----------
    maps : AttentionMaps
    sample : int, default=0
    crop_padding : bool, default=True
        Keep only the tokens some query attends to (drops padding positions, whose rows and
        columns carry no attention and would distort the organization).

    Returns
    -------
    X : ndarray of shape (n_queries, n_keys, n_layers * n_heads), float64
        ``X[:, :, i]`` is head ``head_index[i]``.
    head_index : ndarray of shape (n_layers * n_heads, 2)
        ``(layer, head)`` of every slice, layer-major.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.attention import AttentionMaps, network_tensor
    >>> maps = AttentionMaps.from_array(np.full((1, 2, 3, 4, 4), 0.25))
    >>> X, index = network_tensor(maps)
    >>> X.shape, index[4].tolist()
    ((4, 4, 6), [1, 1])
    """
    from ._windowed import per_input

    per_input(maps, "network_tensor")
    if not 0 <= sample < maps.n_samples:
        raise ValueError(f"sample must lie in [0, {maps.n_samples}), got {sample}.")
    return sample_tensor(maps, sample, crop_padding)


def sample_tensor(maps, sample, crop_padding=True):
    """network_tensor's core: any sample axis (a window of windowed maps, scored per window)."""
    probs = np.asarray(maps.probs[sample], dtype=np.float64)  # (L, H, Q, K)
    if crop_padding:
        keep = maps.valid_tokens(sample)  # for pooled queries, the rows that see a key
        probs = probs[:, :, maps.valid_queries(sample)][:, :, :, keep]
    n_layers, n_heads, nq, nk = probs.shape
    X = probs.reshape(n_layers * n_heads, nq, nk).transpose(1, 2, 0)
    return np.ascontiguousarray(X), maps.head_index()


def _l1_entropy():
    from skorg.transforms import l1_entropy

    return l1_entropy


def network_entropy(X, trees, *, selection="support", k=400, normalize=False, entropy=None):
    """Tri-Haar l1 entropy of a network tensor on its organized trees.

    Parameters
    ----------
    X : ndarray of shape (n_queries, n_keys, n_heads)
    trees : sequence of 3 PartitionTree
        One tree per axis, e.g. ``QuestionnaireOrganizer(...).fit(X).trees_``.
    selection : {"all", "support", "coarsest"}, default="support"
        Which tri-Haar coefficients to sum (user guide, "Reading the entropy"): by default
        the ``k`` of largest support, the clean definition of the paper's network entropy.
    k : int, default=400
    normalize : bool, default=False
        Divide by the Frobenius norm of ``X`` so that tensors of different scale compare.
    entropy : callable, optional
        Replacement for :func:`skorg.transforms.l1_entropy` (same signature).

    Returns
    -------
    value : float
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 3:
        raise ValueError(f"X must be a 3-D network tensor, got ndim={X.ndim}.")
    fn = entropy or _l1_entropy()
    return float(fn(X, list(trees), selection=selection, k=k, normalize=normalize))


def compare_networks(
    tensors_a,
    tensors_b,
    organize,
    *,
    paired=None,
    n_resamples=2000,
    confidence_level=0.95,
    random_state=0,
    **kwargs,
):
    """Tri-Haar network entropy of two models (or two layer sets), with intervals and a test.

    Parameters
    ----------
    tensors_a, tensors_b : sequence of ndarray of shape (n_queries, n_keys, n_heads)
        Network tensors of the two models (e.g. :func:`network_tensor` of each sample).
    organize : callable
        ``organize(X) -> trees`` (e.g. ``lambda X: QuestionnaireOrganizer().fit(X).trees_``).
    paired : bool, optional
        Whether sample ``i`` of both lists is the same input (then a paired test of the
        per-input differences); default: True when both lists have the same length.
    n_resamples : int, default=2000
        Bootstrap resamples and, with a floor of 9999, permutation draws.
    confidence_level : float, default=0.95
    random_state : int, default=0
    **kwargs
        Passed to :func:`network_entropy`; ``normalize=True`` is advisable when the two
        models differ in size.

    Returns
    -------
    result : dict
        ``"a"`` and ``"b"``: per-sample entropies (ndarray); ``"difference"``: their mean
        difference a - b; ``"fraction_a_lower"``: share of paired samples where model a is
        sparser; ``"interval_a"``, ``"interval_b"``, ``"interval_difference"``: bootstrap
        intervals (dicts with ``estimate``, ``low``, ``high``; None with a single sample);
        ``"p_value"``: permutation test of equal means (paired sign flips or shuffled labels);
        ``"effect_size"``: Cohen's d_z (paired) or d (pooled standard deviation);
        ``"paired"``; ``"distinguishable"``: whether the interval of the difference excludes 0.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.attention import compare_networks
    >>> from skorg.trees import dyadic_tree
    >>> rng = np.random.default_rng(0)
    >>> smooth = [np.ones((4, 4, 2)) + 0.01 * rng.random((4, 4, 2)) for _ in range(6)]
    >>> rough = [rng.random((4, 4, 2)) for _ in range(6)]
    >>> trees = lambda X: [dyadic_tree(n) for n in X.shape]
    >>> out = compare_networks(smooth, rough, trees, selection="all", normalize=True)
    >>> bool(out["difference"] < 0), bool(out["p_value"] < 0.05), out["paired"]
    (True, True, True)
    """
    from skorg.stats import compare_samples

    if not callable(organize):
        raise TypeError(f"organize must be callable, got {type(organize).__name__}.")
    a = np.array([network_entropy(X, organize(X), **kwargs) for X in tensors_a])
    b = np.array([network_entropy(X, organize(X), **kwargs) for X in tensors_b])
    if a.size == 0 or b.size == 0:
        raise ValueError("both models need at least one network tensor.")
    paired = (a.size == b.size) if paired is None else bool(paired)
    if paired and a.size != b.size:
        raise ValueError(
            f"paired=True needs as many tensors in both lists, got {a.size} and {b.size}."
        )
    out = compare_samples(
        a,
        b,
        paired=paired,
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        random_state=random_state,
    )
    return {"a": a, "b": b, **out}
