"""The command line's contract on degenerate data, sizes and numeric options: a report that
says what is special about the data, or exit code 2 and one line, never a traceback."""

import json

import numpy as np
import pytest

from skorg import _cli
from skorg._cli import main


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(capsys, fragment, *argv):
    code, _, err = run(capsys, *argv)
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("skorg") and ": error: " in lines[0] and fragment in lines[0], err


@pytest.mark.parametrize("value", [0.0, 3.0, -2.5])
def test_organize_constant_data_reports_that_it_is_constant(capsys, tmp_path, value):
    np.save(tmp_path / "c.npy", np.full((12, 9), value))
    out_dir = tmp_path / "out"
    code, _, err = run(capsys, "organize", tmp_path / "c.npy", "-q", "-o", out_dir)
    assert code == 0, err
    results = json.loads((out_dir / "results.json").read_text())
    assert "is constant" in results["summary"][0]
    rows = results["tables"]["haar_sparsity"]
    assert all(r["holder_alpha"] is None for r in rows)  # no fit (NaN -> null)
    assert all(r["l1_entropy"] == pytest.approx(0.0 if value == 0 else 1.0) for r in rows)
    denoised = run(capsys, "organize", tmp_path / "c.npy", "--denoise", "-q", "-o", out_dir)
    assert denoised[0] == 0, denoised[2]
    np.testing.assert_allclose(np.load(out_dir / "denoised.npy"), value, atol=1e-12)


@pytest.mark.parametrize("factor", [1e-200, 1e200])
def test_organize_extreme_magnitudes_give_the_same_orders(capsys, tmp_path, factor):
    x = np.linspace(0, 1, 16)
    X = np.cos(3 * np.subtract.outer(x, x[:12]))[np.random.default_rng(0).permutation(16)]
    np.save(tmp_path / "a.npy", X)
    np.save(tmp_path / "b.npy", X * factor)
    assert run(capsys, "organize", tmp_path / "a.npy", "-q", "-o", tmp_path / "a")[0] == 0
    code, _, err = run(capsys, "organize", tmp_path / "b.npy", "-q", "-o", tmp_path / "b")
    assert code == 0, err
    for axis in (0, 1):
        np.testing.assert_array_equal(
            np.load(tmp_path / "a" / f"order_{axis}.npy"),
            np.load(tmp_path / "b" / f"order_{axis}.npy"),
        )
    a = json.loads((tmp_path / "a" / "results.json").read_text())["tables"]["haar_sparsity"]
    b = json.loads((tmp_path / "b" / "results.json").read_text())["tables"]["haar_sparsity"]
    for ra, rb in zip(a, b, strict=True):
        assert rb["l1_entropy"] == pytest.approx(ra["l1_entropy"], rel=1e-9)


def test_output_folder_never_mixes_runs(capsys, tmp_path):
    X = np.random.default_rng(1).random((10, 8))
    np.save(tmp_path / "x.npy", X)
    out_dir = tmp_path / "out"
    assert (
        run(capsys, "organize", tmp_path / "x.npy", "--compress", "0.5", "-q", "-o", out_dir)[0]
        == 0
    )
    assert (out_dir / "compressed.npy").is_file()
    (out_dir / "mine.txt").write_text("a file of the user's")
    assert run(capsys, "organize", tmp_path / "x.npy", "-q", "-o", out_dir)[0] == 0
    assert not (out_dir / "compressed.npy").exists()  # the earlier run's output is gone
    assert (out_dir / "mine.txt").read_text() == "a file of the user's"  # not ours: kept
    assert (out_dir / "organized.npy").is_file()


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["organize", "--synthetic", "--noise", "nan"], "argument --noise: expected a finite"),
        (["organize", "--synthetic", "--noise", "-1"], "argument --noise: must be at least 0"),
        (["demo", "--synthetic", "--noise", "inf"], "argument --noise: expected a finite"),
        (["organize", "--synthetic", "--seed", "-1"], "argument --seed: must be at least 0"),
        (["organize", "--synthetic", "--seed", str(2**40)], "must be at most 4294967295"),
        (["organize", "--synthetic", "--size", "100000"], "argument --size: must be at most"),
        (["demo", "--synthetic", "--size", "100000"], "argument --size: must be at most"),
        (["paraproduct-check", "--model", "none", "--M", "nan"], "expected a finite number"),
        (["paraproduct-check", "--model", "none", "--M", "inf"], "expected a finite number"),
        (["paraproduct-check", "--model", "none", "--M", "1e308"], "must lie in [-1e300"),
        (["organize", "--synthetic", "--compress", "nan"], "expected a finite number"),
        (["demo", "--max-length", "x"], "expected a number"),
        (["organize", "--synthetic", "--n-iter", "100000"], "argument --n-iter: must be at most"),
        (["demo", "--prune-steps", "100000"], "argument --prune-steps: must be at most 201"),
        (["nonsense"], "invalid choice"),
    ],
)
def test_bad_numeric_options_exit_2_in_one_line(capsys, argv, fragment):
    assert_one_line_error(capsys, fragment, *argv)


def test_long_axis_is_refused_up_front_with_the_figure(capsys, tmp_path):
    np.save(tmp_path / "wide.npy", np.zeros((4, 100_000)))
    assert_one_line_error(
        capsys, "100,000 entries on axis 1", "organize", tmp_path / "wide.npy", "-q"
    )


def test_memory_budget_is_checked_before_organizing(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SKORG_MAX_MEMORY", "1")  # MiB
    np.save(tmp_path / "x.npy", np.zeros((200, 200)))
    assert_one_line_error(capsys, "more than the memory budget", "organize", tmp_path / "x.npy")
    assert_one_line_error(capsys, "more than the memory budget", "demo", "--synthetic")


def test_corrupt_npz_is_one_line(capsys, tmp_path):
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 not really a zip")
    assert_one_line_error(capsys, "not a valid .npz", "organize", tmp_path / "bad.npz")


def test_unexpected_failures_are_one_line_not_a_traceback(capsys, monkeypatch):
    def broken(args):
        raise RuntimeError("something deep\nwith a second line")

    parser = _cli._build_parser

    def patched():
        p = parser()
        p._subparsers._group_actions[0].choices["organize"].set_defaults(func=broken)
        return p

    monkeypatch.setattr(_cli, "_build_parser", patched)
    assert_one_line_error(capsys, "RuntimeError: something deep", "organize", "--synthetic")
