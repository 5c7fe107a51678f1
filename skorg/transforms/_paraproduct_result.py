"""The result of a paraproduct decomposition: kept sums and fields computed on access."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

__all__ = ["ParaproductResult"]


# --------------------------------------------------------------------------- result
class _Compact:
    """What the full-size fields of a result are computed from on access.

    The analysed logits (in the averager), the nonlinearity bound to them (``A``; dropped,
    with ``values`` computed instead, when the result is pickled), the divisor of the
    values, the row blocks of the decomposition, and ``A`` at the compact averages of row
    level 0 (``row0[lc]``, one row) and of column level 0 (``col0[lr]``, one column).
    """

    def __init__(self, av, A, vdiv, row_ranges, row0, col0, all_in_set):
        self.av = av
        self.A = A
        self.vdiv = vdiv
        self.row_ranges = row_ranges
        self.row0 = row0
        self.col0 = col0
        self.all_in_set = all_in_set
        self.values = None

    def full(self, C, lc, lr):
        out = self.av.expand(C, lc, lr)
        return out if self.vdiv is None else out / self.vdiv

    def compute_values(self):
        if self.values is not None:
            return self.values.copy()
        av, cols = self.av, self.av.cols
        out = np.empty(av.f.shape)
        for r0, r1 in self.row_ranges:
            x = av.leaf_rows(r0, r1)
            if cols.order is not None:
                x = np.take(x, cols.order, axis=1)
            V = self.A.value(x, cols.sizes[cols.depth])
            _write_rows(out, V, r0, r1, av, self.vdiv)
        return out

    def without_nonlinearity(self):
        """A copy that holds ``values`` instead of ``A`` (whatever ``A`` is, it pickles)."""
        new = copy.copy(self)
        new.values = self.compute_values()
        new.A = None
        return new


def _write_rows(out, C, r0, r1, av, divisor):
    """Write leaf-order rows ``r0:r1`` (columns in leaf order) of a full matrix into ``out``.

    Divides by the per-row ``divisor`` as the full-size matrix would be divided.
    """
    rows, cols = av.rows, av.cols
    if cols.order is not None:
        C = np.take(C, cols.labels[cols.depth], axis=1)  # leaf order -> point order
    if rows.order is None:
        if divisor is None:
            out[r0:r1] = C
        else:
            np.divide(C, divisor[r0:r1], out=out[r0:r1])
    else:
        pts = rows.order[r0:r1]
        out[pts] = C if divisor is None else C / divisor[pts]


@dataclass(repr=False)
class ParaproductResult:
    """Every term of the paraproduct decomposition of ``A(f)``.

    Scale arrays are indexed ``[j, j']``: ``j`` the column scale, ``j'`` the row
    scale, as in ``P_{j,j'}`` (Fasina et al., 2025). ``depth`` is the number of scales per
    axis (``log2 N`` on a dyadic side; the deeper tree's depth otherwise).

    The decomposition keeps four matrices of the analysed shape: the analysed logits
    and the sums ``modelled``, ``first_order`` and ``second_order``. Every other
    full-size field is a property computed from those and from compact data each time
    it is read (nothing is cached): ``values``, ``coarse``, ``column_sum``, ``row_sum``
    and ``mixed_sum`` cost about one pass over the matrix (one evaluation of ``A`` for
    ``values``, ``depth`` additions for a column or row sum), the others one or two
    additions of kept matrices. Read a field once and keep it in a variable when it is
    used repeatedly. A pickled result carries ``values`` (one more matrix) instead of
    the nonlinearity, which need not pickle.

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
        ``A(f)`` (computed on access).
    coarse : ndarray
        ``A(P_{0,0} f)`` (computed on access).
    column_terms, row_terms : ndarray of shape (depth, n_rows, n_cols) or None
        ``A(P_{j+1,0} f) - A(P_{j,0} f)`` and ``A(P_{0,j'+1} f) - A(P_{0,j'} f)``
        (kept when ``keep_terms=True``).
    column_sum, row_sum : ndarray
        Their sums over the scales (computed on access, from ``A`` on the compact
        averages of row level 0 and of column level 0).
    mixed_terms : ndarray of shape (depth, depth, n_rows, n_cols) or None
        ``D_{j,j'}`` (kept when ``keep_terms=True``).
    mixed_sum : ndarray
        Sum of every ``D_{j,j'}`` (computed on access: a copy of ``modelled`` when
        ``scales`` holds every pair, otherwise the telescoped
        ``A(f) - A(P_{J,0} f) - A(P_{0,J} f) + A(P_{0,0} f)``).
    modelled : ndarray
        Sum of ``D_{j,j'}`` over ``scales`` (kept).
    first_order, second_order : ndarray
        Sums over ``scales`` of ``A'(u) c`` and ``A''(u) a b`` (kept).
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
        ``||residual|| / ||values||`` and ``||omitted|| / ||values||`` (Frobenius;
        computed during the decomposition).
    """

    nonlinearity: str
    shape: tuple
    original_shape: tuple
    row_shift: np.ndarray | None
    depth: int
    scales: np.ndarray
    column_terms: np.ndarray | None
    row_terms: np.ndarray | None
    mixed_terms: np.ndarray | None
    modelled: np.ndarray
    first_order: np.ndarray
    second_order: np.ndarray
    mixed_norms: np.ndarray
    scale_errors: np.ndarray
    first_factor_max: np.ndarray
    relative_error: float
    relative_omitted: float
    _compact: _Compact = field(repr=False)

    @property
    def values(self):
        return self._compact.compute_values()

    @property
    def coarse(self):
        cp = self._compact
        return cp.full(cp.row0[0], 0, 0)

    @property
    def column_sum(self):
        return _scale_sum(self._compact, columns=True)

    @property
    def row_sum(self):
        return _scale_sum(self._compact, columns=False)

    @property
    def mixed_sum(self):
        cp = self._compact
        if cp.all_in_set:
            return self.modelled.copy()
        Jc, Jr = cp.av.column_depth, cp.av.row_depth
        out = self.values
        out = out - cp.full(cp.row0[Jc], Jc, 0)
        out -= cp.full(cp.col0[Jr], 0, Jr)
        out += cp.full(cp.row0[0], 0, 0)
        return out

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

    def reconstruct(self):
        """The telescoping sum ``A(P_{0,0} f) + column + row + mixed terms`` (equals ``values``)."""
        return self.coarse + self.column_sum + self.row_sum + self.mixed_sum

    def average(self, j, jp):
        """``P_{j,j'}`` of the analysed (shifted) logits."""
        return self._compact.av.average(j, jp)

    def details(self, j, jp):
        """``(u, a, b, c)`` at scale ``(j, j')``, from the analysed logits."""
        if not (0 <= j < self.depth and 0 <= jp < self.depth):
            raise ValueError(f"(j, j') must lie in 0..{self.depth - 1}, got ({j}, {jp}).")
        return self._compact.av.details(j, jp)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_compact"] = self._compact.without_nonlinearity()
        return state

    def __repr__(self):
        return (
            f"ParaproductResult(nonlinearity={self.nonlinearity!r}, shape={self.shape}, "
            f"depth={self.depth}, n_scales={len(self.scales)}, "
            f"relative_error={self.relative_error:.3g}, "
            f"relative_omitted={self.relative_omitted:.3g})"
        )


def _scale_terms(cp, columns):
    """The column (or row) terms at full size, one scale at a time, in order."""
    av = cp.av
    axis, compact = (av.cols, cp.row0) if columns else (av.rows, cp.col0)
    for j in range(av.depth):
        lv, lv1 = min(j, axis.depth), min(j + 1, axis.depth)
        if lv1 == lv:
            yield j, None
            continue
        if columns:
            yield j, cp.full(compact[lv1] - compact[lv][:, axis.parents[lv1]], lv1, 0)
        else:
            yield j, cp.full(compact[lv1] - compact[lv][axis.parents[lv1], :], 0, lv1)


def _scale_sum(cp, columns):
    out = np.zeros(cp.av.f.shape)
    for _, term in _scale_terms(cp, columns):
        if term is not None:
            out += term
    return out


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
    return _ratio(_norm(x), _norm(ref))


def _ratio(num, den):
    if np.isnan(num):
        # an expansion term beyond the float64 range (inf - inf): the error is too large to
        # represent, not undefined
        return float("inf")
    if den == 0:
        return 0.0 if num == 0 else float("inf")
    with np.errstate(over="ignore"):
        return float(num / den)


class _BlockNorm:
    """Frobenius norm of a matrix given one row block at a time (as robust as ``_norm``)."""

    def __init__(self):
        self.scale, self.ssq, self.special = 1.0, 0.0, 0.0

    def add(self, x):
        if not x.size:
            return
        s = float(np.einsum("ij,ij->", x, x))
        if np.isfinite(s) and s > 1e-300:
            scale, ssq = 1.0, s
        else:
            m = float(np.max(np.abs(x)))
            if m == 0.0:
                return
            if not np.isfinite(m):  # inf, or nan (which wins)
                if not np.isnan(self.special):
                    self.special = m
                return
            scale, ssq = m, float(np.einsum("ij,ij->", x / m, x / m))
        if scale > self.scale:
            self.ssq = self.ssq * (self.scale / scale) ** 2 + ssq
            self.scale = scale
        else:
            self.ssq += ssq * (scale / self.scale) ** 2

    def norm(self):
        if self.special != 0.0:
            return float(self.special)
        return self.scale * float(np.sqrt(self.ssq))
