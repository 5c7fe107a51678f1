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
    if not 0 <= sample < maps.n_samples:
        raise ValueError(f"sample must lie in [0, {maps.n_samples}), got {sample}.")
    probs = np.asarray(maps.probs[sample], dtype=np.float64)  # (L, H, Q, K)
    if crop_padding:
        keep = maps.valid_tokens(sample)
        probs = probs[:, :, keep][:, :, :, keep]
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


def compare_networks(tensors_a, tensors_b, organize, **kwargs):
    """Tri-Haar network entropy of two models on comparable inputs, sample by sample.

    Parameters
    ----------
    tensors_a, tensors_b : sequence of ndarray of shape (n_queries, n_keys, n_heads)
        Network tensors of the two models (e.g. :func:`network_tensor` of each sample).
    organize : callable
        ``organize(X) -> trees`` (e.g. ``lambda X: QuestionnaireOrganizer().fit(X).trees_``).
    **kwargs
        Passed to :func:`network_entropy`; ``normalize=True`` is advisable when the two
        models differ in size.

    Returns
    -------
    result : dict
        ``"a"`` and ``"b"``: per-sample entropies (ndarray), ``"difference"``: their mean
        difference a - b, ``"fraction_a_lower"``: share of samples where model a is sparser.
    """
    a = np.array([network_entropy(X, organize(X), **kwargs) for X in tensors_a])
    b = np.array([network_entropy(X, organize(X), **kwargs) for X in tensors_b])
    if a.size == 0 or b.size == 0:
        raise ValueError("both models need at least one network tensor.")
    n = min(a.size, b.size)
    return {
        "a": a,
        "b": b,
        "difference": float(a.mean() - b.mean()),
        "fraction_a_lower": float(np.mean(a[:n] < b[:n])),
    }
