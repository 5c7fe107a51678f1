"""Nonlinearities for the tensor paraproduct: values, first and second derivatives.

A nonlinearity ``A`` acts on a whole matrix. It knows three things at a point ``u`` (a matrix):
its value ``A(u)``, the first-order term ``A'(u)[h]`` and the second-order term ``A''(u)[h, k]``
for direction matrices ``h`` and ``k``. Entrywise functions multiply (``A'(u) * h``); the row-wise
softmax applies its Jacobian and second derivative row by row (Fasina et al., arXiv:2506.15541).

Softmax-family nonlinearities are *prepared* on the logits: they work on the row-shifted logits
``f - max_k f[i, k]`` (same softmax), which keeps every exponential at most 1.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

__all__ = ["NONLINEARITIES", "EntrywiseNonlinearity", "Nonlinearity", "get_nonlinearity"]


class Nonlinearity:
    """Base class: a matrix map ``A`` with its first and second derivative actions.

    Subclasses implement :meth:`value`, :meth:`first`, :meth:`second` and
    :meth:`first_factor_max`. The decomposition evaluates them on compact
    matrices (one row per row folder, one column per column folder); ``w``
    then holds the column folder sizes, which a row-wise map such as softmax
    must use as weights in its row sums (``None`` means unit weights).

    ``shift_rows`` tells the decomposition to subtract each row's maximum from
    the logits first (done for the softmax family, whose value is unchanged by
    it). :meth:`prepare` returns the nonlinearity bound to one logit matrix.
    ``value_divisor`` / ``terms_divisor`` (``None`` or one number per row of
    the logits) divide the values / the expansion terms at full size: the
    paper's variants hold the row normalizer ``Z_i`` of the logits constant.
    """

    name = "nonlinearity"
    shift_rows = False
    value_divisor = None
    terms_divisor = None

    def prepare(self, f):
        """Return the nonlinearity to use on the (already shifted) logits ``f``."""
        return self

    def value(self, u, w=None):
        raise NotImplementedError

    def first(self, u, h, w=None):
        raise NotImplementedError

    def second(self, u, h, k, w=None):
        raise NotImplementedError

    def first_factor_max(self, u, w=None):
        """Largest magnitude of an entry of the first-derivative factor at ``u``."""
        return float(np.max(self.terms(u, self.value(u, w), u, u, u, w)[2]))

    def terms(self, u, Au, a, b, c, w=None):
        """``(A'(u) c, A''(u) a b, per-row max |A'(u)|)``; ``Au = value(u, w)``."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r})"


class EntrywiseNonlinearity(Nonlinearity):
    """An entrywise function ``A`` with its derivatives ``A'`` and ``A''``.

    Derivatives that are not given are computed by central finite differences
    with steps ``eps**(1/3) * max(1, |x|)`` (first) and ``eps**(1/4) * max(1, |x|)``
    (second), which balance truncation against round-off.

    Parameters
    ----------
    func : callable
        Vectorised ``A``: ndarray in, ndarray of the same shape out.
    derivative : callable, optional
        Vectorised ``A'``.
    second_derivative : callable, optional
        Vectorised ``A''``.
    name : str, optional
        Label used in reports.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.transforms import EntrywiseNonlinearity
    >>> cube = EntrywiseNonlinearity(lambda t: t**3, name="cube")
    >>> u, h = np.array([[2.0]]), np.array([[1.0]])
    >>> bool(np.isclose(cube.first(u, h)[0, 0], 12.0))
    True
    """

    rowwise = True

    def __init__(self, func, derivative=None, second_derivative=None, *, name=None):
        if not callable(func):
            raise TypeError(f"func must be callable, got {type(func).__name__}.")
        for label, d in (("derivative", derivative), ("second_derivative", second_derivative)):
            if d is not None and not callable(d):
                raise TypeError(f"{label} must be callable or None, got {type(d).__name__}.")
        self.func = func
        self.derivative = derivative
        self.second_derivative = second_derivative
        self.name = name if name is not None else getattr(func, "__name__", "custom")

    @staticmethod
    def _apply(f, x, label):
        """``f(x)`` as a float array of the shape of x: entrywise, or one number for every
        entry (a constant, say a derivative ``lambda t: 2.0``); any other shape is refused,
        as broadcasting it would mix entries."""
        out = np.asarray(f(x), dtype=float)
        if out.shape != np.shape(x):
            if out.ndim:
                raise ValueError(
                    f"the nonlinearity's {label} must be entrywise, returning an array of the "
                    f"shape of its input {np.shape(x)} (or one number); got shape {out.shape}."
                )
            out = np.full(np.shape(x), float(out))
        return out

    def _d1(self, x):
        if self.derivative is not None:
            return self._apply(self.derivative, x, "derivative")
        step = np.finfo(float).eps ** (1 / 3) * np.maximum(1.0, np.abs(x))
        step = (x + step) - x  # a step that is exactly representable around x
        f = self.func
        return (self._apply(f, x + step, "func") - self._apply(f, x - step, "func")) / (2 * step)

    def _d2(self, x):
        if self.second_derivative is not None:
            return self._apply(self.second_derivative, x, "second_derivative")
        step = np.finfo(float).eps ** (1 / 4) * np.maximum(1.0, np.abs(x))
        step = (x + step) - x
        f = self.func
        centre = 2 * self._apply(f, x, "func")
        return (self._apply(f, x + step, "func") - centre + self._apply(f, x - step, "func")) / (
            step**2
        )

    def value(self, u, w=None):
        return self._apply(self.func, u, "func")

    def first(self, u, h, w=None):
        return self._d1(u) * h

    def second(self, u, h, k, w=None):
        return self._d2(u) * h * k

    def terms(self, u, Au, a, b, c, w=None):
        d1 = self._d1(u)
        return d1 * c, self._d2(u) * a * b, np.abs(d1).max(axis=-1)


