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
        "generated/skorg.graphs.landmark_diffusion_eigenpairs.html",
        "generated/skorg.metrics.pairwise_tree_emd.html",
        "generated/skorg.io.read_array.html",
        "generated/skorg.set_config.html",
    ):
        assert (html / page).is_file(), page
    # estimator pages list the methods inherited from scikit-learn
    for name in ("organize.QuestionnaireOrganizer", "transforms.TreeHaarTransform"):
        page = (html / "generated" / f"skorg.{name}.html").read_text()
        for method in ("set_output", "get_params", "set_params", "fit_transform"):
            assert f"{name.split('.')[1]}.{method}" in page, (name, method)
    gallery = (html / "auto_examples" / "index.html").read_text()
    assert gallery.count("sphx-glr-thumbcontainer") == len(
        list((ROOT / "examples").glob("plot_*.py"))
    )


def _api_entries():
    """``{module: set of names}`` listed under autosummary directives in doc/api.rst."""
    entries, module, in_summary = {}, None, False
    for line in (ROOT / "doc" / "api.rst").read_text().splitlines():
        if line.startswith(".. currentmodule::"):
            module = line.split("::")[1].strip()
        elif line.startswith(".. autosummary::"):
            in_summary = True
        elif in_summary and line.startswith("   ") and not line.strip().startswith(":"):
            entries.setdefault(module, set()).add(line.strip())
        elif in_summary and line and not line.startswith(" "):
            in_summary = False
    return entries


OPTIONAL = ["attention", "specialization"]  # need torch


def _public_subpackages():
    import pkgutil

    import skorg

    return sorted(
        info.name
        for info in pkgutil.iter_modules(skorg.__path__)
        if info.ispkg and not info.name.startswith("_") and info.name not in OPTIONAL
    )


SUBPACKAGES = _public_subpackages()


@pytest.mark.parametrize("name", SUBPACKAGES + OPTIONAL)
def test_every_public_name_has_an_api_page(name):
    import importlib

    if name in OPTIONAL:
        pytest.importorskip("torch")
    module = importlib.import_module(f"skorg.{name}")
    listed = _api_entries().get(f"skorg.{name}", set())
    assert set(module.__all__) == listed, (
        f"missing from doc/api.rst: {sorted(set(module.__all__) - listed)}; "
        f"not public: {sorted(listed - set(module.__all__))}"
    )


def test_top_level_names_are_documented_in_their_subpackage():
    import types

    import skorg

    documented = [
        getattr(importlib_module(mod), name)
        for mod, names in _api_entries().items()
        if mod.startswith("skorg.") and mod.count(".") == 1 and mod[6:] in SUBPACKAGES
        for name in names
    ]
    own = _api_entries()["skorg"]
    for name in skorg.__all__:
        obj = getattr(skorg, name)
        if name == "__version__" or isinstance(obj, types.ModuleType) or name in own:
            continue
        assert any(obj is other for other in documented), name
    assert own <= set(skorg.__all__)


def importlib_module(name):
    import importlib

    return importlib.import_module(name)


def test_no_reference_to_files_outside_the_repository():
    import re

    # the design notes outside the repository ("SPEC section 4", "SPEC.md", "../shared/")
    pattern = re.compile(r"SPEC( section|\.md| \d)|\.\./shared|shared/(reference|seeds)")
    offenders = []
    for folder in ("skorg", "doc", "examples", "tests"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in {".py", ".rst", ".md"} and "_build" not in path.parts:
                if path.name == "test_docs.py":
                    continue
                for number, line in enumerate(path.read_text().splitlines(), 1):
                    if pattern.search(line):
                        offenders.append(f"{path.relative_to(ROOT)}:{number}")
    readme = (ROOT / "README.md").read_text()
    assert not pattern.search(readme)
    assert not offenders, offenders
