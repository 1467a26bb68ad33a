"""Actions: new datasets built from detector results (filtered sets, ...)."""

from spurious.actions.filter import FILTER_FORMATS, filter_dataset, kept_mask, write_filtered

__all__ = ["FILTER_FORMATS", "filter_dataset", "kept_mask", "write_filtered"]
