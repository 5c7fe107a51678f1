"""skorg: organize matrices and tensors with partition trees, tree Haar wavelets and paraproducts.

The estimators are re-exported here; the topical subpackages hold everything else:
``skorg.graphs``, ``skorg.trees``, ``skorg.metrics``, ``skorg.organize``, ``skorg.transforms``,
``skorg.datasets``, ``skorg.io`` (file readers), and the optional ``skorg.attention`` and
``skorg.specialization`` (which need torch and are imported only explicitly).
``set_config(progress=False)`` silences every progress bar.
"""

__version__ = "0.1.0.dev0"

from . import datasets, graphs, io, metrics, organize, transforms, trees
from ._config import config_context, get_config, set_config
from .organize import QuestionnaireOrganizer, questionnaire
from .transforms import ParaproductDecomposer, TreeHaarTransform
from .trees import PartitionTree

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
