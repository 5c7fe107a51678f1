"""The paraproduct decomposition in one pass over row blocks, within a memory bound."""

from __future__ import annotations

import numpy as np

from .._validation import check_memory
from ._paraproduct_averages import _Averager, _parse_scales
from ._paraproduct_result import (
    ParaproductResult,
    _BlockNorm,
    _Compact,
    _ratio,
    _scale_terms,
    _write_rows,
)

__all__ = ["_decompose", "_estimated_bytes"]


# --------------------------------------------------------------------------- core
def _row_weights(av, alpha, beta):
    """Per row level: folder sums of alpha^2, alpha*beta, beta^2, the folder max of beta.

    Full-size norms of ``alpha_i D[r(i), k] - beta_i T[r(i), k]`` then follow from
    compact matrices (``None`` means 1). The last entry says whether alpha is beta.
    """
    n = len(av.row_labels[0])
    same = alpha is beta
    al = np.ones(n) if alpha is None else alpha.ravel()
    be = np.ones(n) if beta is None else beta.ravel()
    out = []
    for lr in range(av.row_depth + 1):
        red = av.rows.reduce
        saa = red(al * al, lr, np.add)
        if same:
            out.append((saa, saa, saa, red(be, lr, np.maximum), True))
        else:
            sab, sbb = red(al * be, lr, np.add), red(be * be, lr, np.add)
            out.append((saa, sab, sbb, red(be, lr, np.maximum), False))
    return out


def _compact_sq(D, T, w, weights):
    """Full-size squared Frobenius norm of ``alpha D - beta T`` (``T=None``: of ``alpha D``)."""
    saa, sab, sbb, _, same = weights
    if T is None:
        return float(np.einsum("i,ij,ij,j->", saa, D, D, w))
    if same:
        # same scaling on both: one sum, no cancellation between large terms
        E = D - T
        return float(np.einsum("i,ij,ij,j->", saa, E, E, w))
    return float(
        np.einsum("i,ij,ij,j->", saa, D, D, w)
        - 2 * np.einsum("i,ij,ij,j->", sab, D, T, w)
        + np.einsum("i,ij,ij,j->", sbb, T, T, w)
    )


def _plus(a, b):
    if a is None:
        return b
    return a if b is None else a + b


class _Sum:
    """A sum over scales of compact terms keyed by (column level, row level), at full size.

    Terms arrive row level by row level and, within one, by increasing column level. The
    terms of a row level are folded into one matrix at the finest column level, and that
    is added to the sum carried down from the coarser row levels: the additions (and their
    order) of refining every term one level at a time, columns first, so the whole sum
    costs about as much as its result, which is only ever held one row block at a time.
    """

    def __init__(self, cols):
        self.cols = cols
        self.carry = self.x = self.pr = None
        self.xl = 0
        self.closed = True

    def begin(self, pr):
        """Open a row level; ``pr`` maps its folders to those of the carried sum."""
        self.pr, self.x, self.closed = pr, None, False

    def add(self, lc1, term):
        if lc1 == self.cols.depth:
            self.close(term)  # the last term of the row level: fold it in at once
            return
        self.x = term if self.x is None else self.cols.up(self.x, self.xl, lc1, -1) + term
        self.xl = lc1

    def close(self, last=None):
        if self.closed:
            return
        y = _plus(None if self.carry is None else self.carry[self.pr], last)
        self.carry = None
        x = None if self.x is None else self.cols.up(self.x, self.xl, self.cols.depth, -1)
        self.x = None
        self.carry = _plus(x, y)
        self.closed = True


# Row blocks of the finest row levels: about this many rows each (a 1/_BLOCKS share of the
# rows), and none under _MIN_BLOCK entries.
_BLOCKS = 64
_MIN_BLOCK = 1 << 12


