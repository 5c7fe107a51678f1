"""The long-axis steps of the questionnaire: k-nearest-neighbour affinities and sparse trees."""

from __future__ import annotations

from numbers import Integral

import numpy as np

from .._validation import check_int_seed

__all__ = [
    "AFFINITY_MODES",
    "SPARSE_MIN_POINTS",
    "SPARSE_TREE_METHODS",
    "sparse_axes",
    "sparse_initial",
    "sparse_rebuild",
]

AFFINITY_MODES = ("auto", "dense", "sparse")
# "auto" takes the sparse path for axes longer than this: the dense path holds several
# (m, m) float64 matrices (3.2 GB each at m = 20,000) and costs O(m^2 |T|) time.
SPARSE_MIN_POINTS = 10_000


def sparse_axes(shape, affinity_mode, n_neighbors):
    """Which axes take the sparse path, after checking the two parameters."""
    if affinity_mode not in AFFINITY_MODES:
        raise ValueError(
            f"Unknown affinity_mode {affinity_mode!r}; expected one of {AFFINITY_MODES}."
        )
    if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, Integral) or n_neighbors < 1:
        raise ValueError(f"n_neighbors must be a positive integer, got {n_neighbors!r}.")
    if affinity_mode == "dense":
        return [False] * len(shape)
    if affinity_mode == "sparse":
        return [True] * len(shape)
    return [length > SPARSE_MIN_POINTS for length in shape]


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


def sparse_initial(
    Xa, kind, params, tree_constant, n_neighbors, random_state, n_jobs, method="flexible"
):
    """Initial kNN graph, landmark eigenpairs and tree of the rows of the unfolding ``Xa``."""
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
    return A, _sparse_tree(method, A, tree_constant, random_state, eig)


def sparse_rebuild(
    X, others, axis, alphas, betas, epsilon, tree_constant, n_neighbors, random_state, n_jobs,
    method="flexible", embed=None,
):  # fmt: skip
    """kNN tree EMD graph, landmark eigenpairs of the dual affinity, and the tree of one axis
    (``embed``: the features' function, :func:`~skorg.metrics.tree_emd_embedding` or its
    per-block twin on a Dask cluster)."""
    from ..graphs import (
        choose_landmarks,
        knn_l1_affinity,
        l1_kernel_columns,
        landmark_diffusion_eigenpairs,
    )
    from ..metrics import tree_emd_embedding

    F = (embed or tree_emd_embedding)(
        X, others, axis=axis, alphas=alphas, betas=betas, dtype=np.float32, n_jobs=n_jobs
    )
    d, A, med = knn_l1_affinity(F, epsilon, n_neighbors, "auto", random_state, n_jobs)
    eig = None
    if method == "flexible":
        rng = np.random.default_rng(check_int_seed(random_state) + 1)
        landmarks = choose_landmarks(F.shape[0], N_LANDMARKS, rng)
        C = l1_kernel_columns(F, landmarks, epsilon * med)
        del F
        eig = landmark_diffusion_eigenpairs(C, landmarks, 12)
        del C
    return d, A, _sparse_tree(method, A, tree_constant, random_state, eig)
