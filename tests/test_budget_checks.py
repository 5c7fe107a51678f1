"""Sizes checked against the memory budget before anything is allocated, with the figure."""

import pytest

from skorg.datasets import make_shuffled_matrix, make_shuffled_tensor
from skorg.transforms import corner_block_logits


def test_make_shuffled_matrix_of_a_million_squared_is_refused_up_front(monkeypatch):
    monkeypatch.setenv("SKORG_MAX_MEMORY", "1024")
    # 32 bytes per entry (surface, shuffled copy, noise, sum): 2.98e+04 GiB
    with pytest.raises(
        MemoryError,
        match=r"make_shuffled_matrix\(1000000, 1000000\) needs about 2.98e\+04 GiB, more than "
        r"the memory budget of 1 GiB",
    ):
        make_shuffled_matrix(10**6, 10**6)
    assert make_shuffled_matrix(8, 5, random_state=0).X.shape == (8, 5)


def test_make_shuffled_tensor_and_corner_block_logits_are_refused_up_front(monkeypatch):
    monkeypatch.setenv("SKORG_MAX_MEMORY", "1024")
    with pytest.raises(MemoryError, match=r"make_shuffled_tensor\(\(2000, 2000, 2000\)\) needs"):
        make_shuffled_tensor((2000, 2000, 2000))
    # n = 10**5: 8 * 10**10 bytes = 74.5 GiB
    with pytest.raises(MemoryError, match=r"corner_block_logits\(n=100000\) needs about 74.5 GiB"):
        corner_block_logits(1.0, n=10**5)
    assert corner_block_logits(2.0, n=2).tolist() == [[0.0, 0.0], [0.0, 2.0]]
