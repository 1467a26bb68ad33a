"""Multiple-choice items: the layouts people have -> one canonical frame, and its checks.

One item is a ``question`` (plus an optional ``context`` passage), an ``options`` list of
2-10 strings and the gold option. The canonical frame stores the gold as a letter
(``label``: ``"A"``, ``"B"`` ...) and its 0-based position (``label_id``), so the gold
letter distribution, a model's predicted letters and every label-based statistic read the
same columns as the other tasks.

Layouts recognised without a field map (:func:`canonical_mcq_frame`):

* ARC / CommonsenseQA / OpenBookQA JSONL: ``question: {stem, choices: [{text, label}]}``
  and ``answerKey`` (a choice label: ``A``-``E`` or ``1``-``5``);
* Hugging Face ARC: ``question`` (str), ``choices: {text: [...], label: [...]}``,
  ``answerKey``;
* a list column ``choices`` / ``options`` / ``endings`` with ``answer`` /
  ``answer_index`` / ``answerKey`` / ``label`` (a 0-based index, a digit string as
  Hugging Face writes it for HellaSwag, or a letter);
* PIQA (``goal``, ``sol1``, ``sol2``, ``label``), SWAG (``sent1``/``sent2`` or
  ``startphrase``, ``ending0``...``ending3``, ``label``);
* MMLU's headerless CSV (question, A, B, C, D, answer letter) and a folder of such CSVs
  (one per subject; the subject becomes the item's ``group``), read by
  :func:`read_mmlu_csv` / :func:`read_mcq_folder`.

A ``field_map`` names the columns of any other layout: ``question``, ``context``,
``options`` (one list column, or several columns separated by commas:
``options=sol1,sol2``), ``label``, ``id``, ``group``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from spurious.exceptions import DataFormatError, EmptyDatasetError, LabelError, SchemaError
from spurious.utils.io import check_input_file

logger = logging.getLogger(__name__)

__all__ = [
    "LETTERS",
    "MAX_OPTIONS",
    "canonical_mcq_frame",
    "normalise_mcq",
    "option_counts",
    "read_mcq_folder",
    "read_mmlu_csv",
]

#: Most options an item may have.
MAX_OPTIONS = 10
#: Option letters in position order (the label names of an ``mcq`` dataset).
LETTERS = "ABCDEFGHIJ"

_QUESTION_COLUMNS = ("question", "stem", "ctx", "startphrase", "goal", "query", "prompt")
_OPTION_COLUMNS = ("options", "choices", "endings", "answers_list")
_LABEL_COLUMNS = ("answerKey", "answer_key", "answer_index", "answer_idx", "answer", "label")
_CANONICAL_KEYS = ("question", "context", "options", "label", "id", "group")
_FOLDER_SPLIT_SUFFIX = re.compile(r"_(test|dev|val|validation|train|auxiliary_train)$")


def option_counts(frame: pd.DataFrame) -> np.ndarray:
    """Number of options of each item (``int64``)."""
    return frame["options"].map(len).to_numpy(dtype=np.int64)


# -- layouts -> canonical columns ---------------------------------------------------------


def canonical_mcq_frame(
    frame: pd.DataFrame, field_map: Mapping[str, str] | None, name: str
) -> tuple[pd.DataFrame, dict[str, str]]:
    """Map a multiple-choice layout onto ``question``, ``options``, ``label`` (+ optional).

    Parameters
    ----------
    frame : pandas.DataFrame
        The source rows as read.
    field_map : mapping, optional
        ``{canonical: source column}``; ``options`` may name several columns joined by
        commas.
    name : str
        Dataset name for messages.

    Returns
    -------
    (frame, {canonical: source column})

    Examples
    --------
    >>> df = pd.DataFrame({"goal": ["Open a jar"], "sol1": ["twist the lid"],
    ...                    "sol2": ["eat the lid"], "label": [0]})
    >>> out, used = canonical_mcq_frame(df, None, "piqa")
    >>> out[["question", "options", "label"]].values.tolist()
    [['Open a jar', ['twist the lid', 'eat the lid'], 0]]
    """
    field_map = dict(field_map or {})
    frame = _parse_json_cells(frame)
    for key, col in field_map.items():
        if key not in _CANONICAL_KEYS:
            raise SchemaError(
                f"The 'field_map' parameter has an unknown key {key!r} for task 'mcq'; keys "
                f"must be among {list(_CANONICAL_KEYS)}."
            )
        for c in col.split(",") if key == "options" else [col]:
            if c.strip() not in frame.columns:
                raise SchemaError(
                    f"field_map maps {key!r} to column {c.strip()!r}, which is not in "
                    f"{name!r}; fields found: {list(map(str, frame.columns))}."
                )
    used: dict[str, str] = {}
    out = pd.DataFrame(index=frame.index)
    nested = _nested_question(frame) and "question" not in field_map
    # -- question (and the choices nested in it: ARC / CommonsenseQA / OpenBookQA)
    if nested:
        q = frame["question"]
        out["question"] = [_get(v, "stem", i, name) for i, v in enumerate(q)]
        choices = [_get(v, "choices", i, name) for i, v in enumerate(q)]
        texts, labels = zip(*(_choice_list(c, i, name) for i, c in enumerate(choices)), strict=True)
        out["options"] = list(texts)
        used["question"] = "question.stem"
        used["options"] = "question.choices"
        choice_labels: list[list[str]] | None = list(labels)
    else:
        qcol = field_map.get("question") or _first(frame, _QUESTION_COLUMNS)
        if qcol is None and {"sent1", "sent2"} <= set(frame.columns):  # SWAG
            out["question"] = (
                frame["sent1"].astype(str).str.strip()
                + " "
                + frame["sent2"].astype(str).str.strip()
            ).str.strip()
            used["question"] = "sent1+sent2"
        elif qcol is None:
            raise SchemaError(
                f"Dataset {name!r} (task 'mcq') has no question column; looked for "
                f"{list(_QUESTION_COLUMNS)}; fields found: {list(map(str, frame.columns))}. "
                "Map it with field_map={'question': '<your column>'}."
            )
        else:
            out["question"] = frame[qcol]
            used["question"] = qcol
        choice_labels = None
        out["options"], used["options"], choice_labels = _options(frame, field_map, name)
    # -- gold
    lcol = field_map.get("label") or _first(frame, _LABEL_COLUMNS)
    if lcol is None:
        raise SchemaError(
            f"Dataset {name!r} (task 'mcq') has no answer column; looked for "
            f"{list(_LABEL_COLUMNS)}; fields found: {list(map(str, frame.columns))}. Map it "
            "with field_map={'label': '<your column>'}."
        )
    used["label"] = lcol
    gold = frame[lcol].tolist()
    if choice_labels is not None:
        # The key names a choice label ("C", "3"): its position among the item's labels.
        gold = [
            _by_choice_label(g, labs, i, name)
            for i, (g, labs) in enumerate(zip(gold, choice_labels, strict=True))
        ]
    out["label"] = gold
    for key, aliases in (
        ("context", ("context", "passage", "fact1", "para")),
        ("id", ("id", "ind", "uid", "guid", "qid")),
        ("group", ("group", "subject", "category")),
    ):
        found = field_map.get(key) or _first(frame, aliases)
        if found is not None and not (key == "context" and found == "question"):
            out[key] = frame[found]
            used[key] = found
    return out.reset_index(drop=True), used


def _parse_json_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns whose every cell is JSON text of a list or object (a CSV written from
    list-valued options, or ARC's nested question) as the lists / objects."""
    out = None
    for c in frame.columns:
        col = frame[c]
        if not (pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col)) or not len(
            col
        ):
            continue
        if not col.map(lambda v: isinstance(v, str) and v[:1] in "[{" and v[-1:] in "]}").all():
            continue
        try:
            parsed = col.map(json.loads)
        except ValueError:
            continue
        out = frame.copy() if out is None else out
        out[c] = parsed
    return frame if out is None else out


