"""The long-axis steps of the questionnaire: k-nearest-neighbour affinities and sparse trees.

Which axes take this path is decided from the predicted time and memory of the two paths
(:func:`choose_paths`). Here every step is linear in the axis length m: the tree-EMD
features are built a block of rows at a time (:func:`emd_feature_blocks`), their L1
nearest neighbours found by nearest-neighbour descent with its recall measured
(:func:`~skorg.graphs.l1_knn_descent`, :func:`~skorg.graphs.l1_knn_recall`), the diffusion
eigenpairs from 500 landmark columns, and the flexible tree joins folders along the k-NN
graph of the EMD united with that of the diffusion embedding.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
import scipy.sparse as sp

from .._validation import check_int_seed, check_memory, memory_budget

__all__ = [
    "AFFINITY_MODES",
    "SPARSE_MIN_POINTS",
    "SPARSE_TREE_METHODS",
    "choose_paths",
    "emd_feature_blocks",
    "sparse_axes",
    "sparse_initial",
    "sparse_rebuild",
]

AFFINITY_MODES = ("auto", "dense", "sparse")
# Below this many points an axis always takes the dense path (exact, and fast enough).
SPARSE_MIN_POINTS = 4096
# The cost model of "auto" (see choose_paths): the dense path holds about this many (m, m)
# float64 matrices at its peak (measured: 6.8 GB at m = 10,000 on a matrix of counts)...
_DENSE_MATRICES = 9
# ... and sums |a - b| over m^2 / 2 pairs x (tree nodes of the other axes) per sweep at about
# this many terms per second and core; the k-NN path compares about _SPARSE_PAIRS pairs per
# point per sweep (block, hubs, descent rounds, landmarks) at about _SPARSE_RATE.
_DENSE_RATE = 7e9
_SPARSE_PAIRS = 6000
_SPARSE_RATE = 5e9
_SWEEPS = 3


def _predicted(shape, axis, n_jobs=None):
    """Predicted (dense seconds, dense bytes, sparse seconds, sparse bytes) of one axis."""
    import os

    m = shape[axis]
    n_feat = 2 * math.prod(length for a, length in enumerate(shape) if a != axis)
    cores = max(1, min(os.cpu_count() or 1, n_jobs or os.cpu_count() or 1))
    dense_s = _SWEEPS * m * m / 2 * n_feat / (_DENSE_RATE * cores)
    sparse_s = _SWEEPS * m * _SPARSE_PAIRS * n_feat / (_SPARSE_RATE * cores)
    dense_b = _DENSE_MATRICES * 8 * m * m
    sparse_b = 4 * m * n_feat + 8 * m * (N_LANDMARKS + 60)
    return dense_s, dense_b, sparse_s, sparse_b


def choose_paths(shape, affinity_mode="auto", n_neighbors=15, n_jobs=None):
    """Which axes take the k-NN path, and why (one sentence per axis).

    ``"auto"``: an axis of at least 4,096 points takes the k-NN path when the dense path's
    predicted memory (about nine (m, m) float64 matrices) passes the memory budget
    (:func:`skorg.set_config`'s ``SKORG_MAX_MEMORY`` or half the machine's memory), or when
    its predicted time (O(m^2) pairs per sweep) passes that of the k-NN path (O(m) pairs).
    """
    if affinity_mode not in AFFINITY_MODES:
        raise ValueError(
            f"Unknown affinity_mode {affinity_mode!r}; expected one of {AFFINITY_MODES}."
        )
    if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, Integral) or n_neighbors < 1:
        raise ValueError(f"n_neighbors must be a positive integer, got {n_neighbors!r}.")
    paths, reasons = [], []
    budget = memory_budget()
    for axis, m in enumerate(shape):
        if affinity_mode != "auto":
            paths.append(affinity_mode == "sparse")
            reasons.append(f"affinity_mode={affinity_mode!r}")
            continue
        dense_s, dense_b, sparse_s, sparse_b = _predicted(shape, axis, n_jobs)
        figures = (
            f"dense ~{dense_s:.3g} s and {dense_b / 2**30:.3g} GiB, "
            f"k-NN ~{sparse_s:.3g} s and {sparse_b / 2**30:.3g} GiB predicted"
        )
        if m < SPARSE_MIN_POINTS:
            paths.append(False)
            reasons.append(f"{m} < {SPARSE_MIN_POINTS} points")
        elif dense_b > budget:
            paths.append(True)
            reasons.append(f"{figures}; dense passes the {budget / 2**30:.3g} GiB budget")
        elif dense_s > sparse_s:
            paths.append(True)
            reasons.append(f"{figures}; k-NN is faster")
        else:
            paths.append(False)
            reasons.append(f"{figures}; dense is faster and fits")
    return paths, reasons


def sparse_axes(shape, affinity_mode, n_neighbors, n_jobs=None):
    """Which axes take the sparse path (see :func:`choose_paths`), after checking the two
    parameters; the progress bar (``skorg.set_config(progress=True)``) says which and why."""
    from .._progress import progress_bar

    paths, reasons = choose_paths(shape, affinity_mode, n_neighbors, n_jobs)
    if any(length >= SPARSE_MIN_POINTS for length in shape):
        with progress_bar(total=len(shape), desc="questionnaire paths") as bar:
            for axis, (knn, why) in enumerate(zip(paths, reasons)):
                path = "k-NN" if knn else "dense"
                bar.set_description_str(f"axis {axis} ({shape[axis]:,}): {path} path, {why}")
                bar.update()
    return paths


# Landmarks of the Nystrom diffusion embedding (O(m L) memory, O(m L^2) time).
N_LANDMARKS = 500


# the builders that take a sparse k-NN graph (skorg.trees.build_tree)
SPARSE_TREE_METHODS = ("flexible", "single", "ward")


def _sparse_tree(method, A, tree_constant, random_state, eig):
    from ..trees import build_tree, sparse_flexible_tree

    if method == "flexible":
        return sparse_flexible_tree(
            A, tree_constant=tree_constant, random_state=random_state, eigenpairs=eig
        )
    return build_tree(method, affinity=A, optimal_ordering=False)


def _dense_rows(Xa, dtype=np.float64):
    """A sparse unfolding as a dense array (its size checked against the budget first)."""
    if not sp.issparse(Xa):
        return Xa
    check_memory(
        Xa.shape[0] * Xa.shape[1] * np.dtype(dtype).itemsize,
        "The k-NN path's dense copy of the rows of X",
    )
    return Xa.toarray().astype(dtype, copy=False)


def sparse_initial(
    Xa, kind, params, tree_constant, n_neighbors, random_state, n_jobs, method="flexible"
):
    """Initial kNN graph, landmark eigenpairs and tree of the rows of the unfolding ``Xa``
    (dense, or a sparse matrix, densified once within the memory budget)."""
    from ..graphs import (
        choose_landmarks,
        cosine_columns,
        knn_affinity,
        landmark_diffusion_eigenpairs,
    )

    if callable(kind) or kind not in ("cosine", "correlation"):
        raise ValueError(
            "the sparse path needs init_affinity 'cosine' or 'correlation', "
            f"got {kind!r}; use affinity_mode='dense'."
        )
    params = dict(params)
    if params.pop("missing_values", None) is not None:
        raise ValueError(
            "the sparse path does not support missing_values; use affinity_mode='dense'."
        )
    Xa = _dense_rows(Xa)
    A = knn_affinity(
        Xa.astype(np.float32), kind=kind, n_neighbors=n_neighbors, random_state=random_state,
        n_jobs=n_jobs, **params,
    )  # fmt: skip
    rng = np.random.default_rng(check_int_seed(random_state))
    landmarks = choose_landmarks(Xa.shape[0], N_LANDMARKS, rng)
    eig = None
    if method == "flexible":  # landmark eigenpairs: the flexible tree's diffusion step
        C = cosine_columns(Xa, landmarks, kind=kind, **params)
        eig = landmark_diffusion_eigenpairs(C, landmarks, 12)
        del C
        A_tree = _with_embedding_graph(A, eig, n_neighbors, random_state)
        return A, _sparse_tree(method, A_tree, tree_constant, random_state, eig)
    return A, _sparse_tree(method, A, tree_constant, random_state, eig)


def _with_embedding_graph(A, eig, n_neighbors, random_state):
    """The candidate graph of the flexible tree: the k-NN graph ``A`` united with the k-NN
    graph of the diffusion embedding (in which the tree measures folder distances).

    In high dimension a k-NN graph has hubs (a few points in most lists: in the tree EMD of
    counts, the rows of fewest counts), along which folders join a few per round; the
    embedding's own neighbours link every point to those it is compared with."""
    from ..graphs import knn_indices

    psi, lam = eig
    if psi.shape[1] < 2:
        return A
    emb = np.ascontiguousarray(psi[:, 1:] * lam[1:], dtype=np.float64)
    idx = knn_indices(emb, n_neighbors, metric="manhattan", random_state=random_state)
    n = A.shape[0]
    rows = np.repeat(np.arange(n), idx.shape[1])
    E = sp.csr_matrix((np.full(rows.shape[0], 1e-300), (rows, idx.ravel())), shape=(n, n))
    E = E.maximum(E.T)
    # the embedding's extra pairs carry a tiny weight: the tree reads only the pattern
    return (A.maximum(E)).tocsr()


