"""Head scores (organized-tree sparsity and the standard baselines), rankings and stability."""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real

import numpy as np
import torch

from skorg.stats import top_set_overlap_test

from ._mask import attention_layout, gate_heads
from ._network import _l1_entropy, sample_tensor
from ._ragged import per_group

__all__ = [
    "attention_entropy",
    "head_confidence",
    "head_gradient_importance",
    "head_sparsity",
    "rank_heads",
    "ranking_stability",
]

# Which end of each score is pruned first (the head the score calls least useful).
PRUNE_FIRST = {
    "sparsity": "low",  # few Haar coefficients: near-uniform or trivially structured maps
    "attention_entropy": "high",  # diffuse heads (Clark et al. 2019)
    "confidence": "low",  # Voita et al. 2019
    "gradient": "low",  # Michel et al. 2019
}


def _default_organize(X):
    from ..organize import QuestionnaireOrganizer

    return QuestionnaireOrganizer(preset="paper_3d_heads").fit(X).trees_


def head_sparsity(
    maps, *, organize=None, trees=None, selection="support", k=400, normalize=False, entropy=None
):
    """Per-head bi-Haar l1 entropy on the organized query and key trees.

    For every sample, the network tensor (queries x keys x heads) is organized, and each head's
    map is expanded in the bi-Haar basis of the query and key trees; the score is the l1 norm
    of the selected coefficients (the user guide's "Reading the entropy"). Low values mean a
    sparse, well organized head. Maps whose layers differ in size
    (:class:`RaggedAttentionMaps`) are organized group by group, each on its own query and
    key axes, and the scores of all heads are joined in the order of ``maps.head_index()``;
    windowed maps (``sample_axis == "window"``) are scored per window and averaged over each
    input's windows.

    Parameters
    ----------
    maps : AttentionMaps or RaggedAttentionMaps
    organize : callable, optional
        ``organize(X) -> trees`` for a network tensor X; by default
        ``QuestionnaireOrganizer(preset="paper_3d_heads").fit(X).trees_``.
    trees : sequence of PartitionTree, optional
        Fixed (query tree, key tree, ...) used for every sample instead of organizing.
    selection : {"all", "support", "coarsest"}, default="support"
    k : int, default=400
    normalize : bool, default=False
    entropy : callable, optional
        Replacement for :func:`skorg.transforms.l1_entropy` (same signature).

    Returns
    -------
    scores : ndarray of shape (n_samples, n_total_heads)
        One column per row of ``maps.head_index()``.
    """
    if organize is not None and trees is not None:
        raise ValueError("pass either organize or trees, not both.")
    options = dict(trees=trees, selection=selection, k=k, normalize=normalize, entropy=entropy)
    return per_group(maps, lambda group: _sparsity(group, organize, **options))


def _sparsity(maps, organize, *, trees, selection, k, normalize, entropy):
    fn = entropy or _l1_entropy()
    organize = organize or _default_organize
    out = []
    for s in range(maps.n_samples):
        X, _ = sample_tensor(maps, s)
        tq, tk = (trees if trees is not None else organize(X))[:2]
        if (tq.n_points, tk.n_points) != X.shape[:2]:
            raise ValueError(
                f"trees on {tq.n_points} x {tk.n_points} points do not match sample {s} "
                f"({X.shape[0]} x {X.shape[1]} tokens)."
            )
        out.append(
            [
                float(fn(X[:, :, i], [tq, tk], selection=selection, k=k, normalize=normalize))
                for i in range(X.shape[2])
            ]
        )
    return np.asarray(out)


def _row_reduce(maps, fn):
    """Per-row statistic averaged over the real (non-padding) tokens: (n_samples, n_heads)."""
    return per_group(maps, lambda group: _row_core(group, fn))


def _row_core(maps, fn):
    p = np.asarray(maps.probs, dtype=np.float64)
    n, n_layers, n_heads = p.shape[:3]
    out = np.empty((n, n_layers * n_heads))
    for s in range(n):
        keys = maps.valid_tokens(s)  # padding tokens neither as queries nor as keys
        ps = p[s][:, :, maps.valid_queries(s)][..., keys]
        out[s] = fn(ps).mean(axis=-1).reshape(-1)
    return out


def attention_entropy(maps):
    """Mean Shannon entropy (nats) of the attention rows of every head.

    Returns
    -------
    scores : ndarray of shape (n_samples, n_layers * n_heads)

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.attention import AttentionMaps, attention_entropy
    >>> p = np.zeros((1, 1, 2, 4, 4)); p[0, 0, 0] = 0.25; p[0, 0, 1] = np.eye(4)
    >>> np.round(attention_entropy(AttentionMaps.from_array(p)), 4)
    array([[1.3863, 0.    ]])
    """

    def row_entropy(ps):
        logs = np.log(np.where(ps > 0, ps, 1.0))
        return -(ps * logs).sum(axis=-1)

    return _row_reduce(maps, row_entropy)