def _nested_question(frame: pd.DataFrame) -> bool:
    if "question" not in frame.columns or not len(frame):
        return False
    return isinstance(frame["question"].iloc[0], dict)


def _first(frame: pd.DataFrame, names: Sequence[str]) -> str | None:
    return next((c for c in names if c in frame.columns), None)


def _get(v: object, key: str, i: int, name: str) -> object:
    if not isinstance(v, dict) or key not in v:
        got = sorted(v) if isinstance(v, dict) else type(v).__name__
        raise SchemaError(
            f"Dataset {name!r}, row {i + 1}: field 'question' must be an object with "
            f"{key!r} (the ARC/CommonsenseQA layout). Got {got} instead."
        )
    return v[key]


def _choice_list(c: object, i: int, name: str) -> tuple[list[object], list[str]]:
    """``[{text, label}]`` or ``{text: [...], label: [...]}`` -> (texts, labels)."""
    if isinstance(c, dict) and "text" in c:
        texts = list(c["text"])
        labels = [str(x) for x in c.get("label", LETTERS[: len(texts)])]
        return texts, labels
    if isinstance(c, list | tuple | np.ndarray):
        texts, labels = [], []
        for j, ch in enumerate(c):
            if isinstance(ch, dict):
                texts.append(ch.get("text"))
                labels.append(str(ch.get("label", LETTERS[j] if j < len(LETTERS) else j)))
            else:
                texts.append(ch)
                labels.append(LETTERS[j] if j < len(LETTERS) else str(j))
        return texts, labels
    raise SchemaError(
        f"Dataset {name!r}, row {i + 1}: 'choices' must be a list of {{text, label}} objects "
        f"or {{text: [...], label: [...]}}. Got {type(c).__name__} instead."
    )