def _square(t):
    return t * t


def _tanh_d1(t):
    th = np.tanh(t)
    return 1.0 - th * th


def _tanh_d2(t):
    th = np.tanh(t)
    return -2.0 * th * (1.0 - th * th)


def _sigmoid_d1(t):
    s = expit(t)
    return s * (1.0 - s)


def _sigmoid_d2(t):
    s = expit(t)
    return s * (1.0 - s) * (1.0 - 2.0 * s)


def _detail_scale(*arrays):
    """A power of two bringing the largest detail to [0.5, 1) when its square could overflow;
    1.0 otherwise."""
    m = max((float(np.abs(x).max()) if x.size else 0.0) for x in arrays)
    if m == 0.0 or not np.isfinite(m):
        return 1.0
    exponent = int(np.frexp(m)[1])
    if -400 <= exponent <= 400:
        return 1.0
    return float(np.ldexp(1.0, int(np.clip(-exponent, -1020, 1020))))


def _row_softmax(u, w=None):
    # array methods, not np.max / np.sum: the same reductions, less overhead on small blocks
    z = np.exp(u - u.max(axis=-1, keepdims=True))
    zw = z if w is None else z * w
    return z / zw.sum(axis=-1, keepdims=True)


def _row_dot(sw, h):
    return (sw * h).sum(axis=-1, keepdims=True)


class Softmax(Nonlinearity):
    """Row-wise softmax with its true Jacobian and second derivative.

    For one row ``x`` with ``s = softmax(x)``::

        Ds[h]      = s * (h - <s, h>)
        D^2 s[h,k] = Ds[h] * (k - <s, k>) - s * <Ds[h], k>

    Every entry of the Jacobian ``diag(s) - s s^T`` lies in ``[-1/4, 1/4]``;
    the largest magnitude is on the diagonal (``s_k s_l <= s_k (1 - s_k)``).
    On compact matrices, inner products carry the column folder sizes ``w``.
    """

    name = "softmax"
    shift_rows = True
    rowwise = True

    def value(self, u, w=None):
        return _row_softmax(u, w)

    def first(self, u, h, w=None):
        return self.terms(u, _row_softmax(u, w), h, h, h, w)[0]

    def second(self, u, h, k, w=None):
        return self.terms(u, _row_softmax(u, w), h, k, h, w)[1]

    def terms(self, u, Au, a, b, c, w=None):
        # the terms are linear in c and bilinear in (a, b): details near 1e155 are scaled
        # (exactly, by a power of two) so that the products in between cannot overflow
        g = _detail_scale(a, b, c)
        if g != 1.0:
            a, b, c = a * g, b * g, c * g
        s = Au
        sw = s if w is None else s * w
        da = s * (a - _row_dot(sw, a))
        second = da * (b - _row_dot(sw, b)) - s * _row_dot(da if w is None else da * w, b)
        first = s * (c - _row_dot(sw, c))
        if g != 1.0:
            with np.errstate(over="ignore"):  # only a term beyond the float range overflows
                first, second = first / g, second / g / g
        return first, second, (s * (1.0 - s)).max(axis=-1)