def head_confidence(maps):
    """Confidence of every head: the mean over query rows of the largest attention weight.

    Voita et al. (2019) found that confident heads are the ones that matter.

    Returns
    -------
    scores : ndarray of shape (n_samples, n_layers * n_heads)
    """
    return _row_reduce(maps, lambda ps: ps.max(axis=-1))


def head_gradient_importance(model, batches, loss_fn, *, normalize_layers=False, kind=None):
    """Gradient importance of a per-head mask (Michel et al., 2019).

    With gates xi on every head (all 1), the importance of head h is the mean over batches of
    ``|d loss / d xi_h|``: the first-order change of the loss when the head is removed.

    Parameters
    ----------
    model : transformers model, TransformerLens model, or torch.nn.Module
        Put it in eval mode first; the parameters receive no gradient.
    batches : iterable
        Each item is passed to ``loss_fn``.
    loss_fn : callable
        ``loss_fn(model, batch) -> scalar tensor``; runs the model on the batch.
    normalize_layers : bool, default=False
        Divide the scores of each layer by their l2 norm, as Michel et al. do.
    kind : {"self", "encoder", "decoder", "cross"}, optional
        The kind of attention whose heads are gated; required for encoder-decoder models.

    Returns
    -------
    scores : ndarray of shape (n_total_heads,)
        Layer-major, ``layout.n_total`` heads (``n_layers * n_heads`` when every layer has
        as many).
    """
    layout = attention_layout(model, kind)
    param = next(iter(model.parameters()), None)
    device = param.device if param is not None else "cpu"
    gates = torch.ones(layout.n_layers, layout.n_heads, device=device, requires_grad=True)
    total = torch.zeros(layout.n_layers, layout.n_heads, device=device)
    count = 0
    with gate_heads(model, gates, kind=layout.attention):
        for batch in batches:
            loss = loss_fn(model, batch)
            (grad,) = torch.autograd.grad(loss, gates)
            total += grad.abs()
            count += 1
    if count == 0:
        raise ValueError("batches holds no batch.")
    scores = (total / count).detach().cpu().numpy().astype(np.float64)
    if normalize_layers:
        norms = np.linalg.norm(scores, axis=1, keepdims=True)
        scores = scores / np.where(norms > 0, norms, 1.0)
    # layer-major, every layer's own heads (stages of Swin or SegFormer differ in heads)
    return np.concatenate([row[:k] for row, k in zip(scores, layout.heads_per_layer, strict=True)])


def _order(score, direction):
    # stable sort, so ties keep the head order and the ranking is deterministic
    key = score if direction == "low" else -score
    return np.argsort(key, kind="stable")


def rank_heads(scores, *, prune_first=None, random_state=0):
    """Prune orders of the heads under every score, with a random order beside them.

    Parameters
    ----------
    scores : mapping of name -> array of shape (n_heads,) or (n_samples, n_heads)
        Per-sample scores are averaged over samples. Known names ("sparsity",
        "attention_entropy", "confidence", "gradient") have a default pruning direction.
    prune_first : mapping of name -> {"low", "high"}, optional
        Which end is pruned first, for new names or to override the defaults.
    random_state : int, default=0
        Seed of the "random" order.

    Returns
    -------
    table : dict
        ``"scores"``: name -> mean score per head; ``"orders"``: name -> head ids in pruning
        order (first pruned first), with ``"random"`` added; ``"ranks"``: name -> position of
        each head in its order.

    Examples
    --------
    >>> from skorg.attention import rank_heads
    >>> table = rank_heads({"confidence": [0.9, 0.2, 0.5]})
    >>> table["orders"]["confidence"].tolist()
    [1, 2, 0]
    """
    if not isinstance(scores, Mapping) or not scores:
        raise ValueError("scores must be a non-empty mapping of name -> per-head scores.")
    directions = {**PRUNE_FIRST, **(prune_first or {})}
    table = {"scores": {}, "orders": {}, "ranks": {}}
    n_heads = None
    for name, value in scores.items():
        arr = np.asarray(value)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"scores[{name!r}] must hold real numbers, got dtype {arr.dtype}.")
        arr = arr.astype(np.float64)
        if arr.size == 0 or (arr.ndim == 2 and arr.shape[0] == 0):
            raise ValueError(f"scores[{name!r}] holds no heads (shape {arr.shape}).")
        arr = arr.mean(axis=0) if arr.ndim == 2 else arr
        if arr.ndim != 1 or not np.all(np.isfinite(arr)):
            raise ValueError(f"scores[{name!r}] must be finite, 1-D or 2-D.")
        if n_heads is not None and arr.size != n_heads:
            raise ValueError(f"scores[{name!r}] has {arr.size} heads, expected {n_heads}.")
        n_heads = arr.size
        if directions.get(name) not in ("low", "high"):
            raise ValueError(f"no pruning direction for {name!r}: give prune_first[{name!r}].")
        table["scores"][name] = arr
        table["orders"][name] = _order(arr, directions[name])
    table["orders"]["random"] = np.random.default_rng(random_state).permutation(n_heads)
    for name, order in table["orders"].items():
        ranks = np.empty(n_heads, dtype=np.int64)
        ranks[order] = np.arange(n_heads)
        table["ranks"][name] = ranks
    return table


