"""linkage_tree: optimal leaf ordering only where it is affordable, and unit-free."""

import numpy as np
import pytest
from scipy.cluster.hierarchy import leaves_list, linkage

from skorg.trees import linkage_tree
from skorg.trees._builders import OLO_AUTO_MAX


@pytest.mark.parametrize("n", [40, OLO_AUTO_MAX + 100])
def test_auto_ordering_is_scipys_with_olo_only_up_to_the_limit(n):
    X = np.random.default_rng(n).standard_normal((n, 2))
    expected = leaves_list(linkage(X, "average", optimal_ordering=n <= OLO_AUTO_MAX))
    np.testing.assert_array_equal(linkage_tree(X).leaf_order, expected)


@pytest.mark.parametrize("factor", [2.0**-700, 1e-9, 1e9, 2.0**700])
def test_linkage_tree_does_not_depend_on_units(factor):
    X = np.random.default_rng(1).standard_normal((60, 3))
    base = linkage_tree(X, optimal_ordering=True)
    scaled = linkage_tree(X * factor, optimal_ordering=True)
    assert scaled.same_partitions(base)
    np.testing.assert_array_equal(scaled.leaf_order, base.leaf_order)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"optimal_ordering": "sometimes"}, "optimal_ordering"),
        ({"optimal_ordering": 1}, "optimal_ordering"),
        ({"method": "nearest"}, "method"),
    ],
)
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        linkage_tree(np.zeros((5, 2)), **kwargs)
