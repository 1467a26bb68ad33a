"""``spurious ids``: the ids the product gives every row of a dataset.

Prediction, attribute and annotation files are matched to a dataset by id. A dataset
with an id column keeps it; one without gets 12-character content hashes of its task
fields (exact duplicates get ``-1``, ``-2`` ... suffixes). This command lists them, with
the row position and the texts, so a model's outputs can be keyed to them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from spurious.cli import options


@click.command("ids")
@options.data_argument(exists=True)
@options.task_option("Task of DATA.", mcq=True)
@options.input_options
@options.opt(
    "--out",
    "Write the table here (.csv, .tsv or .jsonl); default: CSV on standard output.",
    type=click.Path(path_type=Path, dir_okay=False),
)
@options.opt("--force", "Overwrite --out if it exists.", is_flag=True)
def ids(
    data: Path,
    task: str,
    field_map: tuple[str, ...],
    fmt: str | None,
    out: Path | None,
    force: bool,
) -> None:
    """List the id of every row of DATA (its id column, or 12-character content hashes).

    Columns: row (position among the loaded rows; rows without a gold label are left
    out, as in every run), id, the task's text fields and the label. Key a prediction
    file to these ids (``--predictions`` with an ``id`` column), or keep the file in
    this row order and pass ``--align rows``.

    \b
    Example:
      spurious ids dev.jsonl --task nli --out dev_ids.csv
    """
    from spurious.data import load_dataset
    from spurious.utils.io import atomic_write

    ds = load_dataset(data, task, field_map=options.parse_field_map(field_map), format=fmt)
    cols = [c for c in (*ds.task.text_fields, "label") if c in ds.frame.columns]
    table = ds.frame[["id", *cols]].copy()
    table.insert(0, "row", range(len(table)))
    if out is None:
        table.to_csv(sys.stdout, index=False)
        return
    if out.exists() and not force:
        raise click.UsageError(f"{out} exists; pass --force to overwrite it")
    suffix = out.suffix.lower()
    if suffix == ".jsonl":
        atomic_write(out, lambda p: table.to_json(p, orient="records", lines=True))
    elif suffix in (".csv", ".tsv"):
        sep = "\t" if suffix == ".tsv" else ","
        atomic_write(out, lambda p: table.to_csv(p, index=False, sep=sep))
    else:
        raise click.BadParameter(
            f"expected a .csv, .tsv or .jsonl file; got {out.name!r}", param_hint="--out"
        )
    click.echo(f"wrote {len(table):,} ids of {ds.name} to {out}")
