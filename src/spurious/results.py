"""The one result type every analysis returns, and its on-disk form.

On disk (inside a run directory, see ``docs/run-directory.md``)::

    <dir>/metrics.json     flat {metric name: number}
    <dir>/scores.parquet   one row per example, keyed by ``id``
    <dir>/result.json      analysis name, status, params, provenance, summary, headline,
                           details
    <dir>/marks.parquet    optional: anti-biased marks for every split (``MARK_COLUMNS``)
    <dir>/tables/<name>.parquet
                           optional: dataset-level tables too long for ``details``
                           (the atlas' statistics of every token x label)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

import pandas as pd

from spurious._version import __version__
from spurious.exceptions import AnalysisError, ParameterError, ResultLoadError
from spurious.provenance import Provenance
from spurious.utils.io import atomic_write, atomic_write_json, output_errors, read_json

RESULT_FORMAT_VERSION = 1

#: Columns of the anti-biased marks table (``Result.marks``, ``marks.parquet``), long format:
#: one row per example, split and definition. Analyses that mark examples anti-biased
#: (cartography, partial-input cartography, minority examples: paper 002 Sec. 3) fill it
#: for the training split *and* the evaluation split, so the ``amplify`` action can build
#: biased training / anti-biased test splits from any of them.
MARK_COLUMNS = {
    "id": "Example id (string).",
    "split": "'train' or 'eval'.",
    "definition": "Which definition marked it, e.g. 'cartography', 'partial_input_cartography'.",
    "anti_biased": "True for an anti-biased (minority / hard) example, False for a biased one.",
}
#: Optional columns of the marks table. ``score`` is given by definitions that mark the q%
#: highest-scoring examples of each split (cartography: 1 - confidence), so that the
#: ``amplify`` action can choose another q (q-matching, paper 002 Sec. 4.1, Table 7).
OPTIONAL_MARK_COLUMNS = {
    "score": "How anti-biased (higher = more); the marked ones are the split's top q%.",
}

#: What a table name may be (it becomes a file name: ``tables/<name>.parquet``).
TABLE_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")

#: The states a result can be in.
STATUSES = ("ok", "failed", "skipped")

#: A headline's severity (``"info"``: shown, not judged; see
#: :class:`spurious.analysis.VerdictScale`).
Severity = Literal["none", "low", "moderate", "high", "info"]

#: A result's ``details``: extra JSON for the report (tables, curves), one object per
#: analysis with keys of its own; plain JSON values once :meth:`Analysis.run
#: <spurious.analysis.Analysis.run>` has passed them through
#: :func:`~spurious.utils.io.to_jsonable`.
Details = dict[str, Any]


class Evidence(TypedDict):
    """What a headline's severity rests on (``Headline["evidence"]``).

    Attributes
    ----------
    basis : {"point", "interval", "null_test", "interval+null_test"}
    interval : [float, float] or None
        The 95% interval of the effect the severity was read from.
    p_value : float or None
        The test of the effect against ``null``.
    null : str or None
        The null in words ("shuffled labels", "the majority guess").
    measured : str
        What the number measures, in words.
    """

    basis: str
    interval: list[float] | None
    p_value: float | None
    null: str | None
    measured: str


class Headline(TypedDict):
    """An analysis' finding in one line: its card in the report's overview.

    What :meth:`Analysis.headline <spurious.analysis.Analysis.headline>` returns, built
    by :meth:`VerdictScale.headline <spurious.analysis.VerdictScale.headline>`; the
    ``headline`` of ``result.json`` (see :func:`spurious.schema.headline_schema`).

    Attributes
    ----------
    label : str
        What was measured.
    value : float or None
        The headline number.
    text : str
        The figure in words.
    verdict : str
        The judgement in words.
    severity : {"none", "low", "moderate", "high", "info"}
    inconclusive : bool
        The 95% interval spans more than one severity at this size.
    evidence : Evidence
    """

    label: str
    value: float | None
    text: str
    verdict: str
    severity: Severity
    inconclusive: bool
    evidence: Evidence


class PartialHeadline(TypedDict, total=False):
    """A headline with keys missing, as a :class:`Result` may hold one.

    Empty for a skipped or failed result and for runs older than headlines; results
    built outside an analysis (the ``amplify`` action's) may give only ``label``,
    ``value``, ``text``, ``verdict`` and ``severity``. Read it with ``.get``, as the
    report's overview does.
    """

    label: str
    value: float | None
    text: str
    verdict: str
    severity: str
    inconclusive: bool
    evidence: Evidence


@dataclass
class Result:
    """Per-example scores, dataset-level metrics, params and provenance of one analysis run.

    Attributes
    ----------
    analysis : str
        Registry name of the analysis (also available as :attr:`name`; :attr:`detector`
        is its earlier name).
    scores : pandas.DataFrame
        One row per scored example; first column ``id``. Column meanings are listed in
        the analysis' ``score_columns``.
    metrics : dict of str to float
        Flat dataset-level metrics; names are listed in the analysis' ``metric_docs``.
        Confidence intervals are separate metrics named ``<metric>_ci_low`` /
        ``<metric>_ci_high``.
    params : dict
        The analysis' hyperparameters (JSON-serialisable).
    provenance : Provenance
    summary : str
        One line a person can read.
    details : dict
        Extra JSON for the report (tables, curves); see :data:`Details`.
    status : {"ok", "failed", "skipped"}
        ``failed``: the analysis raised (``error`` says what); ``skipped``: its
        requirements were not met by the inputs (``error`` says which).
    error : str or None
        Why the result is ``failed`` or ``skipped``.
    headline : Headline or PartialHeadline
        The finding in one line for the report's overview card: ``label`` (what was
        measured), ``value`` (the headline number, float or None), ``text`` (the figure
        in words), ``verdict`` (a judgement in words), ``severity`` (``"none"``,
        ``"low"``, ``"moderate"``, ``"high"`` or ``"info"``), ``inconclusive`` and
        ``evidence`` (see :class:`Headline`); empty when the result is skipped or failed.
    marks : pandas.DataFrame or None
        Anti-biased marks of every split (:data:`MARK_COLUMNS`).
    tables : dict of str to pandas.DataFrame
        Dataset-level tables too long for ``details`` (e.g. the atlas' ``"tokens"``:
        every tested token x label), saved as ``tables/<name>.parquet``.
    resumed : bool
        ``True`` when a continued run reused this result from the interrupted run it
        continues instead of computing it again (not saved).
    """

    analysis: str
    scores: pd.DataFrame
    metrics: dict[str, float]
    params: dict[str, Any] = field(default_factory=dict)
    provenance: Provenance = field(default_factory=Provenance)
    summary: str = ""
    details: Details = field(default_factory=dict)
    status: str = "ok"
    error: str | None = None
    headline: Headline | PartialHeadline = field(default_factory=PartialHeadline)
    marks: pd.DataFrame | None = None
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: ``True`` when a continued run reused this result from the run it continues
    #: (:func:`spurious.rundir.saved_result`) instead of computing it; not saved.
    resumed: bool = field(default=False, repr=False, compare=False)

    @property
    def name(self) -> str:
        """Registry name of the analysis that produced this result."""
        return self.analysis

    @property
    def detector(self) -> str:
        """The earlier name of :attr:`analysis` (read-only, kept for existing code)."""
        return self.analysis

    @property
    def ok(self) -> bool:
        """``True`` when the analysis ran to completion."""
        return self.status == "ok"

    def __repr__(self) -> str:
        shape = f"{len(self.scores)} scored rows, {len(self.metrics)} metrics"
        why = f", {self.error!r}" if self.error else ""
        return f"<Result {self.analysis!r} {self.status}{why}: {shape}; {self.summary[:120]!r}>"

    def _repr_html_(self) -> str:
        """The headline in a notebook: what was measured, the verdict and its severity.

        The report's styled cards and figures live in a layer above this module, which
        may not import them: a displayed ``Run`` shows them, and
        ``spurious.report.notebook.notebook_html([result])`` shows one result that way.
        """
        from html import escape

        head = self.headline if isinstance(self.headline, dict) else {}
        label = str(head.get("label") or self.analysis)
        if self.status != "ok":
            why = (self.error or "").strip().splitlines()[:1]
            line = f"{self.status}: {why[0] if why else 'no reason recorded'}"
            return f"<div><b>{escape(label)}</b> <i>{escape(line)}</i></div>"
        severity = str(head.get("severity") or "info")
        verdict = str(head.get("verdict") or "")
        text = str(head.get("text") or self.summary)
        return (
            f"<div><b>{escape(label)}</b> [{escape(severity)}] {escape(verdict)}"
            f"<br>{escape(text)}<br><small>{escape(self.analysis)}</small></div>"
        )

    @property
    def definitions(self) -> list[str]:
        """The anti-biased definitions this result marks (empty without :attr:`marks`)."""
        if self.marks is None or self.marks.empty:
            return []
        return list(dict.fromkeys(self.marks["definition"].tolist()))

    def anti_biased_ids(self, split: str, definition: str | None = None) -> list[str]:
        """Ids marked anti-biased in ``split`` (``"train"`` or ``"eval"``), in row order.

        Parameters
        ----------
        split : {"train", "eval"}
        definition : str, optional
            Required when the result marks more than one definition (see
            :attr:`definitions`).

        Examples
        --------
        >>> import pandas as pd
        >>> marks = pd.DataFrame({"id": ["a", "b", "c"], "split": ["train", "train", "eval"],
        ...                       "definition": "minority", "anti_biased": [True, False, True]})
        >>> Result("minority", pd.DataFrame({"id": []}), {}, marks=marks).anti_biased_ids("train")
        ['a']
        """
        table = self._marks_of(definition)
        if split not in ("train", "eval"):
            raise ValueError(f"The 'split' argument must be 'train' or 'eval'; got {split!r}.")
        rows = table[(table["split"] == split) & table["anti_biased"]]
        ids: list[str] = rows["id"].astype(str).tolist()
        return ids

    def _marks_of(self, definition: str | None) -> pd.DataFrame:
        defs = self.definitions
        marks = self.marks
        if not defs or marks is None:  # no marks means no definitions
            raise ValueError(f"The {self.analysis!r} result marks no anti-biased examples.")
        if definition is None:
            if len(defs) > 1:
                raise ValueError(
                    f"The {self.analysis!r} result marks several definitions {defs}; pass "
                    "'definition' to pick one."
                )
            definition = defs[0]
        if definition not in defs:
            raise ValueError(
                f"The 'definition' argument must be one of {defs}; got {definition!r}."
            )
        return marks[marks["definition"] == definition]

    # -- persistence -------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write ``metrics.json``, ``scores.parquet``, ``result.json`` (and ``marks.parquet``)
        atomically into the folder ``directory`` (created if needed).

        Raises
        ------
        ParameterError
            ``directory`` is an existing file.
        OutputError
            The location cannot take the files (disk full, read-only, no permission).
        """
        directory = Path(directory)
        if directory.exists() and not directory.is_dir():
            raise ParameterError(
                f"Result.save: {str(directory)!r} is a file; a result is saved as a folder "
                "(metrics.json, scores.parquet, result.json). Pass a folder path."
            )
        with output_errors(directory):
            directory.mkdir(parents=True, exist_ok=True)
        atomic_write(directory / "scores.parquet", lambda p: self.scores.to_parquet(p, index=False))
        marks = self.marks
        if marks is not None:
            atomic_write(directory / "marks.parquet", lambda p: marks.to_parquet(p, index=False))
        elif (directory / "marks.parquet").exists():
            (directory / "marks.parquet").unlink()  # a re-run without marks: drop stale ones
        _save_tables(check_tables(self.tables, self.analysis), directory / "tables")
        atomic_write_json(directory / "metrics.json", self.metrics)
        atomic_write_json(
            directory / "result.json",
            {
                "format_version": RESULT_FORMAT_VERSION,
                "analysis": self.analysis,
                # The key's earlier name, still written: schema v1 requires it.
                "detector": self.analysis,
                "status": self.status,
                "error": self.error,
                "summary": self.summary,
                "params": self.params,
                "provenance": self.provenance.to_dict(),
                "details": self.details,
                "headline": self.headline,
            },
        )
        return directory

    @classmethod
    def load(
        cls, directory: str | Path, *, expected_fingerprints: dict[str, str] | None = None
    ) -> Result:
        """Load a saved result, checking the library version and dataset fingerprints.

        Parameters
        ----------
        directory : path
            The analysis' folder inside a run directory.
        expected_fingerprints : dict, optional
            ``{role: fingerprint}``; a mismatch raises :class:`ResultLoadError`.
        """
        directory = Path(directory)
        meta_path = directory / "result.json"
        if not meta_path.exists():
            raise ResultLoadError(f"No result.json in {str(directory)!r}; not an analysis result.")
        try:
            meta = read_json(meta_path)
            fmt = int(meta.get("format_version", 0))
            # "detector": the key's earlier name (runs written before "analysis").
            name = str(meta["analysis"] if "analysis" in meta else meta["detector"])
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise ResultLoadError(f"{str(meta_path)!r} is not a valid result file: {e!r}") from None
        if fmt > RESULT_FORMAT_VERSION:
            raise ResultLoadError(
                f"{str(meta_path)!r} was written by a newer spurious (result format "
                f"{meta.get('format_version')}); this is {__version__} (format "
                f"{RESULT_FORMAT_VERSION}). Upgrade spurious to load it."
            )
        prov = Provenance.from_dict(meta.get("provenance", {}))
        if _major_minor(prov.library_version) > _major_minor(__version__):
            raise ResultLoadError(
                f"{str(meta_path)!r} was written by spurious {prov.library_version}, newer than "
                f"the installed {__version__}."
            )
        for role, fp in (expected_fingerprints or {}).items():
            got = prov.fingerprints.get(role)
            if got != fp:
                raise ResultLoadError(
                    f"{str(directory)!r}: dataset fingerprint for {role!r} is {got!r}, expected "
                    f"{fp!r}; the result was computed on different data."
                )
        scores_path = directory / "scores.parquet"
        try:
            if not scores_path.exists() and meta.get("status") in ("failed", "skipped"):
                scores = pd.DataFrame({"id": pd.Series([], dtype=str)})
            else:
                scores = pd.read_parquet(scores_path)
        except (OSError, ValueError) as e:
            raise ResultLoadError(
                f"Cannot read scores.parquet in {str(directory)!r}: {e}"
            ) from None
        metrics_path = directory / "metrics.json"
        metrics = read_json(metrics_path) if metrics_path.exists() else {}
        marks_path = directory / "marks.parquet"
        try:
            marks = pd.read_parquet(marks_path) if marks_path.exists() else None
        except (OSError, ValueError) as e:
            raise ResultLoadError(f"Cannot read marks.parquet in {str(directory)!r}: {e}") from None
        # As written by `save` (an empty headline for runs older than headlines).
        headline: Headline | PartialHeadline = meta.get("headline") or PartialHeadline()
        tables: dict[str, pd.DataFrame] = {}
        for path in sorted((directory / "tables").glob("*.parquet")):
            if not TABLE_NAME.fullmatch(path.stem):
                continue  # not one of ours (Result.save writes only valid names)
            try:
                tables[path.stem] = pd.read_parquet(path)
            except (OSError, ValueError) as e:
                raise ResultLoadError(f"Cannot read {str(path)!r}: {e}") from None
        return cls(
            analysis=name,
            scores=scores,
            metrics={k: (math.nan if v is None else v) for k, v in metrics.items()},
            params=meta.get("params", {}),
            provenance=prov,
            summary=meta.get("summary", ""),
            details=meta.get("details", {}),
            status=meta.get("status", "ok"),
            error=meta.get("error"),
            headline=headline,
            marks=check_marks(marks, name) if marks is not None else None,
            tables=tables,
        )


