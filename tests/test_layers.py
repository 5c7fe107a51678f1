"""The package's layers, read from the source with ``ast``.

Layers, bottom first: kernels and the shared checks; graphs (affinities, diffusion); trees;
tree metrics and transforms; the organizer; attention and the specialization lab; the
report and the command line. A module imports only from its own layer or below, the
subpackages import each other without a circle, and a name that crosses a subpackage is public
and comes through the subpackage's face (``from ..graphs import x``), never from one of its
private modules.
"""

import ast
from pathlib import Path

import pytest

import skorg

ROOT = Path(skorg.__file__).parent

# unit (subpackage or top-level module) -> layer
LAYERS = {
    "skorg._kernels": 0,
    "skorg._validation": 0,
    "skorg._blas": 0,
    "skorg._selection": 0,
    "skorg._labels": 0,
    "skorg._sparse_input": 0,
    "skorg._config": 0,
    "skorg._progress": 0,
    "skorg._scratch": 0,
    "skorg._threading": 0,
    "skorg.graphs": 1,
    "skorg.stats": 1,  # intervals and tests: plain arrays, nothing of the geometry
    "skorg.io": 1,  # file readers: plain (labelled) arrays
    "skorg.trees": 2,
    "skorg.metrics": 3,
    "skorg.transforms": 3,
    "skorg.datasets": 3,
    "skorg.organize": 4,
    "skorg.attention": 5,
    "skorg.specialization": 5,
    "skorg.report": 6,
    "skorg._cli": 6,
    "skorg._warmup": 6,  # compiles the kernels by running the estimators on small data
    "skorg.__main__": 6,
    "skorg": 7,  # the package face re-exports from everything
}


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def _unit(module):
    """The layered unit a dotted module name belongs to."""
    parts = module.split(".")
    if len(parts) == 1:
        return "skorg"
    return ".".join(parts[:2])


def _is_module(dotted):
    base = ROOT.parent.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _imports(module, path):
    """(target module, imported names, line) of every skorg import, lazy ones included."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "skorg" or target.startswith("skorg."):
                names = [a.name for a in node.names]
                modules = [n for n in names if _is_module(f"{target}.{n}")]
                for name in modules:  # "from . import _emd": the name is a module
                    yield f"{target}.{name}", [], node.lineno
                rest = [n for n in names if n not in modules]
                if rest:
                    yield target, rest, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("skorg"):
                    yield alias.name, [], node.lineno


def _dunder(name):
    return name.startswith("__") and name.endswith("__")


# "from . import __version__" reads package metadata, not a layer: left out
EDGES = [
    (module, path, target, names, line)
    for module, path in _modules()
    for target, names, line in _imports(module, path)
    if not (names and all(_dunder(n) for n in names))
]


def test_every_module_has_a_layer():
    missing = sorted({_unit(m) for m, _ in _modules()} - set(LAYERS))
    assert not missing, f"add these units to LAYERS: {missing}"


def test_no_upward_import():
    bad = [
        f"{path.relative_to(ROOT.parent)}:{line} imports {target}"
        for module, path, target, _, line in EDGES
        if LAYERS[_unit(target)] > LAYERS[_unit(module)]
    ]
    assert not bad, "\n".join(bad)


def test_no_circle_between_subpackages():
    graph = {}
    for module, _, target, _, _ in EDGES:
        a, b = _unit(module), _unit(target)
        if a != b and a != "skorg":
            graph.setdefault(a, set()).add(b)
    state = {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                pytest.fail("import circle: " + " -> ".join([*stack, node, nxt]))
            if nxt not in state:
                visit(nxt, [*stack, node])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])


def test_no_private_name_crosses_a_subpackage():
    bad = []
    for module, path, target, names, line in EDGES:
        if _unit(module) == _unit(target) or LAYERS[_unit(target)] == 0:
            continue  # inside one subpackage, or the bottom layer's shared modules
        where = f"{path.relative_to(ROOT.parent)}:{line}"
        private = [n for n in names if n.startswith("_")]
        if private:
            bad.append(f"{where} imports private {private} from {target}")
        if any(part.startswith("_") for part in target.split(".")[2:]):
            bad.append(f"{where} imports from {target}, a private module of another subpackage")
    assert not bad, "\n".join(bad)


def test_the_checker_sees_lazy_and_relative_imports():
    # the oracle of the checks above: known imports, one lazy and one relative, are found
    found = {(m, t) for m, _, t, _, _ in EDGES}
    assert ("skorg.trees._flexible", "skorg.graphs") in found  # lazy, inside flexible_tree
    assert ("skorg.metrics._knn_emd", "skorg.graphs") in found  # relative, at module level
    assert ("skorg.metrics", "skorg.graphs") in found