class _ExpOverRowNormalizer(Nonlinearity):
    """``A_i(t) = exp(t) / Z_i`` with ``Z_i = sum_k exp(f[i, k])`` frozen from the logits.

    ``A(f) = softmax(f)``; the paper's exp-factor variant uses ``A' = A'' = A``,
    the collapsed Eq. 18 variant (``collapsed=True``) uses ``A' = A'' = 1``.
    Applied to row-shifted logits (``f <= 0``, every block mean too), so
    ``exp <= 1`` and ``1 <= Z_i <= n_columns``: nothing overflows or underflows
    to a zero normalizer. Compact evaluation uses ``exp``; the division by
    ``Z_i`` happens at full size (``value_divisor``, ``terms_divisor``).
    """

    shift_rows = True
    rowwise = True

    def __init__(self, *, collapsed, row_normalizer=None):
        self.collapsed = collapsed
        self.value_divisor = row_normalizer
        self.terms_divisor = None if collapsed else row_normalizer
        self.name = "softmax_collapsed" if collapsed else "softmax_exp"

    def prepare(self, f):
        # row sums a block of rows at a time: no full-size exponential is held
        z = np.empty((f.shape[0], 1))
        step = max(1, (1 << 16) // max(f.shape[1], 1))
        for r0 in range(0, f.shape[0], step):
            z[r0 : r0 + step] = np.sum(np.exp(f[r0 : r0 + step]), axis=-1, keepdims=True)
        return _ExpOverRowNormalizer(collapsed=self.collapsed, row_normalizer=z)

    def value(self, u, w=None):
        return np.exp(u)

    def first(self, u, h, w=None):
        return self.terms(u, np.exp(u), h, h, h, w)[0]

    def second(self, u, h, k, w=None):
        return self.terms(u, np.exp(u), h, k, h, w)[1]

    def terms(self, u, Au, a, b, c, w=None):
        if self.collapsed:
            return c.copy(), a * b, np.ones(u.shape[0])
        return Au * c, Au * a * b, Au.max(axis=-1)


NONLINEARITIES = {
    "identity": lambda: EntrywiseNonlinearity(
        lambda t: np.array(t, dtype=float),
        lambda t: np.ones_like(t, dtype=float),
        lambda t: np.zeros_like(t, dtype=float),
        name="identity",
    ),
    "square": lambda: EntrywiseNonlinearity(
        _square,
        lambda t: 2.0 * t,
        lambda t: np.full_like(t, 2.0, dtype=float),
        name="square",
    ),
    "exp": lambda: EntrywiseNonlinearity(np.exp, np.exp, np.exp, name="exp"),
    "tanh": lambda: EntrywiseNonlinearity(np.tanh, _tanh_d1, _tanh_d2, name="tanh"),
    "sigmoid": lambda: EntrywiseNonlinearity(expit, _sigmoid_d1, _sigmoid_d2, name="sigmoid"),
    "softmax": Softmax,
    "softmax_exp": lambda: _ExpOverRowNormalizer(collapsed=False),
    "softmax_collapsed": lambda: _ExpOverRowNormalizer(collapsed=True),
}


def get_nonlinearity(nonlinearity):
    """Resolve a name, a :class:`Nonlinearity` or a callable into a :class:`Nonlinearity`.

    Names: ``identity``, ``square``, ``exp``, ``tanh``, ``sigmoid`` (entrywise),
    ``softmax`` (row-wise, true derivatives), ``softmax_exp`` (the paper's
    ``A' = A'' = exp`` with the row normalizer held constant) and
    ``softmax_collapsed`` (the paper's Eq. 18, ``A' = A'' = 1``). A plain
    callable becomes an :class:`EntrywiseNonlinearity` with finite-difference
    derivatives.

    Examples
    --------
    >>> from skorg.transforms import get_nonlinearity
    >>> get_nonlinearity("tanh")
    EntrywiseNonlinearity('tanh')
    """
    if isinstance(nonlinearity, Nonlinearity):
        return nonlinearity
    if isinstance(nonlinearity, str):
        if nonlinearity not in NONLINEARITIES:
            raise ValueError(
                f"Unknown nonlinearity {nonlinearity!r}; expected one of "
                f"{sorted(NONLINEARITIES)}, a Nonlinearity instance or a callable."
            )
        return NONLINEARITIES[nonlinearity]()
    if callable(nonlinearity):
        return EntrywiseNonlinearity(nonlinearity)
    raise TypeError(
        "nonlinearity must be a name, a Nonlinearity instance or a callable, "
        f"got {type(nonlinearity).__name__}."
    )