def _options(
    frame: pd.DataFrame, field_map: Mapping[str, str], name: str
) -> tuple[list[object], str, list[list[str]] | None]:
    """The options of each row (a list column, several columns, or HF's choices dict)."""
    spec = field_map.get("options")
    if spec is not None and "," in spec:
        cols = [c.strip() for c in spec.split(",")]
        return [list(r) for r in frame[cols].itertuples(index=False, name=None)], spec, None
    col = spec or _first(frame, _OPTION_COLUMNS)
    if col is not None:
        values = frame[col].tolist()
        if values and isinstance(values[0], dict):  # HF ARC: {"text": [...], "label": [...]}
            pairs = [_choice_list(v, i, name) for i, v in enumerate(values)]
            return [p[0] for p in pairs], col, [p[1] for p in pairs]
        return values, col, None
    for prefix in ("sol", "ending", "option", "choice"):
        start = 1 if f"{prefix}1" in frame.columns and f"{prefix}0" not in frame.columns else 0
        cols = []
        while f"{prefix}{start + len(cols)}" in frame.columns:
            cols.append(f"{prefix}{start + len(cols)}")
        if len(cols) >= 2:
            return (
                [list(r) for r in frame[cols].itertuples(index=False, name=None)],
                ",".join(cols),
                None,
            )
    letters = [c for c in LETTERS if c in frame.columns]
    if len(letters) >= 2 and letters == list(LETTERS[: len(letters)]):  # MMLU with a header
        return (
            [list(r) for r in frame[letters].itertuples(index=False, name=None)],
            ",".join(letters),
            None,
        )
    raise SchemaError(
        f"Dataset {name!r} (task 'mcq') has no options; looked for a list column "
        f"{list(_OPTION_COLUMNS)}, numbered columns (sol1, sol2 / ending0...) or letter columns "
        f"A, B, ...; fields found: {list(map(str, frame.columns))}. Map them with "
        "field_map={'options': '<list column>'} or {'options': 'col1,col2,...'}."
    )


def _by_choice_label(g: object, labels: Sequence[str], i: int, name: str) -> object:
    if _missing(g):
        return None
    key = str(g).strip()
    if key in labels:
        return labels.index(key)
    raise LabelError(
        f"Dataset {name!r}, row {i + 1}: answer key {key!r} is not one of the item's option "
        f"labels {list(labels)}."
    )


# -- files and folders ---------------------------------------------------------------------


def read_mmlu_csv(path: Path) -> tuple[pd.DataFrame, list[int]]:
    """MMLU's headerless CSV: question, the options, the answer letter (last column).

    Examples
    --------
    >>> import tempfile, os
    >>> p = Path(tempfile.mkdtemp()) / "astronomy_test.csv"
    >>> _ = p.write_text('What is the Sun?,a star,a planet,a moon,a comet,A\\n')
    >>> read_mmlu_csv(p)[0][["question", "options", "label"]].values.tolist()
    [['What is the Sun?', ['a star', 'a planet', 'a moon', 'a comet'], 'A']]
    """
    check_input_file(path, what="Data file")  # a FIFO or device would block or never end
    try:
        raw = pd.read_csv(path, header=None, dtype=str, keep_default_na=False, encoding="utf-8")
    except UnicodeDecodeError as e:
        raise DataFormatError(f"{str(path)!r} is not valid UTF-8 ({e}).") from e
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        raise DataFormatError(f"Could not read {str(path)!r} as CSV: {e}") from e
    if raw.shape[1] < 4:
        raise DataFormatError(
            f"{str(path)!r}: an MMLU-style CSV needs question, at least two options and the "
            f"answer letter per row (>= 4 columns). Got {raw.shape[1]} column(s)."
        )
    frame = pd.DataFrame(
        {
            "question": raw.iloc[:, 0],
            "options": [list(r) for r in raw.iloc[:, 1:-1].itertuples(index=False, name=None)],
            "label": raw.iloc[:, -1].str.strip(),
        }
    )
    return frame, list(range(1, len(frame) + 1))


