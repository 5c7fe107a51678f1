"""The reviewers' test of softmax invariance (the paper's Corollary 1, Eq. 18), as numbers."""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from .._validation import check_memory
from ._nonlinearities import get_nonlinearity
from ._paraproduct_averages import _Averager, _check_matrix, _resize
from ._paraproduct_pass import _decompose
from ._paraproduct_result import _norm, _rel

__all__ = ["corner_block_logits", "format_table", "softmax_invariance_check"]

_VARIANTS = {
    "exact": "exact telescoping of softmax",
    "softmax": "paraproduct, true softmax Jacobian and 2nd derivative",
    "softmax_exp": "paper: A' = A'' = exp, row normalizer held constant",
    "softmax_collapsed": "paper Eq. 18: A' = A'' = 1",
}


def _nanmax(x):
    # padded scales leave NaN; all-NaN (no expanded scale) reads as NaN without a warning
    return float(np.max(x[~np.isnan(x)])) if np.any(~np.isnan(x)) else math.nan


def corner_block_logits(M, n=4):
    """The reviewers' test matrix: zeros with an ``n/2 x n/2`` block of value ``M`` in a corner.

    For ``n = 4`` this is ``[[0,0,0,0],[0,0,0,0],[0,0,M,M],[0,0,M,M]]``.

    Parameters
    ----------
    M : float
    n : int, default=4
        Even side length.

    Returns
    -------
    f : ndarray of shape (n, n)

    Examples
    --------
    >>> from skorg.transforms import corner_block_logits
    >>> corner_block_logits(10.0)
    array([[ 0.,  0.,  0.,  0.],
           [ 0.,  0.,  0.,  0.],
           [ 0.,  0., 10., 10.],
           [ 0.,  0., 10., 10.]])
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2 or n % 2:
        raise ValueError(f"n must be an even integer >= 2, got {n!r}.")
    if isinstance(M, bool) or not isinstance(M, (Real, np.floating, np.integer)):
        raise TypeError(f"M must be a real number, got {M!r}.")
    if not np.isfinite(M):
        raise ValueError(f"M must be finite, got {M!r}.")
    check_memory(8 * int(n) ** 2, f"corner_block_logits(n={n})")
    f = np.zeros((n, n))
    f[n // 2 :, n // 2 :] = M
    return f


def softmax_invariance_check(
    f, *, scales="all", row_tree=None, column_tree=None, resize="tree", variants=None
):
    """Compare the paper's softmax expansions with softmax itself, one row per variant.

    Variants: ``exact`` (the telescoping identity, a round-off check),
    ``softmax`` (paraproduct with the true Jacobian and second derivative),
    ``softmax_exp`` (the paper's ``A' = A'' = exp`` with the row normalizer held
    constant) and ``softmax_collapsed`` (the paper's Eq. 18, ``A' = A'' = 1``).

    Parameters
    ----------
    f : array-like of shape (n_rows, n_cols)
        Logits, rows = queries.
    scales, row_tree, column_tree, resize
        As in :func:`paraproduct_decomposition`.
    variants : str or sequence of str, optional
        Subset of the four variants (default: all, in the order above); one name (a string)
        is that variant alone.

    Returns
    -------
    rows : list of dict
        One dict per variant with keys ``variant``, ``description``,
        ``rel_error`` (``||softmax(f) - approximation|| / ||softmax(f)||``, the
        approximation being the omitted part plus the variant's expansion over
        ``scales``), ``rel_error_terms`` (the expansion alone against
        ``softmax(f)``: the right-hand side of Eq. 18 without the remainder),
        ``rel_omitted``, ``factor_max`` (largest first-derivative factor the
        variant uses over ``scales``: ``max |Ds|`` for ``softmax``,
        ``max exp(u)/Z`` for ``softmax_exp``, 1 for ``softmax_collapsed``),
        ``jacobian_max`` (the true ``max |Ds|`` at the averages, at most 1/4; NaN
        without an expanded scale) and
        ``log10_exp_Pf_max`` (``log10`` of the largest ``exp(P_{j,j'} f)`` of
        the raw logits over ``scales``: the factor the paper sets to 1; NaN when
        there is no scale to expand, e.g. a single row and column).

    Notes
    -----
    All variants analyse the row-shifted logits (see
    :func:`paraproduct_decomposition`), so no exponential overflows, whatever the
    logit size. The first- and second-order terms grow like the logit range and
    its square: above a range of about 1e150 they pass the float64 range, and the
    errors are then reported as ``inf`` (never NaN). Every norm is Frobenius.

    Examples
    --------
    >>> from skorg.transforms import corner_block_logits, softmax_invariance_check
    >>> rows = softmax_invariance_check(corner_block_logits(10.0))
    >>> [r["variant"] for r in rows]
    ['exact', 'softmax', 'softmax_exp', 'softmax_collapsed']
    >>> rows[0]["rel_error"] < 1e-14, rows[1]["jacobian_max"] <= 0.25
    (True, True)
    """
    if isinstance(variants, str):
        variants = [variants]
    if variants is not None and not hasattr(variants, "__iter__"):
        raise TypeError(f"variants must be a sequence of variant names, got {variants!r}.")
    variants = list(_VARIANTS) if variants is None else list(variants)
    unknown = [v for v in variants if not isinstance(v, str) or v not in _VARIANTS]
    if unknown:
        raise ValueError(f"Unknown variants {unknown}; expected a subset of {list(_VARIANTS)}.")
    if not variants:
        raise ValueError(f"variants must name at least one of {list(_VARIANTS)}, got [].")
    f = _check_matrix(f)
    original_shape = f.shape
    f, row_tree, column_tree = _resize(f, resize, row_tree, column_tree)
    results = {}
    for name in ("softmax", "softmax_exp", "softmax_collapsed"):
        if name in variants or (name == "softmax" and "exact" in variants):
            A = get_nonlinearity(name)
            with np.errstate(over="ignore", invalid="ignore"):  # huge logit ranges: see Notes
                results[name] = _decompose(
                    f, A, scales, row_tree, column_tree, False, original_shape
                )
    ref = results["softmax"] if "softmax" in results else next(iter(results.values()))
    target = ref.values
    jac = _nanmax(ref.first_factor_max)
    grid = _Averager(f, row_tree, column_tree)
    maxima = grid.maxima()  # one pass over every average, none of them kept
    pf_max = -math.inf
    for j, jp in ref.scales:
        lc, lr = min(j, grid.column_depth), min(jp, grid.row_depth)
        pf_max = max(pf_max, float(maxima[lc, lr]))
    log10_exp = pf_max / math.log(10) if len(ref.scales) else math.nan

    rows = []
    for name in variants:
        if name == "exact":
            res = results["softmax"]
            approx, terms, factor = res.reconstruct(), res.modelled, math.nan
        else:
            res = results[name]
            approx, terms = res.approximation, res.paraproduct
            factor = _nanmax(res.first_factor_max)
        with np.errstate(over="ignore", invalid="ignore"):
            errors = _rel(target - approx, target), _rel(target - terms, target)
        rows.append(
            {
                "variant": name,
                "description": _VARIANTS[name],
                "rel_error": errors[0],
                "rel_error_terms": errors[1],
                "rel_omitted": _norm(res.omitted) / _norm(target),
                "factor_max": factor,
                "jacobian_max": jac,
                "log10_exp_Pf_max": log10_exp,
            }
        )
    return rows


def format_table(rows, columns=None, *, float_format="{:.3g}"):
    """Format a list of dict rows as a fixed-width text table.

    Parameters
    ----------
    rows : list of dict
    columns : list of str, optional
        Keys to show, in order (default: the keys of the first row).
    float_format : str, default="{:.3g}"

    Returns
    -------
    table : str

    Examples
    --------
    >>> from skorg.transforms import format_table
    >>> print(format_table([{"M": 1, "err": 0.5}, {"M": 10, "err": 0.25}]))
    M   err
    --  ----
    1   0.5
    10  0.25
    """
    if not rows:
        return ""
    columns = list(rows[0]) if columns is None else list(columns)

    def fmt(v):
        if isinstance(v, (float, np.floating)):
            return float_format.format(float(v))
        return str(v)

    cells = [[fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += [
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
    return "\n".join(lines)
