"""Per-head statistics over a corpus in batches: joblib or a Dask graph, results to disk."""

from __future__ import annotations

from numbers import Integral
from pathlib import Path

import numpy as np

__all__ = ["dask_head_statistics", "load_head_statistics", "map_head_statistics"]


def _batches(inputs, batch_size):
    if isinstance(batch_size, bool) or not isinstance(batch_size, Integral) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}.")
    inputs = list(inputs)
    if not inputs:
        raise ValueError("inputs is empty.")
    return [inputs[i : i + batch_size] for i in range(0, len(inputs), batch_size)]


def _batch_statistic(batch, statistic, extract, path):
    """Extract one batch, reduce it to per-head numbers, and save them or return them."""
    from ._extract import AttentionMaps

    maps = extract(batch) if extract is not None else AttentionMaps.from_array(np.stack(batch))
    values = np.asarray(statistic(maps))
    if path is None:
        return values
    np.save(path, values)
    return str(path)


def _paths(out_dir, n):
    if out_dir is None:
        return [None] * n
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [out / f"chunk_{i:06d}.npy" for i in range(n)]


def map_head_statistics(
    inputs, statistic, *, extract=None, batch_size=8, out_dir=None, n_jobs=None
):
    """Per-head statistic of every input, computed batch by batch as joblib tasks.

    Parameters
    ----------
    inputs : sequence
        Corpus items: attention arrays of shape (n_layers, n_heads, n_queries, n_keys) with
        the default ``extract``, or whatever ``extract`` takes (sentences, token ids).
    statistic : callable
        ``statistic(maps) -> array of shape (batch, ...)`` on an :class:`AttentionMaps`, e.g.
        :func:`attention_entropy` or :func:`head_confidence`.
    extract : callable, optional
        ``extract(list_of_inputs) -> AttentionMaps`` (e.g. a closure over
        :func:`extract_attention` and a model); the default stacks attention arrays.
    batch_size : int, default=8
    out_dir : path, optional
        Save each batch's result as ``chunk_000000.npy``, ... and return the paths instead of
        the values, so that no attention tensor and no result outlives its task.
    n_jobs : int, optional
        joblib workers; under ``joblib.parallel_config(backend="dask")`` the batches run on a
        Dask cluster.

    Returns
    -------
    values : ndarray of shape (n_inputs, ...), or list of str
        The concatenated statistics, or the chunk paths with ``out_dir`` (read them back with
        :func:`load_head_statistics`).

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.attention import attention_entropy, map_head_statistics
    >>> uniform = np.full((1, 2, 4, 4), 0.25)
    >>> map_head_statistics([uniform, uniform, uniform], attention_entropy, batch_size=2).round(4)
    array([[1.3863, 1.3863],
           [1.3863, 1.3863],
           [1.3863, 1.3863]])
    """
    from joblib import Parallel, delayed

    batches = _batches(inputs, batch_size)
    paths = _paths(out_dir, len(batches))
    results = Parallel(n_jobs=n_jobs)(
        delayed(_batch_statistic)(batch, statistic, extract, path)
        for batch, path in zip(batches, paths)
    )
    return results if out_dir is not None else np.concatenate(results)


def dask_head_statistics(inputs, statistic, out_dir, *, extract=None, batch_size=8, scheduler=None):
    """The same map as :func:`map_head_statistics` as a Dask delayed graph, streamed to disk.

    One task per batch extracts the attention, reduces it and writes
    ``out_dir/chunk_000000.npy``, ...; only the paths travel back, so memory holds at most one
    batch per worker. ``out_dir`` must be visible to every worker (a shared file system, or a
    local cluster). With zarr installed, the chunks can be gathered into one array with
    ``zarr.open_array(...)[lo:hi] = np.load(path)`` per chunk.

    Parameters
    ----------
    inputs, statistic, extract, batch_size
        As in :func:`map_head_statistics`.
    out_dir : path
    scheduler : str or distributed.Client, optional
        Passed to ``dask.compute`` (None: the active client, else Dask's default).

    Returns
    -------
    paths : list of str
        In input order.

    Examples
    --------
    >>> import numpy as np, tempfile
    >>> from skorg.attention import attention_entropy, dask_head_statistics, load_head_statistics
    >>> maps = [np.full((1, 1, 2, 2), 0.5)] * 3
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     paths = dask_head_statistics(maps, attention_entropy, tmp, batch_size=2,
    ...                                  scheduler="synchronous")
    ...     load_head_statistics(paths).round(4)
    array([[0.6931],
           [0.6931],
           [0.6931]])
    """
    import dask
    from dask import delayed

    batches = _batches(inputs, batch_size)
    paths = _paths(out_dir, len(batches))
    tasks = [
        delayed(_batch_statistic, pure=True)(batch, statistic, extract, str(path))
        for batch, path in zip(batches, paths)
    ]
    return list(dask.compute(*tasks, scheduler=scheduler))


def load_head_statistics(paths, *, mmap_mode=None):
    """Concatenate the chunks written by the two maps (``mmap_mode`` as in ``np.load``).

    Parameters
    ----------
    paths : sequence of path
    mmap_mode : {None, "r"}, default=None

    Returns
    -------
    values : ndarray
    """
    return np.concatenate([np.load(p, mmap_mode=mmap_mode) for p in paths])
