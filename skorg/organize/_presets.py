"""The questionnaire's presets, defaults, schedules and result."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._labels import container_kind, data_of, reorder_like
from ..trees import TREE_METHODS
from ._ordering import ORDERINGS

__all__ = ["DEFAULTS", "PRESETS", "SCHEDULES", "QuestionnaireResult", "resolve_params"]

SCHEDULES = ("alternating", "jacobi", "reference_3d")
# The builders tree_method="select" compares on every axis, by the error of keeping the
# SELECT_KEEP largest Haar coefficients of the data on all current trees.
SELECT_CANDIDATES = ("average", "ward_slices")
SELECT_KEEP = 0.05
# the criterion that scores them (organize/_candidates.py registers the criteria)
SELECT_CRITERION = "compression"
# Ward of the slices is kept unless average linkage's error is lower by more than this
# fraction (tree_params={"select_margin": 0} restores the plain comparison): on expression
# and feature data average linkage won by under 1% and lost the grouping (ARI 0.09 against
# 0.50 on PBMC cells), while on raw counts its gains were of 2-20% (benchmark of kinds)
SELECT_MARGIN = 0.02
# tree_method names the questionnaire adds to skorg.trees' builders
ORGANIZER_TREE_METHODS = (*TREE_METHODS, "ward_slices", "select")
# the questionnaire's orderings: leaf_order's (its "smoothest" given the slices), and the
# shortest path among two of them
QUESTIONNAIRE_ORDERINGS = (*ORDERINGS, "shortest")
ORDERED_BUILDERS = ("average", "complete", "single", "weighted", "ward", "hybrid")
EARLY_STOPPING = ("unchanged", "objective", "never")
_INIT_AFFINITIES = ("cosine", "correlation", "gaussian")
EMD_DTYPES = ("auto", "float64", "float32")

PRESETS = {
    # the paper's organization of attention heads (query x key x head)
    "paper_3d_heads": {
        "init_affinity": "cosine",
        "tree_constant": 1.0,
        "emd_alpha": 0.0,
        "emd_beta": 1.0,
        "n_iter": 3,
        "tree_method": "flexible",
        "ordering": "emd_olo",
    },
    # the paper's Hoelder organization of one matrix, before the paraproduct
    "paper_2d_holder": {
        "init_affinity": "cosine",
        "tree_constant": 1.0,
        "emd_alpha": 1.0,
        "emd_beta": 0.0,
        "n_iter": 10,
        "ordering": "tree",
        "tree_method": "flexible",
    },
}

DEFAULTS = {
    "n_iter": 3,
    "init_affinity": "cosine",
    "emd_alpha": 0.0,
    "emd_beta": 1.0,
    "epsilon": 1.0,
    "tree_constant": 1.0,
    "schedule": "alternating",
    # chosen by benchmarks/bench_organization_quality.py (user guide, "choosing a tree
    # builder"): per axis the sparser of average linkage of the tree EMD and Ward of the
    # slices; the smoothest of four optimal leaf orderings (benchmark of kinds: real series,
    # images)
    "ordering": "smoothest",
    "tree_method": "select",
}


@dataclass
class QuestionnaireResult:
    """What :func:`questionnaire` learned, one entry per axis.

    Attributes
    ----------
    trees : list of PartitionTree
        The final tree of every axis.
    orders : list of ndarray
        The organized order of every axis (see ``ordering``).
    affinities : list of ndarray
        The affinity each final tree was built from.
    distances : list of ndarray or None
        The tree EMD behind each final affinity (None for an axis whose tree
        comes from the initial affinity only).
    history : list of dict
        One entry per tree built, in order: ``iteration`` (0 for the initial
        trees), ``axis``, ``tree``, ``changed`` (False if the nested
        partitions equal the previous tree of that axis), ``objective`` (with
        ``early_stopping="objective"``, on the last tree of each sweep: the
        normalized Haar l1 norm of X on the trees after that sweep, lower is
        sparser; else None).
    params : dict
        The resolved parameters.
    n_iter : int
        Sweeps run (at most the ``n_iter`` parameter).
    stop_reason : str
        ``"n_iter"`` (the cap), ``"unchanged"`` (a sweep changed no tree) or
        ``"objective"`` (a sweep did not lower the objective; the trees of the
        best sweep are returned).
    names : list of (ndarray or None)
        The labels of every axis in the organized order (the index and columns of a
        DataFrame, the coordinates of a DataArray, the obs and var names of an AnnData);
        None for an axis without labels.
    """

    trees: list
    orders: list
    affinities: list
    distances: list
    history: list = field(default_factory=list)
    params: dict = field(default_factory=dict)
    n_iter: int = 0
    stop_reason: str = "n_iter"
    names: list = field(default_factory=list)

    def organize(self, X):
        """X with every axis in its organized order, as the same kind of container.

        Parameters
        ----------
        X : array-like, sparse matrix, DataFrame, DataArray or AnnData of the learned shape

        Returns
        -------
        X_organized : the kind of X (labels follow their rows, columns and coordinates)
        """
        values = data_of(X)
        shape = tuple(values.shape)
        if shape != tuple(len(o) for o in self.orders):
            raise ValueError(
                f"X has shape {shape}, but the orders are for shape "
                f"{tuple(len(o) for o in self.orders)}."
            )
        if container_kind(X) == "anndata":
            return reorder_like(None, X, self.orders)
        if sp.issparse(values):
            return values.tocsr()[self.orders[0]][:, self.orders[1]]
        arr = np.asarray(values)
        for axis, order in enumerate(self.orders):
            arr = np.take(arr, order, axis=axis)
        return reorder_like(arr, X, self.orders)


def resolve_params(preset=None, **given):
    """Merge explicit parameters (None = unset) over a preset and the defaults."""
    if preset is not None and preset not in PRESETS:
        raise ValueError(f"Unknown preset {preset!r}; expected one of {sorted(PRESETS)} or None.")
    params = dict(DEFAULTS)
    if preset is not None:
        params.update(PRESETS[preset])
    params.update({k: v for k, v in given.items() if v is not None})
    return params
