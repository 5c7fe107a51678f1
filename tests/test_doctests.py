"""Every docstring example in the package runs and prints what it shows.

The same examples run under ``pytest --doctest-modules skorg``; this module puts them in the
README's test command (``pytest -q`` collects ``tests/`` only).
"""

import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import skorg

NEEDS_TORCH = ("skorg.attention", "skorg.specialization")


def _modules():
    names = [skorg.__name__]
    for info in pkgutil.walk_packages(skorg.__path__, prefix="skorg."):
        if not info.name.endswith("__main__"):  # importing it runs the command line
            names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    if name.startswith(NEEDS_TORCH):
        pytest.importorskip("torch")
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=0)
    tests = [t for t in finder.find(module, name) if t.examples]
    # examples print with numpy's default options, whatever another test set
    with np.printoptions(**np.get_printoptions()):
        np.set_printoptions(legacy=False)
        failures = []
        for test in tests:
            result = runner.run(test, out=failures.append)
            assert result.failed == 0 or failures, test.name
    assert not failures, "".join(failures)
