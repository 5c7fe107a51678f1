"""skorg: organize matrices and tensors with partition trees, tree Haar wavelets and paraproducts.

The estimators are re-exported here; the topical subpackages hold everything else:
``skorg.graphs``, ``skorg.trees``, ``skorg.metrics``, ``skorg.organize``, ``skorg.transforms``,
``skorg.datasets``, ``skorg.io`` (file readers), and the optional ``skorg.attention`` and
``skorg.specialization`` (which need torch and are imported only explicitly).
``set_config(progress=False)`` silences every progress bar.
"""

__version__ = "0.1.0.dev0"

import importlib

from ._config import config_context, get_config, set_config
from ._threading import prefer_tbb

# The subpackages and the estimators come on first use (module __getattr__, PEP 562): a bare
# ``import skorg`` (the command line's start, a ``skorg.set_config``) then loads neither
# numba, SciPy nor scikit-learn; ``from skorg import questionnaire`` and ``skorg.trees`` load
# what they name.
_SUBPACKAGES = ("datasets", "graphs", "io", "metrics", "organize", "transforms", "trees")
_FACE = {
    "QuestionnaireOrganizer": "organize",
    "questionnaire": "organize",
    "ParaproductDecomposer": "transforms",
    "TreeHaarTransform": "transforms",
    "PartitionTree": "trees",
}

# before numba launches its threads (the first parallel kernel): see skorg/_threading.py
prefer_tbb()

__all__ = [
    "ParaproductDecomposer",
    "PartitionTree",
    "QuestionnaireOrganizer",
    "TreeHaarTransform",
    "__version__",
    "config_context",
    "datasets",
    "get_config",
    "graphs",
    "io",
    "metrics",
    "organize",
    "questionnaire",
    "set_config",
    "transforms",
    "trees",
]


def __getattr__(name):
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _FACE:
        value = getattr(importlib.import_module(f"{__name__}.{_FACE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