def check_marks(marks: pd.DataFrame | None, analysis: str) -> pd.DataFrame | None:
    """:func:`validate_marks`, with ``None`` (an analysis that marks nothing) passed through.

    Examples
    --------
    >>> check_marks(None, "demo") is None
    True
    """
    return None if marks is None else validate_marks(marks, analysis)


def validate_marks(marks: pd.DataFrame, analysis: str) -> pd.DataFrame:
    """Validate an anti-biased marks table (:data:`MARK_COLUMNS`) and normalise its dtypes.

    Raises
    ------
    ValueError
        Naming the analysis, the missing column or the bad value.

    Examples
    --------
    >>> t = validate_marks(pd.DataFrame({"id": [1], "split": ["eval"], "definition": ["x"],
    ...                                  "anti_biased": [1]}), "demo")
    >>> t.dtypes["anti_biased"].name, t["id"].tolist()
    ('bool', ['1'])
    """
    missing = [c for c in MARK_COLUMNS if c not in marks.columns]
    if missing:
        raise ValueError(
            f"Analysis {analysis!r}: the marks table must have columns {list(MARK_COLUMNS)}; "
            f"missing {missing} (got {list(marks.columns)})."
        )
    bad = sorted(set(marks["split"].astype(str)) - {"train", "eval"})
    if bad:
        raise ValueError(
            f"Analysis {analysis!r}: marks 'split' must be 'train' or 'eval'; got {bad}."
        )
    optional = [c for c in OPTIONAL_MARK_COLUMNS if c in marks.columns]
    out = marks[[*MARK_COLUMNS, *optional]].copy()
    out["id"] = out["id"].astype(str)
    out["split"] = out["split"].astype(str)
    out["definition"] = out["definition"].astype(str)
    out["anti_biased"] = out["anti_biased"].astype(bool)
    if "score" in out.columns:
        out["score"] = out["score"].astype(float)
    return out.reset_index(drop=True)


