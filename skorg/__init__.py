"""skorg: organize matrices and tensors with partition trees, tree Haar wavelets and paraproducts."""

__version__ = "0.1.0.dev0"

from . import trees  # noqa: E402
from .trees import PartitionTree  # noqa: E402

__all__ = ["PartitionTree", "__version__", "trees"]
