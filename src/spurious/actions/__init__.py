"""Actions: new datasets built from analysis results (filtered sets, resampled sets)."""

from spurious.actions.filter import (
    FILTER_FORMATS,
    filter_dataset,
    filter_source,
    kept_mask,
    output_format,
    write_filtered,
)

__all__ = [
    "FILTER_FORMATS",
    "filter_dataset",
    "filter_source",
    "kept_mask",
    "output_format",
    "write_filtered",
]