def ranking_stability(scores, *, fraction=0.1, n_resamples=2000, random_state=0):
    """How often the same heads fall in the top and bottom fraction of a score across batches.

    Parameters
    ----------
    scores : array-like of shape (n_batches, n_heads)
    fraction : float, default=0.1
        Size of the top and bottom sets, ``ceil(fraction * n_heads)`` heads.
    n_resamples : int, default=2000
        Draws of the null: as many random rankings as batches, each set of the same size.
    random_state : int, default=0

    Returns
    -------
    result : dict
        ``"top_frequency"``, ``"bottom_frequency"``: per head, the share of batches where it is
        in the set; ``"always_top"``, ``"always_bottom"``: heads in the set in every batch;
        ``"top_overlap"``, ``"bottom_overlap"``: mean pairwise Jaccard index between batches
        (each set holds at least one head, however small ``fraction`` is);
        ``"top_null"``, ``"bottom_null"``: the same against random rankings
        (:func:`skorg.stats.top_set_overlap_test`: the exact null expectation of the overlap
        and of the count of heads always in the set, null quantiles and p-values).

    Notes
    -----
    Under the null every batch ranks the heads in a uniformly random order, so its top set is
    a uniformly random set of ``m`` heads; two such sets share a hypergeometric number ``K``
    of heads and overlap by ``K / (2 m - K)``, and a head is in all ``b`` sets with
    probability ``(m / n) ** b``. Small p-values say the ranking keeps the same heads more
    often than chance.

    Examples
    --------
    >>> from skorg.attention import ranking_stability
    >>> out = ranking_stability([[1, 2, 3, 4], [1, 3, 2, 4]], fraction=0.25)
    >>> out["always_top"].tolist(), out["always_bottom"].tolist(), out["top_overlap"]
    ([3], [0], 1.0)
    >>> round(out["top_null"]["overlap_null_mean"], 4)  # two random single heads of 4
    0.25
    """
    S = np.asarray(scores)
    if S.dtype.kind not in "biuf":
        raise TypeError(f"scores must hold real numbers, got dtype {S.dtype}.")
    S = S.astype(np.float64)
    if S.ndim != 2 or S.shape[0] < 2 or S.shape[1] < 2 or not np.all(np.isfinite(S)):
        raise ValueError("scores must be finite, of shape (n_batches >= 2, n_heads >= 2).")
    if isinstance(fraction, bool) or not isinstance(fraction, Real) or not 0 < fraction <= 0.5:
        raise ValueError(f"fraction must be a number in (0, 0.5], got {fraction!r}.")
    n_batches, n_heads = S.shape
    # at least one head per set: a fraction below 1 / n_heads still selects the extreme head
    m = max(1, int(np.ceil(fraction * n_heads - 1e-9)))
    order = np.argsort(S, axis=1, kind="stable")
    bottom = np.zeros_like(S, dtype=bool)
    top = np.zeros_like(S, dtype=bool)
    rows = np.arange(n_batches)[:, None]
    bottom[rows, order[:, :m]] = True
    top[rows, order[:, -m:]] = True

    def overlap(sets):
        pairs = [
            (sets[i] & sets[j]).sum() / (sets[i] | sets[j]).sum()
            for i in range(n_batches)
            for j in range(i + 1, n_batches)
        ]
        return float(np.mean(pairs))

    return {
        "top_frequency": top.mean(axis=0),
        "bottom_frequency": bottom.mean(axis=0),
        "always_top": np.flatnonzero(top.all(axis=0)),
        "always_bottom": np.flatnonzero(bottom.all(axis=0)),
        "top_overlap": overlap(top),
        "bottom_overlap": overlap(bottom),
        "top_null": top_set_overlap_test(top, n_resamples=n_resamples, random_state=random_state),
        "bottom_null": top_set_overlap_test(
            bottom, n_resamples=n_resamples, random_state=random_state
        ),
    }
