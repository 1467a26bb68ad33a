"""The *hard* (anti-biased) subset a debiasing comparison is scored on.

By default the debiasing analysis calls hard the evaluation rows its bias model gets
wrong; how strong that bias model is decides the subset (a 58%-accurate hypothesis-only
MLP and a strong hypothesis-only model give subsets with Jaccard 0.45 on SNLI dev;
issue 19). A user who has a subset of their own (Gururangan et al.'s hard SNLI test
pairs, an annotated challenge set, an earlier run's anti-biased marks) passes it with
:func:`load_hard_subset`:

- ``"file:<path>"``: ids of the hard rows, one per line (``.txt``), or a table
  (``.jsonl``/``.json``/``.csv``/``.tsv``/``.parquet``) with an ``id`` column and
  optionally a 0/1 flag column (``hard``, ``anti_biased`` or ``flag``): with a flag,
  it must cover every evaluation row; without, the listed ids are the hard rows;
- ``"marks:<run dir or marks.parquet>[#<definition>]"``: the evaluation split's
  anti-biased marks of an earlier run (cartography, minority, ...; ``results.MARK_COLUMNS``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.exceptions import DataFormatError, ParameterError
from spurious.utils.io import check_input_file, text_lines

__all__ = ["FLAG_COLUMNS", "load_hard_subset"]

#: Column names read as a 0/1 "hard" flag per id (first found wins).
FLAG_COLUMNS = ("hard", "anti_biased", "flag")


def _read_table(path: Path) -> pd.DataFrame:
    suffix = path.suffix.lower()
    # A regular file of bounded size (a FIFO would block); lines end at \n only.
    check_input_file(path, what="Hard subset", kind="ids")
    try:
        if suffix == ".txt":
            ids = [ln.strip() for _, ln in text_lines(path.read_text(encoding="utf-8"))]
            return pd.DataFrame({"id": [i for i in ids if i]})
        if suffix in (".jsonl", ".json"):
            text = path.read_text(encoding="utf-8")
            if suffix == ".json" and text.lstrip().startswith("["):
                return pd.DataFrame(json.loads(text))
            return pd.DataFrame([json.loads(ln) for _, ln in text_lines(text) if ln.strip()])
        if suffix in (".csv", ".tsv"):
            return pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",", dtype={"id": str})
        if suffix == ".parquet":
            return pd.read_parquet(path)
    except (OSError, ValueError) as e:
        raise DataFormatError(f"Cannot read the hard subset {str(path)!r}: {e}") from None
    raise DataFormatError(
        f"Hard subset {str(path)!r}: expected .txt, .jsonl, .json, .csv, .tsv or .parquet; "
        f"got {suffix!r}."
    )


def _from_file(path: Path, ids: list[str]) -> tuple[np.ndarray, str]:
    frame = _read_table(path)
    if "id" not in frame.columns:
        raise DataFormatError(
            f"Hard subset {str(path)!r} has no 'id' column; got columns {list(frame.columns)}."
        )
    frame = frame.assign(id=frame["id"].astype(str))
    flag = next((c for c in FLAG_COLUMNS if c in frame.columns), None)
    known = set(ids)
    if flag is None:
        listed = set(frame["id"])
        matched = listed & known
        if not matched:
            raise DataFormatError(
                f"Hard subset {str(path)!r} lists {len(listed):,} ids and none is an id of the "
                f"evaluation split (e.g. {sorted(listed)[:3]}); the product's ids are the "
                "dataset's 'id' field or 12-character content hashes (Dataset.ids)."
            )
        return np.array([i in matched for i in ids]), (
            f"the {len(matched):,} evaluation rows listed in {path.name} "
            f"({len(listed) - len(matched):,} listed ids not in the split)"
        )
    values = pd.to_numeric(frame[flag], errors="coerce")
    bad = ~values.isin([0, 1])
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataFormatError(
            f"Hard subset {str(path)!r}, row {row + 1} (id {frame['id'].iloc[row]!r}): "
            f"column {flag!r} must be 0 or 1 (True/False); got {frame[flag].iloc[row]!r}."
        )
    table = pd.Series(values.astype(bool).to_numpy(), index=frame["id"])
    table = table[~table.index.duplicated()]
    missing = [i for i in ids if i not in table.index]
    if missing:
        raise DataFormatError(
            f"Hard subset {str(path)!r} flags {len(table):,} ids but lacks {len(missing):,} of "
            f"the evaluation split's {len(ids):,}, e.g. {missing[:3]}; a flag file must cover "
            "every evaluation row (or list only the hard ids, without a flag column)."
        )
    return table.loc[ids].to_numpy(dtype=bool), f"the rows flagged '{flag}' in {path.name}"


def _from_marks(spec: str, ids: list[str]) -> tuple[np.ndarray, str]:
    from spurious.marks import collect_marks

    where, _, definition = spec.partition("#")
    path = Path(where)
    source: object = path
    if path.suffix == ".parquet":
        try:
            source = pd.read_parquet(path)
        except (OSError, ValueError) as e:
            raise DataFormatError(f"Cannot read the marks {str(path)!r}: {e}") from None
    marks = collect_marks(source)
    marks = marks[marks["split"] == "eval"]
    found = sorted(marks["definition"].unique())
    if not definition:
        if len(found) != 1:
            raise ParameterError(
                f"The 'hard_subset' marks {where!r} hold {len(found)} definitions for the "
                f"evaluation split ({found}); name one: 'marks:{where}#<definition>'."
            )
        definition = found[0]
    elif definition not in found:
        raise ParameterError(
            f"The 'hard_subset' marks {where!r} have no evaluation marks of definition "
            f"{definition!r}; found {found}."
        )
    table = marks[marks["definition"] == definition].drop_duplicates("id").set_index("id")
    missing = [i for i in ids if i not in table.index]
    if missing:
        raise DataFormatError(
            f"The {definition!r} marks in {where!r} lack {len(missing):,} of the evaluation "
            f"split's {len(ids):,} ids, e.g. {missing[:3]}: were they made on another "
            "evaluation split?"
        )
    return (
        table.loc[ids, "anti_biased"].to_numpy(dtype=bool),
        f"the evaluation rows marked anti-biased by {definition!r} ({path.name})",
    )


def load_hard_subset(spec: str, dataset: Dataset) -> tuple[np.ndarray, str]:
    """A boolean mask of ``dataset``'s hard rows and a description of where it came from.

    Parameters
    ----------
    spec : str
        ``"file:<path>"`` or ``"marks:<run dir or marks.parquet>[#<definition>]"``
        (module docstring).
    dataset : Dataset
        The evaluation split (its ids align the subset).

    Returns
    -------
    mask : ndarray of bool, shape (len(dataset),)
    description : str
        For the report ("the 1,234 evaluation rows listed in hard.txt ...").

    Examples
    --------
    >>> import tempfile, os
    >>> ds = Dataset.from_frame(pd.DataFrame({"id": ["a", "b", "c"], "text": ["x", "y", "z"],
    ...                                       "label": ["neg", "pos", "neg"]}), "text")
    >>> path = os.path.join(tempfile.mkdtemp(), "hard.txt")
    >>> _ = open(path, "w").write("c\\na\\nnot-in-split\\n")
    >>> mask, what = load_hard_subset(f"file:{path}", ds)
    >>> mask.tolist(), what
    ([True, False, True], 'the 2 evaluation rows listed in hard.txt (1 listed ids not in the split)')
    """
    kind, sep, arg = spec.partition(":")
    if not sep or kind not in ("file", "marks") or not arg:
        raise ParameterError(
            "The 'hard_subset' parameter must be 'file:<path>' (ids, or ids with a 0/1 "
            f"flag) or 'marks:<run dir>[#<definition>]'; got {spec!r}."
        )
    ids = [str(i) for i in dataset.ids]
    if kind == "file":
        path = Path(arg)
        if not path.exists():
            raise ParameterError(f"The 'hard_subset' file {arg!r} does not exist.")
        mask, what = _from_file(path, ids)
    else:
        mask, what = _from_marks(arg, ids)
    if not mask.any():
        raise DataFormatError(f"The hard subset {spec!r} marks none of the evaluation rows.")
    return mask, what
