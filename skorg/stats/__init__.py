"""Uncertainty for the analyses: bootstrap intervals, permutation tests and overlap nulls.

Generic, seeded and dependent only on NumPy and SciPy, so that every layer above (the
attention toolkit, the reports) states its claims with an interval, a null and a p-value.
"""

from ._bootstrap import BootstrapResult, bootstrap_ci, bootstrap_of_means
from ._overlap import jaccard_null, mean_pairwise_jaccard, top_set_overlap_test
from ._permutation import (
    PairedComparison,
    compare_samples,
    effect_size,
    paired_comparison,
    permutation_p_value,
    permutation_test_paired,
    permutation_test_two_sample,
)

__all__ = [
    "BootstrapResult",
    "PairedComparison",
    "bootstrap_ci",
    "bootstrap_of_means",
    "compare_samples",
    "effect_size",
    "jaccard_null",
    "mean_pairwise_jaccard",
    "paired_comparison",
    "permutation_p_value",
    "permutation_test_paired",
    "permutation_test_two_sample",
    "top_set_overlap_test",
]
