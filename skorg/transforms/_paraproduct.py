"""Tensor paraproduct of a nonlinearity on dyadic blocks or partition-tree folders.

See the user guide's "Reading the paraproduct verdict" and Fasina et al., arXiv:2506.15541.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.utils import check_array

from .._validation import check_memory
from ..trees import PartitionTree, dyadic_tree
from ._nonlinearities import get_nonlinearity

__all__ = ["ParaproductResult", "paraproduct_decomposition", "tensor_average"]

_RESIZE = ("tree", "crop", "pad", "error")


def _is_pow2(n):
    return n >= 1 and (n & (n - 1)) == 0


# --------------------------------------------------------------------------- averaging
def _dyadic_means(x):
    """Block means along the last axis at every dyadic level, root first; labels per level."""
    n = x.shape[-1]
    depth = n.bit_length() - 1
    means = [x]
    for _ in range(depth):
        m = means[-1]
        # pairwise halving; bitwise equal to the size-weighted tree mean on a dyadic tree
        means.append((m[..., 0::2] + m[..., 1::2]) * 0.5)
    means.reverse()
    labels = [np.arange(n) >> (depth - lvl) for lvl in range(depth + 1)]
    return means, labels


def _tree_means(x, tree):
    """Folder means along the last axis at every tree level, root first; labels per level."""
    depth = tree.n_levels - 1
    means = [None] * (depth + 1)
    means[depth] = x[..., tree.leaf_order]
    for lvl in range(depth - 1, -1, -1):
        nodes = tree.level_nodes(lvl)
        finer = tree.level_nodes(lvl + 1)
        first = tree.child_ptr[nodes] - finer[0]
        n_child = tree.child_ptr[nodes + 1] - tree.child_ptr[nodes]
        weighted = means[lvl + 1] * tree.size[finer]
        m = np.add.reduceat(weighted, first, axis=-1) / tree.size[nodes]
        single = n_child == 1
        if np.any(single):
            # a one-child folder has its child's mean; copying avoids a round-off step
            m[..., single] = means[lvl + 1][..., first[single]]
        means[lvl] = m
    labels = [tree.labels(lvl) for lvl in range(depth + 1)]
    return means, labels


class _Axis:
    """Folder bookkeeping of one axis at every level: labels, sizes, starts, parents."""

    def __init__(self, n, tree=None):
        self.tree = tree
        if tree is None:
            depth = n.bit_length() - 1
            self.labels = [np.arange(n) >> (depth - lvl) for lvl in range(depth + 1)]
            self.sizes = [np.full(1 << lvl, float(n >> lvl)) for lvl in range(depth + 1)]
            self.starts = [np.arange(1 << lvl) * (n >> lvl) for lvl in range(depth + 1)]
            self.parents = [None] + [np.arange(1 << lvl) >> 1 for lvl in range(1, depth + 1)]
            self.order = None
        else:
            depth = tree.n_levels - 1
            self.labels = [tree.labels(lvl) for lvl in range(depth + 1)]
            nodes = [tree.level_nodes(lvl) for lvl in range(depth + 1)]
            self.sizes = [tree.size[nd].astype(float) for nd in nodes]
            self.starts = [tree.start[nd] for nd in nodes]
            self.parents = [None] + [
                tree.parent[nodes[lvl]] - tree.level_ptr[lvl - 1] for lvl in range(1, depth + 1)
            ]
            self.order = tree.leaf_order
        self.depth = depth

    def means(self, x):
        return _dyadic_means(x)[0] if self.tree is None else _tree_means(x, self.tree)[0]

    def reduce(self, vec, lvl, ufunc):
        """``ufunc`` over each folder of level ``lvl`` of a per-point vector."""
        ordered = vec if self.order is None else vec[self.order]
        return ufunc.reduceat(ordered, self.starts[lvl])


class _Averager:
    """All averages P_{j,j'} f of one matrix, stored compactly (folder x folder means)."""

    def __init__(self, f, row_tree=None, column_tree=None):
        self.cols = _Axis(f.shape[1], column_tree)
        self.rows = _Axis(f.shape[0], row_tree)
        # grid[column level][row level]: (n_row_folders, n_column_folders)
        # C order on both paths: row sums (softmax) then add up in the same order
        self.grid = [
            [np.ascontiguousarray(m.T) for m in self.rows.means(cm.T)] for cm in self.cols.means(f)
        ]
        self.column_depth = self.cols.depth
        self.row_depth = self.rows.depth
        # the shallower tree is padded with its last level (its averages stop changing)
        self.depth = max(self.column_depth, self.row_depth)
        self.row_labels = self.rows.labels
        self.col_labels = self.cols.labels

    def levels(self, j, jp):
        return min(j, self.column_depth), min(jp, self.row_depth)

    def expand(self, C, lc, lr):
        """A compact (row folders x column folders) matrix at full size, in point order."""
        return C[np.ix_(self.row_labels[lr], self.col_labels[lc])]

    def average(self, j, jp):
        """P_{j,j'} f at full size; scales beyond an axis's depth use its last level."""
        lc, lr = self.levels(j, jp)
        return self.expand(self.grid[lc][lr], lc, lr)

    def details(self, j, jp):
        u = self.average(j, jp)
        p10 = self.average(j + 1, jp)
        p01 = self.average(j, jp + 1)
        p11 = self.average(j + 1, jp + 1)
        return u, p10 - u, p01 - u, p11 - p01 - p10 + u

    def push_down(self, acc):
        """Sum compact matrices keyed by (column level, row level) at full size.

        Each one is refined one level at a time, columns first, so the whole sum
        costs about as much as the largest grid instead of one full expansion each.
        """
        Jc, Jr = self.column_depth, self.row_depth
        cur = dict(acc)
        for lr in range(Jr + 1):
            for lc in range(Jc):
                if (lc, lr) in cur:
                    up = cur.pop((lc, lr))[:, self.cols.parents[lc + 1]]
                    cur[lc + 1, lr] = up + cur[lc + 1, lr] if (lc + 1, lr) in cur else up
            if lr < Jr and (Jc, lr) in cur:
                up = cur.pop((Jc, lr))[self.rows.parents[lr + 1], :]
                cur[Jc, lr + 1] = up + cur[Jc, lr + 1] if (Jc, lr + 1) in cur else up
        if (Jc, Jr) not in cur:
            return np.zeros((len(self.row_labels[Jr]), len(self.col_labels[Jc])))
        return self.expand(cur[Jc, Jr], Jc, Jr)


# --------------------------------------------------------------------------- validation
# Logits beyond this magnitude would overflow the sums behind the block means and the row
# shifts (the decomposition is not homogeneous, so it cannot be rescaled).
MAX_LOGIT = 1e300


def _check_matrix(f, name="f"):
    try:
        f = check_array(
            f, dtype=np.float64, ensure_all_finite=True, ensure_2d=True, input_name=name, copy=False
        )
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    f = np.asarray(f, dtype=np.float64)
    if f.size and float(np.max(np.abs(f))) > MAX_LOGIT:
        raise ValueError(
            f"{name} has entries of magnitude up to {float(np.max(np.abs(f))):.3g}; the "
            f"paraproduct needs |{name}| <= {MAX_LOGIT:g} (its block means and row shifts "
            "would overflow)."
        )
    return f


def _check_tree(tree, n, name, axis):
    if tree is None:
        return None
    if not isinstance(tree, PartitionTree):
        raise TypeError(f"{name} must be a PartitionTree or None, got {type(tree).__name__}.")
    if tree.n_points != n:
        raise ValueError(
            f"{name} has {tree.n_points} points but the matrix has {n} {axis}; "
            f"the {axis} tree must be built on exactly the matrix's {axis}."
        )
    return tree


def _resize(f, resize, row_tree, column_tree):
    """Return the analysed matrix and the trees (None means the fast dyadic path)."""
    if resize not in _RESIZE:
        raise ValueError(f"resize must be one of {_RESIZE}, got {resize!r}.")
    n_rows, n_cols = f.shape
    if row_tree is not None or column_tree is not None:
        if resize in ("crop", "pad"):
            raise ValueError(
                f"resize={resize!r} cannot be combined with explicit trees; the trees define "
                "the folders, so use resize='tree'."
            )
        row_tree = _check_tree(row_tree, n_rows, "row_tree", "rows")
        column_tree = _check_tree(column_tree, n_cols, "column_tree", "columns")
        row_tree = dyadic_tree(n_rows) if row_tree is None else row_tree
        column_tree = dyadic_tree(n_cols) if column_tree is None else column_tree
        return f, row_tree, column_tree
    if _is_pow2(n_rows) and _is_pow2(n_cols):
        return f, None, None
    if resize == "error":
        raise ValueError(
            f"The dyadic paraproduct needs sides that are powers of two, got shape {f.shape}; "
            "use resize='tree' (balanced trees on any size), 'crop' or 'pad'."
        )
    if resize == "crop":
        rows, cols = 1 << (n_rows.bit_length() - 1), 1 << (n_cols.bit_length() - 1)
        return f[:rows, :cols], None, None
    if resize == "pad":
        rows, cols = 1 << (n_rows - 1).bit_length(), 1 << (n_cols - 1).bit_length()
        return np.pad(f, ((0, rows - n_rows), (0, cols - n_cols)), mode="edge"), None, None
    return f, dyadic_tree(n_rows), dyadic_tree(n_cols)


def _parse_scales(scales, av):
    depth = av.depth
    if isinstance(scales, str):
        if scales == "all":
            band_c = band_r = np.arange(depth)
        elif scales == "paper":
            band_c, band_r = np.arange(4, av.column_depth - 2), np.arange(4, av.row_depth - 2)
        else:
            raise ValueError(f"scales must be 'all', 'paper' or integers, got {scales!r}.")
        pairs = np.array([(j, jp) for j in band_c for jp in band_r], dtype=np.intp)
        return pairs.reshape(-1, 2)
    arr = np.asarray(scales)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"scales must hold integers, got dtype {arr.dtype}.")
    if arr.ndim == 1:
        pairs = np.array([(j, jp) for j in arr for jp in arr], dtype=np.intp)
    elif arr.ndim == 2 and arr.shape[1] == 2:
        pairs = arr.astype(np.intp)
    else:
        raise ValueError(
            "scales must be 'all', 'paper', a 1-D band of scales (used on both axes) or an "
            f"array of (j, j') pairs of shape (m, 2); got shape {arr.shape}."
        )
    pairs = pairs.reshape(-1, 2)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= depth):
        raise ValueError(
            f"scales must lie in 0..{depth - 1} for this matrix (depth {depth}), "
            f"got values in {pairs.min()}..{pairs.max()}."
        )
    return np.unique(pairs, axis=0)


