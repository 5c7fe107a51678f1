"""skorg: organize matrices and tensors with partition trees, tree Haar wavelets and paraproducts.

The estimators are re-exported here; the topical subpackages hold everything else:
``skorg.graphs``, ``skorg.trees``, ``skorg.metrics``, ``skorg.organize``, ``skorg.transforms``,
``skorg.datasets``, and the optional ``skorg.attention`` and ``skorg.specialization``
(which need torch and are imported only explicitly).
"""

__version__ = "0.1.0.dev0"

from . import datasets, graphs, metrics, organize, transforms, trees
from .organize import QuestionnaireOrganizer, questionnaire
from .transforms import ParaproductDecomposer, TreeHaarTransform
from .trees import PartitionTree

__all__ = [
    "ParaproductDecomposer",
    "PartitionTree",
    "QuestionnaireOrganizer",
    "TreeHaarTransform",
    "__version__",
    "datasets",
    "graphs",
    "metrics",
    "organize",
    "questionnaire",
    "transforms",
    "trees",
]