def looks_headerless(path: Path) -> bool:
    """Whether a CSV's first line is data (MMLU) rather than column names."""
    try:
        check_input_file(path, what="Data file")
        first = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False)
    except Exception:  # unreadable: the regular reader gives the error
        return False
    cells = {str(c).strip().lower() for c in first.iloc[0]} if len(first) else set()
    known = {c.lower() for c in (*_QUESTION_COLUMNS, *_OPTION_COLUMNS, *_LABEL_COLUMNS)}
    return not (cells & known)


def read_mcq_folder(path: Path) -> tuple[pd.DataFrame, list[int]]:
    """A folder of MMLU-style CSVs, one per subject; the subject is each item's ``group``.

    The subject is the file stem without a ``_test`` / ``_dev`` / ``_val`` suffix; ids
    are ``<subject>/<row>`` so they stay stable when subjects are added.
    """
    files = sorted(p for p in path.iterdir() if p.suffix.lower() == ".csv" and p.is_file())
    if not files:
        raise DataFormatError(
            f"Data path {str(path)!r} is a folder without .csv files; a multiple-choice folder "
            "holds one MMLU-style CSV per subject."
        )
    frames, rows = [], []
    for f in files:
        part, r = read_mmlu_csv(f) if looks_headerless(f) else _read_headed_csv(f)
        subject = _FOLDER_SPLIT_SUFFIX.sub("", f.stem)
        part.insert(0, "id", [f"{subject}/{k}" for k in r])
        part["group"] = subject
        frames.append(part)
        rows.extend(r)
    return pd.concat(frames, ignore_index=True), rows


def _read_headed_csv(path: Path) -> tuple[pd.DataFrame, list[int]]:
    check_input_file(path, what="Data file")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    out, _ = canonical_mcq_frame(frame, None, path.stem)
    return out, list(range(2, len(out) + 2))


# -- validation -----------------------------------------------------------------------------


