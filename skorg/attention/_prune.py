"""Cumulative head pruning along a ranking, with the area under each curve."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ._mask import attention_layout, mask_heads

__all__ = ["PruningResult", "prune_curves"]


@dataclass
class PruningResult:
    """Metric against the fraction of heads removed, for several prune orders.

    Attributes
    ----------
    fractions : ndarray of shape (n_steps,)
    baseline : float
        Metric of the unpruned model.
    curves : dict of name -> ndarray of shape (n_steps,)
    auc : dict of name -> float
        Area under ``curve / baseline`` over the fractions (1 would be "no loss at all").
    prunable : dict of name -> float
        Largest fraction up to which the metric stays at or above ``threshold * baseline``.
    threshold : float
    """

    fractions: np.ndarray
    baseline: float
    curves: dict
    auc: dict
    prunable: dict
    threshold: float

    def summary(self):
        """A text table: one row per order, best area first."""
        lines = [f"{'ranking':<20}{'AUC':>8}{'prunable@' + str(self.threshold):>16}"]
        for name in sorted(self.auc, key=lambda n: -self.auc[n]):
            lines.append(f"{name:<20}{self.auc[name]:>8.4f}{self.prunable[name]:>16.2f}")
        return "\n".join(lines)


def prune_curves(model, orders, metric, *, fractions=None, threshold=0.9, kind=None):
    """Mask heads cumulatively in each order and measure a task metric at every step.

    Parameters
    ----------
    model : transformers model, TransformerLens model, or torch.nn.Module
    orders : mapping of name -> array of flat head ids, or the table of :func:`rank_heads`
        Flat ids are ``layer * n_heads + head``; the first id is removed first.
    metric : callable
        ``metric(model) -> float``, higher is better, positive for the unpruned model; called
        while the heads are masked.
    fractions : array-like, default=0, 0.1, ..., 1
        Fractions of all heads removed at each step.
    threshold : float, default=0.9
        Level, relative to the unpruned metric, that defines the prunable fraction.
    kind : {"self", "encoder", "decoder", "cross"}, optional
        The kind of attention whose heads are pruned; required for encoder-decoder models.

    Returns
    -------
    result : PruningResult
    """
    if isinstance(orders, Mapping) and "orders" in orders:
        orders = orders["orders"]
    layout = attention_layout(model, kind)
    n_total = layout.n_layers * layout.n_heads
    fractions = np.linspace(0, 1, 11) if fractions is None else np.asarray(fractions, float)
    if fractions.ndim != 1 or fractions.size < 2 or np.any(np.diff(fractions) <= 0):
        raise ValueError("fractions must be increasing with at least two steps.")
    if fractions[0] < 0 or fractions[-1] > 1:
        raise ValueError("fractions must lie in [0, 1].")
    counts = np.round(fractions * n_total).astype(np.int64)
    baseline = float(metric(model))
    if not np.isfinite(baseline) or baseline <= 0:
        raise ValueError(f"the unpruned metric must be positive and finite, got {baseline}.")
    curves, auc, prunable = {}, {}, {}
    for name, order in orders.items():
        order = np.asarray(order, dtype=np.int64)
        if sorted(order.tolist()) != list(range(n_total)):
            raise ValueError(f"orders[{name!r}] must be a permutation of the {n_total} heads.")
        values = np.empty(fractions.size)
        for i, c in enumerate(counts):
            if c == 0:
                values[i] = baseline
                continue
            with mask_heads(model, order[:c], kind=layout.attention):
                values[i] = float(metric(model))
        curves[name] = values
        rel = values / baseline
        auc[name] = float(np.sum(np.diff(fractions) * (rel[1:] + rel[:-1]) / 2))
        below = np.flatnonzero(rel < threshold)
        if below.size == 0:
            prunable[name] = float(fractions[-1])
        else:
            prunable[name] = 0.0 if below[0] == 0 else float(fractions[below[0] - 1])
    return PruningResult(fractions, baseline, curves, auc, prunable, threshold)
