"""The softmax-invariance (paraproduct) check on a few real heads, chosen by sparsity."""

from __future__ import annotations

import numpy as np

from ._attention_setup import PRESET, _head_names

__all__ = ["head_paraproduct_rows", "pick_heads", "real_head_rows", "unmasked_block"]


def pick_heads(scores, n):
    """``n`` heads spread over a score from lowest to highest (lowest first)."""
    by_score = np.argsort(np.asarray(scores), kind="stable")
    at = np.unique(np.linspace(0, len(by_score) - 1, n).round().astype(int))
    return [int(by_score[i]) for i in at]


def head_paraproduct_rows(maps, org, picks, sample=0):
    """The softmax-invariance check on chosen heads' logits, organized and in token order.

    ``org`` is the organizer fitted on the network tensor of ``sample``; ``picks`` are flat
    head ids. Padding tokens are dropped as in :func:`~skorg.attention.network_tensor`.
    """
    from skorg.transforms import softmax_invariance_check

    if maps.logits is None:
        return []
    names = _head_names(maps.head_index())
    keep = maps.valid_tokens(sample)
    logits = np.asarray(maps.logits[sample], dtype=float)
    logits = logits.reshape(-1, *logits.shape[2:])
    rows = []
    for h in picks:
        f = logits[h][np.ix_(keep, keep)]
        allowed = np.isfinite(f)
        if not allowed.all():
            # a causal or windowed head: its masked logits are -inf, which no expansion takes;
            # analyse the largest block of queries x keys that the mask allows, in token order
            r, c = unmasked_block(allowed)
            if len(r) < 2 or len(c) < 2:
                continue
            label = f"unmasked {len(r)} x {len(c)} block of a masked head, token order"
            for row in softmax_invariance_check(f[np.ix_(r, c)]):
                rows.append({"case": f"head {names[h]}, {label}", **row})
            continue
        for label, (rt, ct) in (("organized trees", org.trees_[:2]), ("token order", (None, None))):
            for row in softmax_invariance_check(f, row_tree=rt, column_tree=ct):
                rows.append({"case": f"head {names[h]}, {label}", **row})
    return rows


def unmasked_block(allowed):
    """Rows and columns of a large all-allowed block of a boolean mask (queries x keys).

    For every row as pivot, its allowed columns and the rows that allow all of them form an
    all-allowed block; the largest one is returned (for a causal mask of n tokens, the last
    n/2 queries against the first n/2 keys).
    """
    best = (np.array([], dtype=int), np.array([], dtype=int))
    for i in range(allowed.shape[0]):
        cols = np.flatnonzero(allowed[i])
        if not len(cols):
            continue
        rows = np.flatnonzero(allowed[:, cols].all(axis=1))
        if len(rows) * len(cols) > len(best[0]) * len(best[1]):
            best = (rows, cols)
    return best


def real_head_rows(setup, n_heads=3, progress=None):
    """Paraproduct rows for ``n_heads`` heads of sample 0, from sparsest to least sparse."""
    from skorg.attention import extract_attention, network_tensor
    from skorg.organize import QuestionnaireOrganizer
    from skorg.transforms import l1_entropy

    step = progress.step if progress is not None else (lambda label: None)
    step("extracting attention")
    maps = extract_attention(setup["model"], setup["inputs"], tokenizer=setup["tokenizer"])
    step("organizing the heads of sample 0")
    X, _ = network_tensor(maps, 0)
    org = QuestionnaireOrganizer(preset=PRESET).fit(X)
    trees = org.trees_[:2]
    sparsity = [l1_entropy(X[:, :, h], trees, selection="support") for h in range(X.shape[2])]
    step("paraproduct check of the chosen heads")
    return head_paraproduct_rows(maps, org, pick_heads(sparsity, n_heads))