# --------------------------------------------------------------------------- result
@dataclass(repr=False)
class ParaproductResult:
    """Every term of the paraproduct decomposition of ``A(f)``.

    Scale arrays are indexed ``[j, j']``: ``j`` the column scale, ``j'`` the row
    scale, as in ``P_{j,j'}`` (Fasina et al., 2025). ``depth`` is the number of scales per
    axis (``log2 N`` on a dyadic side; the deeper tree's depth otherwise).

    Attributes
    ----------
    nonlinearity : str
    shape, original_shape : tuple
        Shape analysed (after ``crop``/``pad``) and shape given.
    row_shift : ndarray of shape (n_rows, 1) or None
        Row maxima subtracted from the logits first (softmax family).
    depth : int
    scales : ndarray of shape (m, 2)
        The ``(j, j')`` pairs of the paraproduct.
    values : ndarray
        ``A(f)``.
    coarse : ndarray
        ``A(P_{0,0} f)``.
    column_terms, row_terms : ndarray of shape (depth, n_rows, n_cols) or None
        ``A(P_{j+1,0} f) - A(P_{j,0} f)`` and ``A(P_{0,j'+1} f) - A(P_{0,j'} f)``
        (kept when ``keep_terms=True``).
    column_sum, row_sum : ndarray
        Their sums over the scales (always kept).
    mixed_terms : ndarray of shape (depth, depth, n_rows, n_cols) or None
        ``D_{j,j'}`` (kept when ``keep_terms=True``).
    mixed_sum : ndarray
        Sum of every ``D_{j,j'}``.
    modelled : ndarray
        Sum of ``D_{j,j'}`` over ``scales``.
    first_order, second_order : ndarray
        Sums over ``scales`` of ``A'(u) c`` and ``A''(u) a b``.
    paraproduct : ndarray
        ``first_order + second_order``.
    residual : ndarray
        ``modelled - paraproduct`` (the expansion's remainder).
    omitted : ndarray
        ``values - modelled``: the part of ``A(f)`` the scale set leaves out.
    approximation : ndarray
        ``omitted + paraproduct`` (``= values - residual``).
    mixed_norms, scale_errors, first_factor_max : ndarray of shape (depth, depth)
        ``||D_{j,j'}||_F``; the remainder at that scale relative to the whole,
        ``||D - A'c - A''ab||_F / ||A(f)||_F`` (finite even where ``D`` underflows
        to 0; divide by ``mixed_norms`` for the error relative to ``D``); the
        largest derivative-factor entry at ``u``. NaN outside ``scales``
        (``mixed_norms`` is filled everywhere).
    relative_error, relative_omitted : float
        ``||residual|| / ||values||`` and ``||omitted|| / ||values||`` (Frobenius).
    """

    nonlinearity: str
    shape: tuple
    original_shape: tuple
    row_shift: np.ndarray | None
    depth: int
    scales: np.ndarray
    values: np.ndarray
    coarse: np.ndarray
    column_terms: np.ndarray | None
    row_terms: np.ndarray | None
    column_sum: np.ndarray
    row_sum: np.ndarray
    mixed_terms: np.ndarray | None
    mixed_sum: np.ndarray
    modelled: np.ndarray
    first_order: np.ndarray
    second_order: np.ndarray
    mixed_norms: np.ndarray
    scale_errors: np.ndarray
    first_factor_max: np.ndarray
    _averager: _Averager = field(repr=False)

    @property
    def paraproduct(self):
        return self.first_order + self.second_order

    @property
    def residual(self):
        return self.modelled - self.paraproduct

    @property
    def omitted(self):
        return self.values - self.modelled

    @property
    def approximation(self):
        return self.omitted + self.paraproduct

    @property
    def relative_error(self):
        return _rel(self.residual, self.values)

    @property
    def relative_omitted(self):
        return _rel(self.omitted, self.values)

    def reconstruct(self):
        """The telescoping sum ``A(P_{0,0} f) + column + row + mixed terms`` (equals ``values``)."""
        return self.coarse + self.column_sum + self.row_sum + self.mixed_sum

    def average(self, j, jp):
        """``P_{j,j'}`` of the analysed (shifted) logits."""
        return self._averager.average(j, jp)

    def details(self, j, jp):
        """``(u, a, b, c)`` at scale ``(j, j')``, from the analysed logits."""
        if not (0 <= j < self.depth and 0 <= jp < self.depth):
            raise ValueError(f"(j, j') must lie in 0..{self.depth - 1}, got ({j}, {jp}).")
        return self._averager.details(j, jp)

    def __repr__(self):
        return (
            f"ParaproductResult(nonlinearity={self.nonlinearity!r}, shape={self.shape}, "
            f"depth={self.depth}, n_scales={len(self.scales)}, "
            f"relative_error={self.relative_error:.3g}, "
            f"relative_omitted={self.relative_omitted:.3g})"
        )


