import os
from pathlib import Path

# sklearn's array-API estimator check (numpy namespace) needs this set before scipy loads
os.environ.setdefault("SCIPY_ARRAY_API", "1")
# the parallel paths run whatever the load of the machine (skorg._threading would otherwise
# keep a call on one thread while the cores are taken, which changes no result but which
# kernel runs); tests/test_threading.py tests that watch
os.environ.setdefault("SKORG_SERIAL_WHEN_BUSY", "0")

import numpy as np
import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def reference():
    """Load a reference npz of the original implementation by case name."""

    def load(name):
        with np.load(DATA / f"{name}.npz") as z:
            return {k: z[k] for k in z.files}

    return load


def ref_tree(data, prefix):
    from skorg.trees import PartitionTree

    return PartitionTree.from_levels(data[f"{prefix}_levels"], data[f"{prefix}_leaf_order"])


def pytest_configure(config):
    # CI must run the torch-based tests, never skip them for a missing install
    if os.environ.get("CI"):
        import importlib.util
        import shutil

        for mod in ("torch", "transformers", "dask", "pynndescent"):
            if importlib.util.find_spec(mod) is None:
                raise pytest.UsageError(f"CI needs {mod} installed (see the README test command).")
        if shutil.which("chromium") is None:
            raise pytest.UsageError("CI needs Debian's chromium for the report rendering test.")
