"""Shuffled smooth matrices and tensors with a known hidden order."""

from __future__ import annotations

import numpy as np
from sklearn.utils import Bunch, check_random_state

from .._validation import check_memory

__all__ = ["make_shuffled_matrix", "make_shuffled_tensor", "smooth_surface"]


def smooth_surface(x, y, kind="band"):
    """Smooth non-negative functions of two latent coordinates in [0, 1].

    ``"band"`` is an attention-like diagonal band of slowly varying width,
    ``"ridge"`` a curved ridge, ``"product"`` a separable-plus-mixed surface
    (the shapes used by the reference data and the benchmarks).
    """
    x = _coordinates(x, "x")
    y = _coordinates(y, "y")
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise ValueError(
            f"x and y must broadcast together (e.g. x[:, None] and y[None, :]), got shapes "
            f"{x.shape} and {y.shape}."
        ) from None
    if kind == "band":
        width = 0.12 + 0.08 * x
        return (
            np.exp(-((x - y) ** 2) / (2.0 * width**2)) + 0.25 * (1.0 + np.sin(2.0 * np.pi * x)) * y
        )
    if kind == "ridge":
        centre = 0.5 + 0.4 * np.sin(np.pi * (x - 0.5))
        return np.exp(-((y - centre) ** 2) / (2.0 * 0.1**2)) + 0.2 * x * (1.0 - y)
    if kind == "product":
        return (1.2 + np.cos(2.5 * np.pi * x)) * (1.2 + np.sin(2.0 * np.pi * y)) + 0.8 * np.exp(
            -4.0 * (x + y - 1.0) ** 2
        )
    raise ValueError(f"Unknown kind {kind!r}; expected 'band', 'ridge' or 'product'.")


_KINDS = ("band", "ridge", "product")


def _coordinates(v, name):
    arr = np.asarray(v)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}.")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite.")
    return arr


def _check_size(value, name, minimum=1):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}.")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}.")
    return int(value)


def _check_noise(noise):
    if (
        isinstance(noise, (bool, np.bool_))
        or not isinstance(noise, (int, float, np.integer, np.floating))
        or not np.isfinite(noise)
        or not 0 <= noise <= 1e300
    ):
        raise ValueError(f"noise must be a number in [0, 1e300], got {noise!r}.")
    return float(noise)


def _random_state(random_state):
    try:
        return check_random_state(random_state)
    except ValueError as exc:
        raise ValueError(f"random_state: {exc}") from None


def make_shuffled_matrix(n_rows=64, n_cols=64, *, kind="band", noise=0.02, random_state=None):
    """A smooth surface sampled at random latent points, both axes shuffled.

    Parameters
    ----------
    n_rows, n_cols : int
    kind : {"band", "ridge", "product"}
    noise : float
        Standard deviation of added Gaussian noise.
    random_state : int, RandomState instance or None

    Returns
    -------
    data : Bunch
        ``X`` (n_rows, n_cols); ``row_latent``, ``col_latent`` (the latent
        coordinate of every observed row and column); ``row_true_order``,
        ``col_true_order`` (``X[np.ix_(row_true_order, col_true_order)]`` is
        sorted by latent coordinate).

    Examples
    --------
    >>> from skorg.datasets import make_shuffled_matrix
    >>> data = make_shuffled_matrix(8, 5, random_state=0)
    >>> data.X.shape, data.col_true_order.shape
    ((8, 5), (5,))
    """
    n_rows = _check_size(n_rows, "n_rows")
    n_cols = _check_size(n_cols, "n_cols")
    noise = _check_noise(noise)
    if not isinstance(kind, str) or kind not in _KINDS:
        raise ValueError(f"Unknown kind {kind!r}; expected one of {_KINDS}.")
    # the surface, its shuffled copy, the noise and their sum, in float64
    check_memory(32 * n_rows * n_cols, f"make_shuffled_matrix({n_rows}, {n_cols})")
    rng = _random_state(random_state)
    x = np.sort(rng.uniform(size=n_rows))
    y = np.sort(rng.uniform(size=n_cols))
    F = smooth_surface(x[:, None], y[None, :], kind)
    row_perm = rng.permutation(n_rows)
    col_perm = rng.permutation(n_cols)
    X = F[np.ix_(row_perm, col_perm)] + noise * rng.standard_normal((n_rows, n_cols))
    return Bunch(
        X=X,
        row_latent=x[row_perm],
        col_latent=y[col_perm],
        row_true_order=np.argsort(row_perm),
        col_true_order=np.argsort(col_perm),
    )


def make_shuffled_tensor(shape=(32, 32, 16), *, noise=0.02, random_state=None):
    """A smooth query x key x head-like tensor with every axis shuffled.

    The surface is a diagonal band in the first two coordinates whose offset
    and width move smoothly with the third.

    Returns
    -------
    data : Bunch
        ``X`` and, for every axis a, ``latent[a]`` and ``true_order[a]``.

    Examples
    --------
    >>> from skorg.datasets import make_shuffled_tensor
    >>> make_shuffled_tensor((4, 5, 3), random_state=0).X.shape
    (4, 5, 3)
    """
    if isinstance(shape, (int, np.integer)) or np.ndim(shape) != 1 or len(shape) != 3:
        raise ValueError(f"shape must be a tuple of three axis lengths, got {shape!r}.")
    shape = tuple(_check_size(n, "shape") for n in shape)
    noise = _check_noise(noise)
    # the band's temporaries, its shuffled copy, the noise and their sum, in float64
    check_memory(8 * 8 * int(np.prod(shape, dtype=object)), f"make_shuffled_tensor({shape})")
    rng = _random_state(random_state)
    lat = [np.sort(rng.uniform(size=n)) for n in shape]
    x, y, z = lat[0][:, None, None], lat[1][None, :, None], lat[2][None, None, :]
    width = 0.08 + 0.15 * z
    F = np.exp(-((x - y - 0.4 * (z - 0.5)) ** 2) / (2.0 * width**2)) + 0.15 * (
        1.0 + np.cos(2.0 * np.pi * (x + z))
    )
    perms = [rng.permutation(n) for n in shape]
    X = F[np.ix_(*perms)] + noise * rng.standard_normal(shape)
    return Bunch(
        X=X,
        latent=[lt[p] for lt, p in zip(lat, perms)],
        true_order=[np.argsort(p) for p in perms],
    )
