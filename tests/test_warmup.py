"""Ahead-of-time compilation: ``skorg warmup``, the first-run note, compiling only what is used."""

import numba
import numpy as np

import skorg._warmup as warmup_module
from skorg import QuestionnaireOrganizer
from skorg._cli import COMPILE_NOTE, main


@numba.njit(cache=True)
def _never_compiled(x):  # never called: numba's cache never gets an index for it
    return x + 1


def test_kernels_cached_tells_an_empty_cache_from_a_filled_one(monkeypatch):
    # large enough for the compiled EMD, on the flexible tree: every sentinel kernel runs
    X = np.random.default_rng(0).random((256, 192))
    QuestionnaireOrganizer(n_iter=1, tree_method="flexible").fit(X)
    assert warmup_module.kernels_cached() is True  # this process's cache has them now
    # a kernel without cache files (as every kernel in a fresh install): the fit will compile
    sentinels = warmup_module._sentinels()
    monkeypatch.setattr(warmup_module, "_sentinels", lambda: (*sentinels, _never_compiled))
    assert warmup_module.kernels_cached() is False
    monkeypatch.setattr(warmup_module, "_sentinels", lambda: (object(),))
    assert warmup_module.kernels_cached() is None  # a layout it cannot read: no claim


def test_the_command_line_says_when_it_will_compile(capsys, monkeypatch):
    monkeypatch.setattr(warmup_module, "kernels_cached", lambda: False)
    argv = ["demo", "--synthetic", "--size", "16", "--n-iter", "1"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.splitlines()[0] == COMPILE_NOTE
    assert main([*argv, "--quiet"]) == 0
    assert COMPILE_NOTE not in capsys.readouterr().err
    monkeypatch.setattr(warmup_module, "kernels_cached", lambda: True)
    assert main(argv) == 0
    assert COMPILE_NOTE not in capsys.readouterr().err


def test_a_first_fit_on_a_small_matrix_compiles_nothing(tmp_path):
    """A fresh install (an empty numba cache, a new process): a small fit finds every kernel it
    needs without compiling, so numba writes no cache index at all."""
    import os
    import subprocess
    import sys

    code = (
        "import numpy as np; from skorg import QuestionnaireOrganizer; "
        "from skorg.datasets import make_shuffled_matrix; "
        "X = make_shuffled_matrix(128, 96, kind='band', random_state=0).X; "
        "QuestionnaireOrganizer().fit(X); QuestionnaireOrganizer().fit_transform(X.T)"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=300)
    assert [p.name for p in tmp_path.rglob("*.nbi")] == []


def test_warmup_runs_every_group_of_calls_and_reports(capsys, monkeypatch):
    calls = []
    groups = [(f"group {i}", lambda i=i: calls.append(i)) for i in range(4)]
    monkeypatch.setattr(warmup_module, "_calls", lambda: groups)
    assert main(["warmup"]) == 0
    out, err = capsys.readouterr()
    assert calls == [0, 1, 2, 3]
    assert "kernels compiled and cached in" in out
    assert "[4/4] group 3" in err and COMPILE_NOTE not in err


def test_warmup_calls_are_real_and_leave_the_cache_filled():
    # the actual calls (kernels already compiled by the test session, so this is quick)
    seconds = warmup_module.warmup()
    assert seconds > 0
    assert warmup_module.kernels_cached() is True


def test_the_parallel_round_kernels_are_chosen_outside_compiled_code(monkeypatch):
    """The serial/parallel choice is made in Python, so that a small tree never makes numba
    compile the parallel kernels (a choice inside a compiled function compiles both)."""
    from skorg._kernels import _flexible as kernels
    from skorg.trees import flexible_tree

    assert not isinstance(kernels.round_distances, numba.core.registry.CPUDispatcher)
    used = []
    for name in ("_round_distances_serial", "_round_distances_parallel"):
        real = getattr(kernels, name)
        monkeypatch.setattr(
            kernels, name, lambda *a, real=real, name=name: used.append(name) or real(*a)
        )
    X = np.random.default_rng(0).random((60, 8))
    flexible_tree(X @ X.T / 8)
    assert set(used) == {"_round_distances_serial"}
    used.clear()
    n = kernels._PARALLEL_MIN_POINTS
    emb = np.random.default_rng(1).random((n, 3))
    D_par, _ = kernels.round_distances(emb, np.arange(n), n)
    assert used == ["_round_distances_parallel"]
    D_ser, _ = kernels._round_distances_serial(emb, np.arange(n), n)
    np.testing.assert_array_equal(D_par, D_ser)  # the first round: the same sums either way
