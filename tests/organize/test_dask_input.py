"""The organizer on data in blocks (Dask arrays, backed AnnData) equals the in-memory path.

One LocalCluster with two worker processes serves the module; the data is small so that the
whole module stays well under a minute.
"""

import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from skorg import QuestionnaireOrganizer  # noqa: E402
from skorg.organize import questionnaire  # noqa: E402
from skorg.organize._dask_input import is_block_input, load_blocks  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None,
    )  # fmt: skip
    with cluster, distributed.Client(cluster) as c:
        yield c


def _counts(n_rows=120, n_cols=40, seed=0):
    """Poisson counts of three row types with their own column rates (mostly zeros)."""
    rng = np.random.default_rng(seed)
    types = rng.integers(0, 3, n_rows)
    rates = rng.gamma(0.4, 1.5, (3, n_cols))
    return rng.poisson(rates[types] * rng.lognormal(0, 0.3, (n_rows, 1)))


def _assert_same_fit(a, b):
    for ta, tb in zip(a.trees_, b.trees_):
        assert ta == tb
    for oa, ob in zip(a.orders_, b.orders_):
        np.testing.assert_array_equal(oa, ob)
    for da_, db in zip(a.distances_, b.distances_):
        if da_ is None:
            assert db is None
        elif sp.issparse(da_):
            assert (da_ != db).nnz == 0
        else:
            np.testing.assert_array_equal(da_, db)
    assert a.params_["preprocess"] == b.params_["preprocess"]


def test_dense_dask_array_equals_in_memory(client):
    X = _counts()
    Xd = da.from_array(X, chunks=(32, 15))  # blocks across rows and columns
    est = QuestionnaireOrganizer(n_iter=2).fit(Xd)
    _assert_same_fit(est, QuestionnaireOrganizer(n_iter=2).fit(X))
    assert est.n_features_in_ == X.shape[1]
    np.testing.assert_array_equal(est.transform(Xd), est.transform(X))


def test_sparse_blocks_equal_in_memory_and_the_sparse_path(client):
    X = sp.csr_matrix(_counts(150, 30, seed=1).astype(np.float64))
    Xd = da.from_array(X, chunks=(40, 30), asarray=False)
    assert is_block_input(Xd)
    for mode in ("dense", "sparse"):  # the k-NN path of every axis too
        kwargs = dict(n_iter=2, affinity_mode=mode, random_state=0)
        with distributed.get_task_stream(client) as stream:
            a = questionnaire(Xd, **kwargs)
        names = {task["key"].split("-")[0] for task in stream.data if isinstance(task["key"], str)}
        # the blocks were read on the cluster, and the k-NN path's row features computed there
        assert any(name.startswith("_as_block") for name in names)
        assert any(name.startswith("_feature_blocks_task") for name in names) == (mode == "sparse")
        b = questionnaire(X, **kwargs)
        for ta, tb in zip(a.trees, b.trees):
            assert ta == tb
        for oa, ob in zip(a.orders, b.orders):
            np.testing.assert_array_equal(oa, ob)


def test_tensor_dask_array(client):
    X = np.random.default_rng(2).standard_normal((10, 12, 6))
    a = questionnaire(da.from_array(X, chunks=(4, 12, 3)), n_iter=1)
    b = questionnaire(X, n_iter=1)
    for ta, tb in zip(a.trees, b.trees):
        assert ta == tb


def test_backed_anndata_and_dask_anndata(client, tmp_path):
    anndata = pytest.importorskip("anndata")
    X = sp.csr_matrix(_counts(90, 25, seed=3).astype(np.float32))
    adata = anndata.AnnData(X)
    adata.obs_names = [f"cell{i}" for i in range(90)]
    adata.var_names = [f"gene{j}" for j in range(25)]
    path = tmp_path / "counts.h5ad"
    adata.write_h5ad(path)
    backed = anndata.read_h5ad(path, backed="r")
    assert is_block_input(backed.X)
    est = QuestionnaireOrganizer(n_iter=2).fit(backed)
    ref = QuestionnaireOrganizer(n_iter=2).fit(adata)
    _assert_same_fit(est, ref)
    np.testing.assert_array_equal(est.row_names_, ref.row_names_)
    np.testing.assert_array_equal(est.column_names_, ref.column_names_)
    lazy = anndata.AnnData(da.from_array(X, chunks=(30, 25), asarray=False))
    lazy.obs_names, lazy.var_names = adata.obs_names, adata.var_names
    _assert_same_fit(QuestionnaireOrganizer(n_iter=2).fit(lazy), ref)


