import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfTransformer

from skorg import QuestionnaireOrganizer
from skorg.organize import questionnaire
from skorg.organize._preprocess import is_count_data, preprocess_data


def counts(shape=(30, 24), seed=0):
    """Negative binomial counts: mostly zeros, a heavy tail."""
    rng = np.random.default_rng(seed)
    mean = rng.lognormal(-1.0, 1.5, size=shape)
    return rng.poisson(rng.gamma(0.5, mean / 0.5)).astype(np.float64)


def test_count_data_is_recognized_in_any_unit():
    X = counts()
    assert X.max() >= 10 * np.median(X[X > 0]) and np.mean(X == 0) >= 0.25
    for scale in (1.0, 1e-150, 3e100, 0.1):
        assert is_count_data(X * scale)
        assert is_count_data(sp.csr_matrix(X * scale))
    rng = np.random.default_rng(1)
    assert not is_count_data(X + 0.5)  # not integer multiples of one unit
    assert not is_count_data(X - 1)  # negative entries
    assert not is_count_data(rng.random((20, 10)))  # measurements
    assert not is_count_data(rng.integers(0, 17, (40, 30)).astype(float))  # no heavy tail
    assert not is_count_data(np.ones((5, 4)))  # no zeros
    assert not is_count_data(np.zeros((5, 4)))


def test_log1p_is_log1p_of_the_counts_bit_for_bit_in_any_unit():
    X = counts()
    for scale in (1.0, 1e-150, 3e100):
        out, applied = preprocess_data(X * scale, "log1p")
        assert applied == "log1p"
        np.testing.assert_array_equal(out, np.log1p(X))
    sparse, _ = preprocess_data(sp.csr_matrix(X * 1e-150), "log1p")
    assert sp.issparse(sparse)
    np.testing.assert_array_equal(sparse.toarray(), np.log1p(X))
    # not counts: log(1 + X / u), u the smallest nonzero magnitude
    Y = np.array([[0.0, 0.25], [0.5, 1.75]])
    np.testing.assert_allclose(preprocess_data(Y, "log1p")[0], np.log1p(Y / 0.25))


def test_log1p_normalized_closed_form_dense_sparse_and_tensor():
    X = counts()
    X[3] = 0.0  # an empty row stays empty
    r, c = X.sum(axis=1), X.sum(axis=0)
    m_r, m_c = np.median(r[r > 0]), np.median(c[c > 0])
    r[r == 0], c[c == 0] = m_r, m_c
    want = np.log1p(X * np.sqrt(m_r / r)[:, None] * np.sqrt(m_c / c)[None, :])
    out, applied = preprocess_data(X, "log1p_normalized")
    assert applied == "log1p_normalized"
    np.testing.assert_allclose(out, want, rtol=1e-13)
    for scale in (1e-150, 3e100):  # the counts in any unit: the same bits
        np.testing.assert_array_equal(preprocess_data(X * scale, "log1p_normalized")[0], out)
    sparse, _ = preprocess_data(sp.csr_matrix(X), "log1p_normalized")
    np.testing.assert_allclose(sparse.toarray(), want, rtol=1e-13)
    T = counts((6, 5, 4))
    out, _ = preprocess_data(T, "log1p_normalized")
    scale = np.ones_like(T)
    for axis in range(3):
        tot = T.sum(axis=tuple(a for a in range(3) if a != axis))
        med = np.median(tot[tot > 0])
        f = (med / np.where(tot > 0, tot, med)) ** (1 / 3)
        scale = scale * np.expand_dims(f, tuple(a for a in range(3) if a != axis))
    np.testing.assert_allclose(out, np.log1p(T * scale), rtol=1e-13)


def test_binary_tfidf_auto_and_none():
    X = counts()
    np.testing.assert_array_equal(preprocess_data(X, "binary")[0], (X != 0).astype(float))
    np.testing.assert_array_equal(preprocess_data(-X, "binary")[0], (X != 0).astype(float))
    want = TfidfTransformer().fit_transform(X).toarray()
    np.testing.assert_allclose(preprocess_data(X, "tfidf")[0], want)
    np.testing.assert_allclose(preprocess_data(sp.csr_matrix(X), "tfidf")[0].toarray(), want)
    auto, applied = preprocess_data(X, "auto")
    assert applied == "log1p_normalized"
    np.testing.assert_array_equal(auto, preprocess_data(X, "log1p_normalized")[0])
    Y = np.random.default_rng(0).normal(size=(8, 6))
    assert preprocess_data(Y, "auto") == (Y, None)
    assert preprocess_data(Y, None)[0] is Y


def test_preprocess_errors():
    X = counts()
    for kind in ("log1p", "log1p_normalized", "tfidf"):
        with pytest.raises(ValueError, match=f"preprocess='{kind}' needs non-negative X"):
            preprocess_data(X - 1, kind)
    with pytest.raises(ValueError, match="'tfidf' needs a matrix"):
        preprocess_data(counts((4, 3, 5)), "tfidf")
    with pytest.raises(ValueError, match="preprocess must be one of"):
        preprocess_data(X, "log")
    with pytest.raises(ValueError, match="preprocess"):
        QuestionnaireOrganizer(preprocess="log").fit(X)


def test_the_organizer_organizes_the_transformed_data_and_leaves_x_alone():
    X = counts((40, 32))
    before = X.copy()
    org = QuestionnaireOrganizer(n_iter=2, preprocess="log1p").fit(X)
    ref = QuestionnaireOrganizer(n_iter=2, preprocess=None).fit(np.log1p(X))
    assert org.params_["preprocess"] == "log1p" and ref.params_["preprocess"] is None
    assert all(a == b for a, b in zip(org.trees_, ref.trees_))
    assert all(np.array_equal(a, b) for a, b in zip(org.orders_, ref.orders_))
    np.testing.assert_array_equal(X, before)
    np.testing.assert_array_equal(org.transform(X), X[:, org.column_order_])
    # the default reads raw counts as counts, and scaled counts the same way
    auto = questionnaire(X, n_iter=2)
    assert auto.params["preprocess"] == "log1p_normalized"
    scaled = questionnaire(X * 1e-150, n_iter=2)
    assert all(a == b for a, b in zip(auto.trees, scaled.trees))
    # presets organize X as given unless told otherwise
    assert questionnaire(X, preset="paper_3d_heads", n_iter=1).params["preprocess"] is None
    told = questionnaire(X, preset="paper_3d_heads", n_iter=1, preprocess="binary")
    assert told.params["preprocess"] == "binary"
