"""Data layer: loading, validation, canonical fields, fingerprints and synthetic data."""

from spurious.data.dataset import Dataset
from spurious.data.loaders import load_dataset
from spurious.data.tasks import TASKS, Task, get_task

__all__ = ["TASKS", "Dataset", "Task", "get_task", "load_dataset"]
