"""The documentation builds without a warning (the gallery laid out, its examples not run)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_sphinx_build_has_no_warning(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    pytest.importorskip("sphinx_gallery")
    # build a copy, so that generated pages never land in the working tree
    shutil.copytree(ROOT / "doc", tmp_path / "doc", ignore=shutil.ignore_patterns("_build"))
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-b",
            "html",
            "-D",
            "plot_gallery=0",
            str(tmp_path / "doc"),
            str(tmp_path / "html"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    html = tmp_path / "html"
    for page in (
        "index.html",
        "user_guide.html",
        "cli.html",
        "api.html",
        "auto_examples/index.html",
        "auto_examples/plot_grid_search_emd.html",
        "generated/skorg.organize.QuestionnaireOrganizer.html",
        "generated/skorg.report.Report.html",
    ):
        assert (html / page).is_file(), page
    gallery = (html / "auto_examples" / "index.html").read_text()
    assert gallery.count("sphx-glr-thumbcontainer") == len(
        list((ROOT / "examples").glob("plot_*.py"))
    )
