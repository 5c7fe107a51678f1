import pytest

pytest.importorskip("torch")


def test_default_corpus_has_64_distinct_deterministic_sentences():
    from skorg.attention import stdlib_sentences
    from skorg.report import DEMO_SENTENCES, default_sentences

    sentences = default_sentences()
    assert len(sentences) == 64 == len(set(sentences))
    assert sentences[:8] == list(DEMO_SENTENCES)
    assert set(sentences[8:]) <= set(stdlib_sentences(72))
    assert default_sentences() == sentences  # no randomness
    assert default_sentences(3) == list(DEMO_SENTENCES[:3])