def _plan(rows, n_cols, rowwise):
    """The row level ``L`` that splits the pass, and blocks of its folders.

    Row levels up to ``L`` are processed whole, before the kept matrices are allocated;
    the finer ones block by block, each block a run of folders of level ``L`` (its rows
    are contiguous in the leaf order). ``L`` minimises the larger of the two peaks, in
    rows of the matrix: the coarse levels' averages and ``A`` there (8 rows a folder, on
    top of the analysed logits) and the work of a block (about 25 rows a row of the block,
    on top of the 4 kept matrices). A map that mixes rows gets one block.
    """
    if not rowwise or rows.depth == 0:
        return 0, [(0, 1)]
    n = rows.n
    b = max(-(-n // _BLOCKS), -(-_MIN_BLOCK // n_cols), 1)
    if b >= n:
        return 0, [(0, 1)]
    coarse = np.cumsum(rows.n_folders)
    costs = [
        max(n + 8 * coarse[lvl], 4 * n + 25 * max(float(rows.sizes[lvl].max()), b))
        for lvl in range(rows.depth + 1)
    ]
    L = int(np.argmin(costs))
    sizes = rows.sizes[L]
    blocks, lo, acc = [], 0, 0.0
    for k, size in enumerate(sizes):
        if k > lo and acc + size > b:
            blocks.append((lo, k))
            lo, acc = k, 0.0
        acc += size
    blocks.append((lo, len(sizes)))
    return L, blocks


class _Part:
    """Row levels ``top..bottom`` of a run ``lo:hi`` of folders of level ``top``.

    ``s[lvl]:e[lvl]`` are its folders at each level and ``r0:r1`` its rows (leaf order);
    ``G[lvl][lc]`` holds its compact averages, ``A[lvl][lc]`` the nonlinearity there
    (computed when first needed). Levels from ``own_from`` on are the part's to report
    (``A`` at column level 0, and at row level 0).
    """

    def __init__(self, rows, top, lo, hi, bottom, own_from):
        self.top, self.bottom, self.own_from = top, bottom, own_from
        self.s, self.e = {top: lo}, {top: hi}
        for lvl in range(top, bottom):
            self.s[lvl + 1] = int(rows.child_ptr[lvl][self.s[lvl]])
            self.e[lvl + 1] = int(rows.child_ptr[lvl][self.e[lvl]])
        self.r0 = int(rows.starts[top][lo])
        self.r1 = int(rows.starts[top][hi]) if hi < rows.n_folders[top] else rows.n
        self.G, self.A, self.given = {}, {}, {}


class _Pass:
    """One pass of the decomposition: compact terms, their norms and their sums."""

    def __init__(self, av, A, pairs, keep_terms):
        self.av, self.A = av, A
        cols, rows = av.cols, av.rows
        J = av.depth
        self.in_set = np.zeros((J, J), dtype=bool)
        self.in_set[pairs[:, 0], pairs[:, 1]] = True
        self.vdiv, self.tdiv = A.value_divisor, A.terms_divisor
        alpha = None if self.vdiv is None else 1.0 / self.vdiv
        beta = alpha if self.tdiv is self.vdiv else (None if self.tdiv is None else 1.0 / self.tdiv)
        self.weights = _row_weights(av, alpha, beta)
        self.weights_dd = _row_weights(av, alpha, alpha)
        self.mixed_sq = np.zeros((J, J))
        self.err_sq = np.zeros((J, J))
        self.factor_max = np.full((J, J), np.nan)
        self.mixed_terms = np.zeros((J, J, *av.f.shape)) if keep_terms else None
        self.sums = [_Sum(cols) for _ in range(3)]  # modelled, first order, second order
        self.row0 = [None] * (cols.depth + 1)
        self.col0 = [[] for _ in range(rows.depth + 1)]

    def row_divisor(self, div, r0, r1):
        if div is None:
            return None
        order = self.av.rows.order
        return div[r0:r1] if order is None else div[order[r0:r1]]

    # ----------------------------------------------------------------- compact averages
    def fill(self, part, check, keep_all=True):
        """The part's compact averages, from its rows of the matrix.

        With ``check``, ``A`` at the finest grid is evaluated first and must be finite.
        """
        av = self.av
        cols, rows = av.cols, av.rows
        Jc, Jr = cols.depth, rows.depth
        cm = cols.column_means(av.leaf_rows(part.r0, part.r1))
        if check:
            with np.errstate(over="ignore", invalid="ignore"):
                V = self.A.value(cm[Jc], cols.sizes[Jc])
                div = self.row_divisor(self.vdiv, part.r0, part.r1)
                ok = np.all(np.isfinite(V if div is None else V / div))
            if not ok:
                raise ValueError(
                    f"{self.A.name}(f) is not finite for these logits (overflow); scale the "
                    "input or use a softmax-family nonlinearity, which is stabilised by row "
                    "shifts."
                )
            part.given[Jr, Jc] = V
        part.G[Jr] = cm
        for lvl in range(Jr - 1, part.top - 1, -1):
            lo, hi = part.s[lvl], part.e[lvl]
            part.G[lvl] = [rows.coarsen(m, lvl, lo, hi, 0) for m in part.G[lvl + 1]]
            if not keep_all:
                del part.G[lvl + 1]

    def A_at(self, part, lvl):
        if lvl not in part.A:
            sizes = self.av.cols.sizes
            part.A[lvl] = [
                part.given.pop((lvl, lc)) if (lvl, lc) in part.given else self.A.value(g, sizes[lc])
                for lc, g in enumerate(part.G[lvl])
            ]
            if lvl >= part.own_from:
                if lvl == 0:
                    self.row0 = list(part.A[lvl])
                self.col0[lvl].append(part.A[lvl][0])
        return part.A[lvl]

    # ----------------------------------------------------------------- pairs
    def run(self, part):
        """Every pair of row levels of the part, coarse to fine."""
        av, A = self.av, self.A
        cols, rows = av.cols, av.rows
        for lr in range(part.top, part.bottom):
            lr1 = lr + 1
            s0, s1, e1 = part.s[lr], part.s[lr1], part.e[lr1]
            G0, G1 = part.G[lr], part.G[lr1]
            A0, A1 = self.A_at(part, lr), self.A_at(part, lr1)
            pr = rows.parents[lr1][s1:e1] - s0
            wts = (*(w[s1:e1] for w in self.weights[lr1][:4]), self.weights[lr1][4])
            wdd = (*(w[s1:e1] for w in self.weights_dd[lr1][:4]), True)
            for total in self.sums:
                total.begin(pr)
            last = lr1 == part.bottom
            for lc in range(cols.depth):
                lc1 = lc + 1
                j, jp = lc, lr
                pc = cols.parents[lc1]
                ix = np.ix_(pr, pc)
                A00 = A0[lc][ix]
                # same operation order as c below, so that D == c bit for bit when A is linear
                D = A1[lc1] - A1[lc][:, pc] - A0[lc1][pr, :] + A00
                w = cols.sizes[lc1]
                self.mixed_sq[j, jp] += _compact_sq(D, None, w, wdd)
                if self.mixed_terms is not None:
                    self.keep(part, D, lc1, lr1, j, jp)
                if self.in_set[j, jp]:
                    P01 = G1[lc][:, pc]
                    P10 = G0[lc1][pr, :]
                    u = G0[lc][ix]
                    a = P10 - u
                    b = P01 - u
                    c = G1[lc1] - P01 - P10 + u
                    del P01, P10
                    t1, t2, fmax_rows = A.terms(u, A00, a, b, c, w)
                    del u, a, b, c
                    for total, term in zip(self.sums, (D, t1, t2), strict=True):
                        total.add(lc1, term)
                    T = t1 + t2
                    del t1, t2
                    self.err_sq[j, jp] += _compact_sq(D, T, w, wts)
                    del T
                    fmax = float((fmax_rows * wts[3]).max())
                    best = self.factor_max[j, jp]
                    self.factor_max[j, jp] = best if best >= fmax else fmax
                del D, A00
                # what this pair alone needed (the last row level keeps A at the finest
                # column level: the values)
                G0[lc] = A0[lc] = None
                if last:
                    G1[lc] = A1[lc] = None
            for total in self.sums:
                total.close()
            # this row level is done with (what it reports is recorded)
            del part.G[lr], part.A[lr], G0, A0

    def keep(self, part, D, lc1, lr1, j, jp):
        av = self.av
        order = av.rows.order
        pts = slice(part.r0, part.r1) if order is None else order[part.r0 : part.r1]
        full = D[np.ix_(av.row_labels[lr1][pts] - part.s[lr1], av.col_labels[lc1])]
        self.mixed_terms[j, jp][pts] = full if self.vdiv is None else full / self.vdiv[pts]


# Peak memory of a decomposition, in full matrices of the analysed shape (tracemalloc,
# benchmarks/bench_memory.py: 4.3 to 4.4 at 512 to 2048 points a side without the
# per-scale terms; the result keeps 4), and the extra ones that keep_terms adds
# (depth**2 + 2 depth kept, and 2 for the expansion of one term: 105 measured at 512).
_PEAK_MATRICES = 5


def _estimated_bytes(shape, row_tree, column_tree, keep_terms):
    depth = max(
        (t.n_levels - 1) if t is not None else int(n).bit_length() - 1
        for t, n in ((row_tree, shape[0]), (column_tree, shape[1]))
    )
    matrices = _PEAK_MATRICES + (depth * depth + 2 * depth + 2 if keep_terms else 0)
    return 8 * int(shape[0]) * int(shape[1]) * matrices


def _decompose(f, A, scales, row_tree, column_tree, keep_terms, original_shape):
    check_memory(
        _estimated_bytes(f.shape, row_tree, column_tree, keep_terms),
        f"the paraproduct decomposition of a {f.shape[0]} x {f.shape[1]} matrix"
        + (" with keep_terms=True" if keep_terms else ""),
    )
    row_shift = None
    # the analysed logits, in a C-ordered array of our own: the result keeps them
    analysed = np.empty(f.shape)
    if A.shift_rows:
        row_shift = np.max(f, axis=1, keepdims=True)
        np.subtract(f, row_shift, out=analysed)
    else:
        analysed[...] = f
    f = analysed
    A = A.prepare(f)
    av = _Averager(f, row_tree, column_tree)
    pairs = _parse_scales(scales, av)
    cols, rows = av.cols, av.rows
    Jc, Jr, J = cols.depth, rows.depth, av.depth
    run = _Pass(av, A, pairs, keep_terms)
    L, blocks = _plan(rows, f.shape[1], A.rowwise)

    carried = [None, None, None]
    if L > 0:
        # row levels 0..L whole; their averages at level L come block by block (checked)
        coarse = _Part(rows, 0, 0, 1, L, own_from=0)
        coarse.G[L] = [np.empty((rows.n_folders[L], n)) for n in cols.n_folders]
        for lo, hi in blocks:
            part = _Part(rows, L, lo, hi, Jr, own_from=Jr + 1)
            run.fill(part, check=True, keep_all=False)
            for lc in range(Jc + 1):
                coarse.G[L][lc][lo:hi] = part.G[L][lc]
        del part
        for lvl in range(L - 1, -1, -1):
            n = rows.n_folders[lvl]
            coarse.G[lvl] = [rows.coarsen(m, lvl, 0, n, 0) for m in coarse.G[lvl + 1]]
        run.run(coarse)
        run.A_at(coarse, L)  # reported even when there is no pair (one row level)
        carried = [total.carry for total in run.sums]
        for total in run.sums:
            total.carry = None
        del coarse

    # the finer row levels block by block: each block's rows of the sums are final at its
    # end, so the norms of the residual and of the omitted part are taken there
    # The sums carried from level L wait in the kept matrices themselves, folder q's row in
    # the row of its first point, which only q's block writes (after reading it): no
    # memory beyond the kept matrices.
    order = rows.order
    parked = rows.starts[L] if order is None else order[rows.starts[L]]
    outputs = []
    for k, C in enumerate(carried):
        outputs.append(np.empty(f.shape))
        if C is not None:
            outputs[-1][parked] = C
            carried[k] = True
        del C
    divisors = (run.vdiv, run.tdiv, run.tdiv)
    norms = [_BlockNorm() for _ in range(3)]  # values, residual, omitted part
    row_ranges = []
    for lo, hi in blocks:
        part = _Part(rows, L, lo, hi, Jr, own_from=L + 1 if L > 0 else 0)
        row_ranges.append((part.r0, part.r1))
        run.fill(part, check=L == 0)
        for total, out, C in zip(run.sums, outputs, carried, strict=True):
            total.carry = None if C is None else out[parked[lo:hi]]
        run.run(part)
        V = run.A_at(part, Jr)[Jc]
        vdiv = run.row_divisor(run.vdiv, part.r0, part.r1)
        if vdiv is not None:
            V = V / vdiv
        block = []
        for total, div in zip(run.sums, divisors, strict=True):
            C = total.carry
            if C is None:
                C = np.zeros(V.shape)
            else:
                div = run.row_divisor(div, part.r0, part.r1)
                C = C if div is None else C / div
            total.carry = None
            block.append(C)
        M, F, S = block
        norms[0].add(V)
        norms[1].add(M - (F + S))
        norms[2].add(V - M)
        for out, C in zip(outputs, block, strict=True):
            _write_rows(out, C, part.r0, part.r1, av, None)
        del part, block, M, F, S, C, V

    values_norm = norms[0].norm()
    in_eff = run.in_set.copy()
    in_eff[Jc:, :] = False
    in_eff[:, Jr:] = False
    scale_errors = np.full((J, J), np.nan)
    scale_errors[run.in_set] = 0.0  # pairs on a padded level have D = 0 and zero terms
    if values_norm != 0:
        scale_errors[in_eff] = np.sqrt(np.maximum(run.err_sq[in_eff], 0.0)) / values_norm
    col0 = [np.concatenate(p) if len(p) > 1 else p[0] for p in run.col0]
    compact = _Compact(
        av, A, run.vdiv, row_ranges, run.row0, col0, bool(run.in_set[:Jc, :Jr].all())
    )
    column_terms = row_terms = None
    if keep_terms:
        column_terms, row_terms = np.zeros((J, *f.shape)), np.zeros((J, *f.shape))
        for terms, columns in ((column_terms, True), (row_terms, False)):
            for j, term in _scale_terms(compact, columns):
                if term is not None:
                    terms[j] = term
    return ParaproductResult(
        nonlinearity=A.name,
        shape=tuple(f.shape),
        original_shape=tuple(original_shape),
        row_shift=row_shift,
        depth=J,
        scales=pairs,
        column_terms=column_terms,
        row_terms=row_terms,
        mixed_terms=run.mixed_terms,
        modelled=outputs[0],
        first_order=outputs[1],
        second_order=outputs[2],
        mixed_norms=np.sqrt(np.maximum(run.mixed_sq, 0.0)),
        scale_errors=scale_errors,
        first_factor_max=run.factor_max,
        relative_error=_ratio(norms[1].norm(), values_norm),
        relative_omitted=_ratio(norms[2].norm(), values_norm),
        _compact=compact,
    )
