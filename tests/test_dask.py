"""Work sent to a real Dask cluster (two worker processes on loopback) gives identical results."""

import joblib
import numpy as np
import pytest
from dask.distributed import Client, LocalCluster

from skorg.attention import (
    attention_entropy,
    dask_head_statistics,
    load_head_statistics,
    map_head_statistics,
)
from skorg.metrics import pairwise_tree_emd
from skorg.trees import dyadic_tree


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None,
    )  # fmt: skip
    with cluster, Client(cluster) as c:
        yield c


def _attention(seed, n=3):
    logits = np.random.default_rng(seed).standard_normal((n, 2, 3, 6, 6))
    p = np.exp(logits)
    return list(p / p.sum(axis=-1, keepdims=True))


def test_head_statistics_on_the_cluster(client, tmp_path):
    inputs = _attention(0, 7)
    local = map_head_statistics(inputs, attention_entropy, batch_size=3)
    with joblib.parallel_config(backend="dask"):
        remote = map_head_statistics(inputs, attention_entropy, batch_size=3, n_jobs=2)
    np.testing.assert_array_equal(remote, local)
    paths = dask_head_statistics(inputs, attention_entropy, tmp_path, batch_size=3,
                                 scheduler=client)  # fmt: skip
    assert len(paths) == 3
    np.testing.assert_array_equal(load_head_statistics(paths), local)


def test_tree_emd_on_the_cluster(client):
    X = np.random.default_rng(1).standard_normal((16, 40))
    trees = [dyadic_tree(16), None]
    local = pairwise_tree_emd(X, trees, axis=1, working_memory=1e-3)
    with joblib.parallel_config(backend="dask"):
        remote = pairwise_tree_emd(X, trees, axis=1, n_jobs=2, working_memory=1e-3)
    np.testing.assert_array_equal(remote, local)