def _norm(x):
    # einsum avoids BLAS threading overhead that makes np.linalg.norm slow on large matrices
    value = float(np.sqrt(np.einsum("ij,ij->", x, x)))
    if np.isfinite(value) and value > 1e-150:
        return value
    # the squares over- or underflowed: scale by the largest magnitude first
    m = float(np.max(np.abs(x))) if x.size else 0.0
    if m == 0.0 or not np.isfinite(m):
        return m if not np.isnan(m) else float("nan")
    return m * float(np.sqrt(np.einsum("ij,ij->", x / m, x / m)))


def _rel(x, ref):
    num, den = _norm(x), _norm(ref)
    if np.isnan(num):
        # an expansion term beyond the float64 range (inf - inf): the error is too large to
        # represent, not undefined
        return float("inf")
    if den == 0:
        return 0.0 if num == 0 else float("inf")
    with np.errstate(over="ignore"):
        return float(num / den)


# --------------------------------------------------------------------------- core
def _row_weights(av, alpha, beta):
    """Per row level: folder sums of alpha^2, alpha*beta, beta^2 and the folder max of beta.

    Full-size norms of ``alpha_i D[r(i), k] - beta_i T[r(i), k]`` then follow from
    compact matrices (``None`` means 1).
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
            out.append((saa, saa, saa, red(be, lr, np.maximum)))
        else:
            sab, sbb = red(al * be, lr, np.add), red(be * be, lr, np.add)
            out.append((saa, sab, sbb, red(be, lr, np.maximum)))
    return out


def _compact_norm(D, T, w, weights):
    """Full-size Frobenius norm of ``alpha D - beta T`` (``T=None``: of ``alpha D``)."""
    saa, sab, sbb, _ = weights
    if T is None:
        return float(np.sqrt(max(np.einsum("i,ij,ij,j->", saa, D, D, w), 0.0)))
    if sab is saa:
        # same scaling on both: one sum, no cancellation between large terms
        E = D - T
        return float(np.sqrt(max(np.einsum("i,ij,ij,j->", saa, E, E, w), 0.0)))
    total = (
        np.einsum("i,ij,ij,j->", saa, D, D, w)
        - 2 * np.einsum("i,ij,ij,j->", sab, D, T, w)
        + np.einsum("i,ij,ij,j->", sbb, T, T, w)
    )
    return float(np.sqrt(max(total, 0.0)))


# Peak memory of a decomposition, in full matrices of the analysed shape (measured with
# tracemalloc at 256 to 1024 points a side: 38 to 39 without the per-scale terms), and the
# extra ones that keep_terms adds (depth**2 + 2 depth).
_PEAK_MATRICES = 40


def _estimated_bytes(shape, row_tree, column_tree, keep_terms):
    depth = max(
        (t.n_levels - 1) if t is not None else int(n).bit_length() - 1
        for t, n in ((row_tree, shape[0]), (column_tree, shape[1]))
    )
    matrices = _PEAK_MATRICES + (depth * depth + 2 * depth if keep_terms else 0)
    return 8 * int(shape[0]) * int(shape[1]) * matrices


def _decompose(f, A, scales, row_tree, column_tree, keep_terms, original_shape):
    check_memory(
        _estimated_bytes(f.shape, row_tree, column_tree, keep_terms),
        f"the paraproduct decomposition of a {f.shape[0]} x {f.shape[1]} matrix"
        + (" with keep_terms=True" if keep_terms else ""),
    )
    row_shift = None
    if A.shift_rows:
        row_shift = np.max(f, axis=1, keepdims=True)
        f = f - row_shift
    A = A.prepare(f)
    av = _Averager(f, row_tree, column_tree)
    J = av.depth
    pairs = _parse_scales(scales, av)
    in_set = np.zeros((J, J), dtype=bool)
    in_set[pairs[:, 0], pairs[:, 1]] = True
    vdiv, tdiv = A.value_divisor, A.terms_divisor
    alpha = None if vdiv is None else 1.0 / vdiv
    beta = alpha if tdiv is vdiv else (None if tdiv is None else 1.0 / tdiv)
    weights = _row_weights(av, alpha, beta)
    weights_dd = _row_weights(av, alpha, alpha)

    cache = {}

    def A_at(lc, lr):
        # A on the compact grid; column folder sizes weight row-wise maps such as softmax
        if (lc, lr) not in cache:
            cache[lc, lr] = A.value(av.grid[lc][lr], av.cols.sizes[lc])
        return cache[lc, lr]

    def full(C, lc, lr, divisor=vdiv):
        out = av.expand(C, lc, lr)
        return out if divisor is None else out / divisor

    Jc, Jr = av.column_depth, av.row_depth
    with np.errstate(over="ignore", invalid="ignore"):
        values = full(A_at(Jc, Jr), Jc, Jr)
    if not np.all(np.isfinite(values)):
        raise ValueError(
            f"{A.name}(f) is not finite for these logits (overflow); scale the input or use a "
            "softmax-family nonlinearity, which is stabilised by row shifts."
        )
    values_norm = _norm(values)
    shape = f.shape
    coarse = full(A_at(0, 0), 0, 0)
    # per-scale terms only on request (2 depth full matrices); their sums always
    column_terms = np.zeros((J, *shape)) if keep_terms else None
    row_terms = np.zeros((J, *shape)) if keep_terms else None
    column_sum = np.zeros(shape)
    row_sum = np.zeros(shape)
    for j in range(J):
        lc, lc1 = min(j, Jc), min(j + 1, Jc)
        if lc1 > lc:
            term = full(A_at(lc1, 0) - A_at(lc, 0)[:, av.cols.parents[lc1]], lc1, 0)
            column_sum += term
            if keep_terms:
                column_terms[j] = term
        lr, lr1 = min(j, Jr), min(j + 1, Jr)
        if lr1 > lr:
            term = full(A_at(0, lr1) - A_at(0, lr)[av.rows.parents[lr1], :], 0, lr1)
            row_sum += term
            if keep_terms:
                row_terms[j] = term

    mixed_terms = np.zeros((J, J, *shape)) if keep_terms else None
    acc = {"mixed": {}, "modelled": {}, "first": {}, "second": {}}
    mixed_norms = np.zeros((J, J))
    scale_errors = np.full((J, J), np.nan)
    factor_max = np.full((J, J), np.nan)
    scale_errors[in_set] = 0.0  # pairs on a padded level have D = 0 and zero terms

    def add(key, grid, C):
        store = acc[key]
        store[grid] = C + store[grid] if grid in store else C

    for jp in range(J):
        for j in range(J):
            lc, lr = av.levels(j, jp)
            lc1, lr1 = av.levels(j + 1, jp + 1)
            if lc1 == lc or lr1 == lr:
                continue  # a padded level: P_{j+1,.} = P_{j,.}, so D and every term vanish
            pc, pr = av.cols.parents[lc1], av.rows.parents[lr1]
            P11 = av.grid[lc1][lr1]
            P01 = av.grid[lc][lr1][:, pc]
            P10 = av.grid[lc1][lr][pr, :]
            u = av.grid[lc][lr][np.ix_(pr, pc)]
            A00 = A_at(lc, lr)[np.ix_(pr, pc)]
            # same operation order as c below, so that D == c bit for bit when A is linear
            D = A_at(lc1, lr1) - A_at(lc, lr1)[:, pc] - A_at(lc1, lr)[pr, :] + A00
            w = av.cols.sizes[lc1]
            add("mixed", (lc1, lr1), D)
            mixed_norms[j, jp] = _compact_norm(D, None, w, weights_dd[lr1])
            if keep_terms:
                mixed_terms[j, jp] = full(D, lc1, lr1)
            if not in_set[j, jp]:
                continue
            a = P10 - u
            b = P01 - u
            c = P11 - P01 - P10 + u
            t1, t2, fmax_rows = A.terms(u, A00, a, b, c, w)
            add("modelled", (lc1, lr1), D)
            add("first", (lc1, lr1), t1)
            add("second", (lc1, lr1), t2)
            err = _compact_norm(D, t1 + t2, w, weights[lr1])
            scale_errors[j, jp] = 0.0 if values_norm == 0 else err / values_norm
            factor_max[j, jp] = float(np.max(fmax_rows * weights[lr1][3]))

    def summed(key, divisor):
        out = av.push_down(acc[key])
        return out if divisor is None else out / divisor

    mixed_sum, modelled = summed("mixed", vdiv), summed("modelled", vdiv)
    first_order, second_order = summed("first", tdiv), summed("second", tdiv)

    return ParaproductResult(
        nonlinearity=A.name,
        shape=tuple(shape),
        original_shape=tuple(original_shape),
        row_shift=row_shift,
        depth=J,
        scales=pairs,
        values=values,
        coarse=coarse,
        column_terms=column_terms,
        row_terms=row_terms,
        column_sum=column_sum,
        row_sum=row_sum,
        mixed_terms=mixed_terms,
        mixed_sum=mixed_sum,
        modelled=modelled,
        first_order=first_order,
        second_order=second_order,
        mixed_norms=mixed_norms,
        scale_errors=scale_errors,
        first_factor_max=factor_max,
        _averager=av,
    )


# --------------------------------------------------------------------------- public
def tensor_average(f, j, jp, *, row_tree=None, column_tree=None):
    """The averaging operator ``P_{j,j'}``: block (or folder) means of a matrix.

    Without trees the sides must be powers of two and ``P_{j,j'} f`` replaces
    ``f`` on each block of ``n_cols / 2**j`` columns and ``n_rows / 2**j'``
    rows by the block mean. With trees, the blocks are the folders of level
    ``j`` of ``column_tree`` times the folders of level ``j'`` of ``row_tree``
    (a missing tree is :func:`~skorg.trees.dyadic_tree` on that axis; a level
    past a tree's depth is its leaf level).

    Parameters
    ----------
    f : array-like of shape (n_rows, n_cols)
    j, jp : int
        Column scale and row scale (``>= 0``).
    row_tree, column_tree : PartitionTree, optional

    Returns
    -------
    average : ndarray of shape (n_rows, n_cols)

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.transforms import tensor_average
    >>> tensor_average(np.arange(4.0).reshape(2, 2), 1, 0)
    array([[1., 2.],
           [1., 2.]])
    """
    f = _check_matrix(f)
    for name, val in (("j", j), ("jp", jp)):
        if not isinstance(val, (int, np.integer)) or val < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {val!r}.")
    f, row_tree, column_tree = _resize(f, "error", row_tree, column_tree)
    return _Averager(f, row_tree, column_tree).average(int(j), int(jp))


def paraproduct_decomposition(
    f,
    nonlinearity="softmax",
    *,
    scales="all",
    row_tree=None,
    column_tree=None,
    resize="tree",
    keep_terms=False,
):
    """Telescoping decomposition and tensor paraproduct of ``A(f)``.

    With ``u = P_{j,j'} f`` and the details ``a`` (column), ``b`` (row), ``c``
    (mixed) the exact identity is::

        A(f) = A(P_{0,0} f) + sum_j [A(P_{j+1,0} f) - A(P_{j,0} f)]
               + sum_j' [A(P_{0,j'+1} f) - A(P_{0,j'} f)] + sum_{j,j'} D_{j,j'}

    and over the chosen ``scales`` each ``D_{j,j'}`` is expanded as
    ``A'(u) c + A''(u) a b``; the result reports both orders, the remainder and
    the omitted part.

    Parameters
    ----------
    f : array-like of shape (n_rows, n_cols)
        Logits (rows = queries). Finite values.
    nonlinearity : str, Nonlinearity or callable, default="softmax"
        ``identity``, ``square``, ``exp``, ``tanh``, ``sigmoid``, ``softmax``
        (row-wise, true derivatives), ``softmax_exp`` (the paper's ``A' = A'' =
        exp`` with the row normalizer held constant) or ``softmax_collapsed``
        (the paper's Eq. 18, ``A' = A'' = 1``); or an
        :class:`EntrywiseNonlinearity`, or a callable (derivatives by finite
        differences).
    scales : {"all", "paper"} or array-like of int, default="all"
        The ``(j, j')`` pairs expanded: ``"all"``; ``"paper"`` (the band
        ``range(4, depth - 2)`` on each axis, as in the paper); a 1-D band used
        on both axes; or an ``(m, 2)`` array of pairs.
    row_tree, column_tree : PartitionTree, optional
        Folders replace dyadic blocks (the non-dyadic version). A missing one is
        the balanced :func:`~skorg.trees.dyadic_tree` on that axis.
    resize : {"tree", "crop", "pad", "error"}, default="tree"
        What to do without trees when a side is not a power of two: balanced
        binary trees on the sides as given (``"tree"``, no data is changed);
        keep the top-left power-of-two block (``"crop"``, as the paper did);
        edge-pad to the next powers of two (``"pad"``; the decomposition is then
        of the padded matrix); or raise (``"error"``).
    keep_terms : bool, default=False
        Keep every per-scale term (``depth**2 + 2 depth`` full matrices: 1.4 GB at
        2048 x 2048); the sums over scales are always kept. Before it starts the
        function compares its estimated memory with the working-memory budget
        (see Notes) and raises ``MemoryError`` with the figure when it would not fit.

    Returns
    -------
    result : ParaproductResult

    Notes
    -----
    Softmax-family nonlinearities analyse ``f - max_k f[i, k]``. Softmax is
    unchanged by this row shift, and so are the exact terms and the true-
    derivative paraproduct (a row constant moves ``u`` and ``b`` by row
    constants, which ``Ds`` and ``D^2 s`` annihilate) while the paper's
    variants are not; after the shift every block mean is ``<= 0``, so
    ``exp(P f) <= 1`` and the normalizer ``Z_i`` lies in ``[1, n_cols]``: no
    overflow for any logit size. Details ``a, b, c`` are each computed once per
    scale; they are not accumulated across scales.

    On a dyadic tree the tree version equals the dyadic version bit for bit
    (folder means are size-weighted child means; halving is exact in binary).

    Every term is computed on compact folder x folder grids (row sums of the
    softmax weighted by the column folder sizes) and the sums over scales are
    refined one level at a time, so all scales cost about ``O(n_rows n_cols)``
    (plus, with ``keep_terms``, one full matrix per term). Memory: the result holds
    about 12 matrices of the input's size and the computation peaks near 40 (1.3 GB
    at 2048 x 2048), plus ``depth**2 + 2 depth`` with ``keep_terms``; when that
    estimate exceeds the working-memory budget (half the physical memory, or the
    ``SKORG_MAX_MEMORY`` environment variable in MiB) a ``MemoryError`` naming both
    figures is raised before anything is allocated.

    References
    ----------
    .. [1] Fasina, "Quasilinearization with regularizing tensor paraproducts",
       arXiv 2503.12629 (2025).
    .. [2] Fasina, Pohle, Su, Coifman, "Intrinsic and Extrinsic Organized
       Attention", arXiv 2506.15541 (2025).

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.transforms import paraproduct_decomposition
    >>> f = np.arange(16.0).reshape(4, 4) / 8
    >>> res = paraproduct_decomposition(f, "square")
    >>> bool(np.allclose(res.reconstruct(), f**2))
    True
    >>> res.depth, len(res.scales)
    (2, 4)
    """
    f = _check_matrix(f)
    original_shape = f.shape
    A = get_nonlinearity(nonlinearity)
    f, row_tree, column_tree = _resize(f, resize, row_tree, column_tree)
    return _decompose(f, A, scales, row_tree, column_tree, bool(keep_terms), original_shape)