def test_blocks_gathered_bit_for_bit_without_a_client():
    # Dask's default scheduler (no Client here is used: a fresh thread pool)
    X = sp.random(70, 9, density=0.3, random_state=4, format="csr", dtype=np.float32)
    X.data = np.round(X.data * 10)
    with __import__("dask").config.set(scheduler="threads"):
        Y = load_blocks(da.from_array(X, chunks=(16, 4), asarray=False), dtype=None)
    assert Y.dtype == np.float32 and Y.has_canonical_format
    np.testing.assert_array_equal(Y.toarray(), X.toarray())


def test_memory_checked_before_gathering(client, monkeypatch):
    X = da.zeros((4000, 500), chunks=(1000, 500))  # 16 MB as float64
    monkeypatch.setenv("SKORG_MAX_MEMORY", "8")
    with pytest.raises(MemoryError, match="Gathering the blocks of X"):
        QuestionnaireOrganizer().fit(X)
    S = da.from_array(sp.eye(4000, format="csr"), chunks=(1000, 4000), asarray=False)
    monkeypatch.setenv("SKORG_MAX_MEMORY", "0.01")
    with pytest.raises(MemoryError, match="memory budget"):
        load_blocks(S)


def test_unknown_chunks_refused(client):
    X = da.from_array(np.arange(40.0).reshape(10, 4), chunks=(5, 4))
    Y = X[X[:, 0] > 3]
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        questionnaire(Y)


def test_features_by_blocks_bit_for_bit(client):
    from skorg.metrics import tree_emd_embedding
    from skorg.organize._dask_blocks import block_tree_emd_embedding
    from skorg.trees import dyadic_tree

    X = sp.csr_matrix(_counts(301, 32, seed=5) / 7.0)
    trees = [None, dyadic_tree(32)]
    for data in (X, X.toarray()):
        for dtype in (np.float32, np.float64):
            whole = tree_emd_embedding(data, trees, axis=0, alphas=0.5, betas=1.0, dtype=dtype)
            blocks = block_tree_emd_embedding(
                data, trees, alphas=0.5, betas=1.0, dtype=dtype, client=client
            )
            assert blocks.dtype == whole.dtype
            np.testing.assert_array_equal(blocks, whole)


def test_knn_path_features_by_blocks_bit_for_bit(client):
    from skorg.organize._dask_blocks import block_emd_feature_blocks
    from skorg.organize._sparse import emd_feature_blocks
    from skorg.trees import dyadic_tree

    X = sp.csr_matrix(_counts(257, 16, seed=7) / 3.0)
    others = [None, dyadic_tree(16)]
    for data in (X, X.toarray()):
        whole = emd_feature_blocks(data, others, 0, [0.0, 1.0], [1.0, 0.5], np.float32)
        blocks = block_emd_feature_blocks(data, others, 0, [0.0, 1.0], [1.0, 0.5], np.float32)
        np.testing.assert_array_equal(blocks, whole)


def test_exact_knn_by_pairs_of_blocks(client):
    from skorg.graphs import knn_indices
    from skorg.organize._dask_blocks import block_knn_l1

    rng = np.random.default_rng(8)
    F = rng.standard_normal((203, 6)).astype(np.float32)
    F[7] = F[3]  # a duplicate: the tie goes to the smaller index in both
    for data in (F, F.astype(np.float64) * 1e-200):
        whole = knn_indices(data, 5, metric="manhattan", backend="exact")
        np.testing.assert_array_equal(block_knn_l1(data, 5, block_rows=37), whole)


def test_transform_organize_score_stay_lazy(client):
    X = _counts(64, 20, seed=6).astype(np.float64)
    est = QuestionnaireOrganizer(n_iter=1).fit(X)
    Xd = da.from_array(X, chunks=(16, 7))
    out = est.transform(Xd)
    assert isinstance(out, da.Array)  # nothing read yet
    np.testing.assert_array_equal(out.compute(), est.transform(X))
    np.testing.assert_array_equal(est.inverse_transform(out).compute(), X)
    np.testing.assert_array_equal(est.organize(Xd).compute(), est.organize(X))
    assert est.score(Xd) == est.score(X)
    S = da.from_array(sp.csr_matrix(X), chunks=(16, 20), asarray=False)
    assert est.score(S) == est.score(sp.csr_matrix(X))
    with pytest.raises(ValueError, match="fitted on"):
        est.transform(Xd[:, :10])
