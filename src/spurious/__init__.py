"""spurious: find, measure and remove shortcuts in supervised datasets."""

from spurious._version import __version__
from spurious.data import Dataset, load_dataset

__all__ = ["Dataset", "__version__", "load_dataset"]