def normalise_mcq(
    frame: pd.DataFrame, rows: np.ndarray, name: str, drop_no_gold: bool
) -> tuple[pd.DataFrame, np.ndarray, tuple[str, ...], np.ndarray]:
    """Options as lists of 2-10 distinct strings, the gold as letter + index; optional context.

    Returns ``(frame, rows, label_names, kept positions)`` like
    :func:`~spurious.data.canonical.normalise_labels`. The gold may be a 0-based index
    (int or digit string, as Hugging Face writes it) or a letter (``A``-``J``, any case).

    Raises
    ------
    SchemaError
        An item with fewer than 2 or more than 10 options, or an option that is not a
        non-empty string. Two options with the same text (after collapsing whitespace;
        case counts) drop the item with a warning, or raise with ``drop_no_gold=False``.
    LabelError
        A gold answer outside the item's options.
    """
    options, duplicated = [], []
    for v, row in zip(frame["options"], rows, strict=True):
        opts, problem = _option_list(v, row, name)
        options.append(opts)
        duplicated.append(problem)
    frame["options"] = options
    if "context" in frame:
        frame["context"] = [("" if _missing(v) else str(v)) for v in frame["context"]]
    gold = frame["label"].tolist()
    missing = np.array([_missing(g) or str(g).strip() in ("", "-") for g in gold])
    dup = np.array([d is not None for d in duplicated])
    if not drop_no_gold and (missing.any() or dup.any()):
        i = int(np.flatnonzero(missing | dup)[0])
        if missing[i]:
            raise LabelError(f"Dataset {name!r}, row {rows[i]}: no gold answer (got {gold[i]!r}).")
        raise SchemaError(str(duplicated[i]))
    if missing.any():
        logger.info("%s: dropped %d item(s) without a gold answer", name, int(missing.sum()))
    if dup.any():
        # CommonsenseQA's own dev set repeats an option in 24 of 1,221 items: an error
        # would make the benchmark unreadable, so such items are left out, loudly.
        # Ids name an item across the files of a folder; row numbers are per file.
        where = (frame["id"] if "id" in frame else pd.Series(rows))[dup].tolist()[:5]
        # INFO here, as for rows without a gold label: a run says it once, as a warning
        # (spurious.inputs), with the count in frame.attrs.
        logger.info(
            "%s: dropped %d item(s) whose options repeat a text (%s%s; e.g. %s); a "
            "repeated option makes the gold ambiguous or the item easier. Pass "
            "drop_no_gold=False to make this an error.",
            name,
            int(dup.sum()),
            where,
            " ..." if dup.sum() > 5 else "",
            duplicated[int(np.flatnonzero(dup)[0])],
        )
    kept = np.flatnonzero(~(missing | dup))
    frame = frame.iloc[kept].reset_index(drop=True)
    rows = rows[kept]
    if len(frame) == 0:
        raise EmptyDatasetError(f"Dataset {name!r} has no items with a gold answer.")
    frame.attrs["n_dropped_no_gold"] = int(missing.sum())
    frame.attrs["n_dropped_duplicate_options"] = int((dup & ~missing).sum())
    ids = [
        _gold_index(g, len(opts), row, name)
        for g, opts, row in zip(frame["label"], frame["options"], rows, strict=True)
    ]
    k_max = int(max(len(o) for o in frame["options"]))
    label_names = tuple(LETTERS[:k_max])
    frame["label_id"] = np.asarray(ids, dtype=np.int64)
    frame["label"] = [label_names[k] for k in ids]
    return frame, rows, label_names, kept


def _option_list(v: object, row: int, name: str) -> tuple[list[str], str | None]:
    """The options as strings, and a message when two of them are the same text."""
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, tuple):
        v = list(v)
    if not isinstance(v, list):
        raise SchemaError(
            f"Dataset {name!r}, row {row}: field 'options' must be a list of strings. Got "
            f"{type(v).__name__} {v!r} instead."
        )
    opts = []
    for j, o in enumerate(v):
        if isinstance(o, float | int | np.integer | np.floating) and not _missing(o):
            o = str(o.item() if isinstance(o, np.generic) else o)  # "3", "0.5": numeric options
        if not isinstance(o, str) or not o.strip():
            raise SchemaError(
                f"Dataset {name!r}, row {row}: option {LETTERS[j] if j < len(LETTERS) else j} "
                f"must be a non-empty string. Got {o!r} instead."
            )
        opts.append(o)
    if len(opts) < 2 or len(opts) > MAX_OPTIONS:
        raise SchemaError(
            f"Dataset {name!r}, row {row}: an item needs 2 to {MAX_OPTIONS} options. Got "
            f"{len(opts)}: {opts!r}."
        )
    seen: dict[str, int] = {}
    for j, o in enumerate(opts):
        # Case counts: "Rr" and "rr" are different answers (ARC genetics items).
        key = " ".join(o.split())
        if key in seen:
            return opts, (
                f"Dataset {name!r}, row {row}: options {LETTERS[seen[key]]} and {LETTERS[j]} "
                f"are the same text ({o!r}); duplicate options make the gold ambiguous."
            )
        seen[key] = j
    return opts, None


def _gold_index(g: object, k: int, row: int, name: str) -> int:
    if isinstance(g, np.generic):
        g = g.item()
    if isinstance(g, float) and g.is_integer():
        g = int(g)
    idx: int | None = None
    if isinstance(g, int) and not isinstance(g, bool):
        idx = g
    elif isinstance(g, str):
        s = g.strip()
        if s.isdigit():
            idx = int(s)
        elif len(s) == 1 and s.upper() in LETTERS:
            idx = LETTERS.index(s.upper())
    if idx is None or not 0 <= idx < k:
        raise LabelError(
            f"Dataset {name!r}, row {row}: gold answer {g!r} is outside the item's {k} "
            f"options; expected a letter {LETTERS[0]}-{LETTERS[k - 1]} or a 0-based index "
            f"0-{k - 1}."
        )
    return idx


def _missing(v: object) -> bool:
    return v is None or (isinstance(v, float | np.floating) and np.isnan(v))