def _major_minor(version: str) -> tuple[int, int]:
    parts = [*version.split("."), "0", "0"][:2]
    try:
        return int(parts[0]), int(parts[1])
    except ValueError:
        return (0, 0)


#: The name the result type had before analyses other than detectors shared it.
DetectorResult = Result


def check_tables(tables: dict[str, pd.DataFrame] | None, analysis: str) -> dict[str, pd.DataFrame]:
    """Validate a result's extra tables: names usable as file names, values data frames.

    Raises
    ------
    AnalysisError
        A name that is not ``[a-z][a-z0-9_]*`` (at most 64 characters) or a value that is
        not a :class:`pandas.DataFrame`.

    Examples
    --------
    >>> sorted(check_tables({"tokens": pd.DataFrame({"token": ["a"]})}, "atlas"))
    ['tokens']
    >>> check_tables({"../x": pd.DataFrame()}, "atlas")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    spurious.exceptions.AnalysisError: Analysis 'atlas' returned a table named '../x'; ...
    """
    out: dict[str, pd.DataFrame] = {}
    for name, frame in (tables or {}).items():
        if not isinstance(name, str) or not TABLE_NAME.fullmatch(name):
            raise AnalysisError(
                f"Analysis {analysis!r} returned a table named {name!r}; table names must "
                "match [a-z][a-z0-9_]* (at most 64 characters): they become file names."
            )
        if not isinstance(frame, pd.DataFrame):
            raise AnalysisError(
                f"Analysis {analysis!r} returned table {name!r} as {type(frame).__name__}; "
                "expected a pandas.DataFrame."
            )
        out[name] = frame
    return out


def _save_tables(tables: dict[str, pd.DataFrame], folder: Path) -> None:
    """Write ``tables`` as ``folder/<name>.parquet``; drop stale tables of an earlier run."""
    for name, frame in tables.items():
        folder.mkdir(exist_ok=True)
        atomic_write(folder / f"{name}.parquet", _parquet_writer(frame))
    if folder.is_dir():
        for path in folder.glob("*.parquet"):
            if path.stem not in tables and TABLE_NAME.fullmatch(path.stem):
                path.unlink()
        if not any(folder.iterdir()):
            folder.rmdir()


def _parquet_writer(frame: pd.DataFrame) -> Callable[[Path], None]:
    """A writer for :func:`~spurious.utils.io.atomic_write`: ``frame`` as parquet, no index."""

    def write(path: Path) -> None:
        frame.to_parquet(path, index=False)

    return write