def emd_feature_blocks(X, others, axis, alphas, betas, dtype=np.float32, n_jobs=None):
    """The tree-EMD features of the slices along ``axis`` (their L1 distances are the tree
    EMD, :func:`~skorg.metrics.tree_emd_embedding`), built a block of slices at a time.

    Each slice's features depend on that slice alone, so the rows of a block are bit for bit
    those of the whole (a sparse X is densified a block at a time, the whole output checked
    against the memory budget before it is allocated).
    """
    from ..metrics import tree_emd_embedding

    n = X.shape[axis]
    what = "The k-NN path's tree-EMD features"
    if not sp.issparse(X):
        one = tree_emd_embedding(  # the width: one feature per distinct folder
            np.take(X, [0], axis=axis), others, axis=axis, alphas=alphas, betas=betas,
            dtype=dtype,
        )  # fmt: skip
        check_memory(n * one.shape[1] * np.dtype(dtype).itemsize, what)
        return tree_emd_embedding(
            X, others, axis=axis, alphas=alphas, betas=betas, dtype=dtype, n_jobs=n_jobs
        )
    M = X.tocsr() if axis == 0 else X.T.tocsr()  # the slices as rows
    trees = [None, others[1 - axis]]
    pair = [alphas[axis], alphas[1 - axis]], [betas[axis], betas[1 - axis]]
    step = max(1, min(n, (64 << 20) // max(8 * M.shape[1], 1)))  # ~64 MiB of dense rows
    out = None
    for lo in range(0, n, step):
        block = tree_emd_embedding(
            M[lo : lo + step].toarray(), trees, axis=0, alphas=pair[0], betas=pair[1],
            dtype=dtype, n_jobs=n_jobs,
        )  # fmt: skip
        if out is None:  # the features kept (one per distinct folder of the other tree)
            check_memory(n * block.shape[1] * np.dtype(dtype).itemsize, what)
            out = np.empty((n, block.shape[1]), dtype=dtype)
        out[lo : lo + step] = block
    return out


def sparse_rebuild(
    X, others, axis, alphas, betas, epsilon, tree_constant, n_neighbors, random_state, n_jobs,
    method="flexible", embed=None,
):  # fmt: skip
    """kNN tree EMD graph, landmark eigenpairs of the dual affinity, and the tree of one axis
    (``embed``: the features' function, :func:`emd_feature_blocks` or its per-block twin on
    a Dask cluster, same signature)."""
    from ..graphs import (
        choose_landmarks,
        knn_l1_affinity,
        l1_cross_distances,
        landmark_diffusion_eigenpairs,
    )

    F = (embed or emd_feature_blocks)(X, others, axis, alphas, betas, np.float32, n_jobs)
    d, A, med = knn_l1_affinity(F, epsilon, n_neighbors, "auto", random_state, n_jobs)
    eig = None
    if method == "flexible":
        rng = np.random.default_rng(check_int_seed(random_state) + 1)
        landmarks = choose_landmarks(F.shape[0], N_LANDMARKS, rng)
        C = l1_cross_distances(F, np.ascontiguousarray(F[landmarks]))
        del F
        C /= -(epsilon * med)
        np.exp(C, out=C)
        eig = landmark_diffusion_eigenpairs(C, landmarks, 12)
        del C
        A_tree = _with_embedding_graph(A, eig, n_neighbors, random_state)
        return d, A, _sparse_tree(method, A_tree, tree_constant, random_state, eig)
    return d, A, _sparse_tree(method, A, tree_constant, random_state, eig)
