"""Sphinx configuration: numpydoc, autosummary and the sphinx-gallery of examples/.

Nothing here reaches the network (no intersphinx). Build with
``sphinx-build -W -b html doc doc/_build/html``; add ``-D plot_gallery=0`` to lay out the
gallery without running the examples.
"""

import re
import shutil
from pathlib import Path

import skorg

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"
GALLERY_SRC = HERE / "_gallery_src"

project = "skorg"
copyright = "the skorg developers, BSD-3-Clause"
version = release = skorg.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
autosummary_generate = True
autodoc_default_options = {"members": True}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
exclude_patterns = ["_build", "_gallery_src", "**.ipynb_checkpoints"]
templates_path = ["_templates"]
html_theme = "alabaster"
html_theme_options = {"description": "organize matrices, tensors and attention"}
html_static_path = []


def _gallery_source():
    """Copy examples/*.py beside a gallery header (examples/ itself holds only scripts)."""
    if GALLERY_SRC.exists():
        shutil.rmtree(GALLERY_SRC)
    GALLERY_SRC.mkdir()
    for script in sorted(EXAMPLES.glob("plot_*.py")):
        shutil.copy2(script, GALLERY_SRC / script.name)
    (GALLERY_SRC / "GALLERY_HEADER.rst").write_text(
        "Gallery of examples\n===================\n\n"
        "Scripts in ``examples/`` of the repository; each runs on its own "
        "(``python examples/plot_....py``), and the test suite runs them on small sizes.\n"
    )
    return str(GALLERY_SRC)


sphinx_gallery_conf = {
    "examples_dirs": _gallery_source(),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "reference_url": {},
    "backreferences_dir": None,
    "within_subsection_order": "FileNameSortKey",
}


_SKLEARN_REF = re.compile(r":(?:ref|doc):`([^`<]*?)\s*(?:<[^>]*>)?`")


def _plain_sklearn_refs(app, what, name, obj, options, lines):
    """Methods inherited from scikit-learn (set_output, get_params, ...) keep their docstrings,
    whose cross-references point into scikit-learn's own documentation: write them as text."""
    if not getattr(obj, "__module__", "").startswith("sklearn"):
        return
    for i, line in enumerate(lines):
        lines[i] = _SKLEARN_REF.sub(lambda m: m.group(1) or "the scikit-learn user guide", line)


def setup(app):
    app.connect("autodoc-process-docstring", _plain_sklearn_refs)
