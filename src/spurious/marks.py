"""Anti-biased marks: collect them from results or run directories, q-match them, and
align them with the data's rows (the first step of :mod:`spurious.actions.amplify`).

q-matching (Sec. 4.1, Table 7)
------------------------------
The minority-examples definition fixes the number of anti-biased training examples
(the clustering induces it); cartography and partial-input cartography mark the q%
hardest examples of each split, q being a free parameter. The paper "adjust[s] q to
create equally sized training sets for all three methods" and uses "the same q ...
for biased train instances when choosing anti-biased test instances" (Table 7: for
MultiNLI 82,829 of 392,702 training and 2,070 of 9,815 test examples, 21.09% each,
for both cartography definitions; minority marks 2,044 test examples). Here:

- the *target* is a definition whose marks stay as they are: by default
  (``match_to="auto"``) the one definition without a ``score`` column (minority), else
  the first definition; ``n`` is its number of anti-biased training examples and
  ``q = n / n_train``;
- every other definition whose marks carry a ``score`` (higher = more anti-biased,
  cartography: 1 - confidence) is re-thresholded: its ``n`` highest-scoring training
  examples and its ``round(q * n_eval)`` highest-scoring evaluation examples (halves
  up, ties to the earlier row, as :func:`~spurious.detectors.cartography.anti_biased_mask`)
  are anti-biased. When the target itself has a score (no minority definition: the
  cartography definitions alone), the target's own test share is used instead of
  ``n / n_train``, so definitions marked with one q by one analysis stay as marked;
- two definitions without a score whose training counts differ cannot be matched:
  an error says so;
- ``q=<fraction>`` instead marks the ``q`` share of both splits for every scored
  definition; ``match_to=None`` uses the marks as they are.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.exceptions import DataFormatError, ParameterError
from spurious.results import Result, validate_marks
from spurious.utils.io import read_json

__all__ = ["collect_marks", "match_marks", "n_anti_of"]


def collect_marks(source: Any) -> pd.DataFrame:
    """The anti-biased marks of ``source`` as one table, with the analysis that made them.

    Parameters
    ----------
    source : Result, Run, mapping of name to Result, run directory, or DataFrame
        A result (or several) with :attr:`~spurious.results.Result.marks`, a run
        (``spurious.run``) or the path of a run directory (``<analysis>/marks.parquet``
        of every analysis), or a marks table itself (columns
        :data:`~spurious.results.MARK_COLUMNS`, optionally ``score``).

    Returns
    -------
    pandas.DataFrame
        ``id, split, definition, anti_biased`` (+ ``score`` where given) and ``analysis``.

    Raises
    ------
    ParameterError
        Nothing in ``source`` marks examples, or two analyses mark the same definition.

    Examples
    --------
    >>> marks = pd.DataFrame({"id": ["a", "b", "c"], "split": ["train", "train", "eval"],
    ...                       "definition": "minority", "anti_biased": [True, False, True]})
    >>> collect_marks(marks)["analysis"].tolist()
    ['minority', 'minority', 'minority']
    """
    tables = []
    if isinstance(source, pd.DataFrame):
        t = validate_marks(source, "marks")
        t["analysis"] = t["definition"]
        tables.append(t)
    else:
        for name, res in _results_of(source).items():
            if res.marks is None or not res.ok:
                continue
            t = validate_marks(res.marks, name)
            t["analysis"] = name
            tables.append(t)
    if not tables or all(t.empty for t in tables):
        raise ParameterError(
            f"The 'marks' argument must hold anti-biased marks (Result.marks / "
            f"<analysis>/marks.parquet); {_describe(source)} has none. Run an analysis that "
            "marks examples (cartography, minority) with an evaluation split first."
        )
    out = pd.concat(tables, ignore_index=True)
    owners = out.groupby("definition", sort=False)["analysis"].unique()
    clash = {d: list(a) for d, a in owners.items() if len(a) > 1}
    if clash:
        raise ParameterError(
            f"Definitions marked by more than one analysis: {clash}; pass one analysis' result."
        )
    if "score" not in out.columns:
        out["score"] = np.nan
    return out


def _results_of(source: Any) -> dict[str, Result]:
    if isinstance(source, Result):
        return {source.name: source}
    if isinstance(source, Mapping):
        return {str(k): v for k, v in source.items()}
    if hasattr(source, "results") and isinstance(source.results, Mapping):
        return dict(source.results)
    if isinstance(source, str | os.PathLike):
        return _load_run_results(Path(source))[0]
    raise ParameterError(
        "The 'marks' argument must be a Result, a Run, a mapping of results, a run directory "
        f"or a marks DataFrame; got {type(source).__name__}."
    )


def _describe(source: Any) -> str:
    if isinstance(source, str | os.PathLike):
        return f"run directory {os.fspath(source)!r}"
    if isinstance(source, Result):
        return f"the {source.name!r} result"
    return f"the given {type(source).__name__}"


def _load_run_results(run_dir: Path) -> tuple[dict[str, Result], dict[str, Any]]:
    """Results with marks in ``run_dir`` (checked against its manifest) and the manifest."""
    if not run_dir.is_dir():
        raise ParameterError(
            f"The 'run' argument must be a run directory (spurious audit / run --out); "
            f"{str(run_dir)!r} is not a directory."
        )
    manifest: dict[str, Any] = {}
    if (run_dir / "manifest.json").exists():
        manifest = read_json(run_dir / "manifest.json")
    expected = {
        role: d["fingerprint"]
        for role, d in (manifest.get("datasets") or {}).items()
        if isinstance(d, Mapping) and "fingerprint" in d
    }
    results = {}
    for folder in sorted(run_dir.iterdir()):
        if (folder / "marks.parquet").exists() and (folder / "result.json").exists():
            results[folder.name] = Result.load(folder, expected_fingerprints=expected)
    return results, manifest


def _has_score(marks: pd.DataFrame) -> bool:
    return bool(marks["score"].notna().all()) and len(marks) > 0


def _top(score: np.ndarray, k: int) -> np.ndarray:
    """Mask of the ``k`` highest scores; ties go to the earlier row."""
    mask = np.zeros(len(score), dtype=bool)
    mask[np.argsort(-score, kind="stable")[:k]] = True
    return mask


def _round_half_up(x: float) -> int:
    return int(np.floor(x + 0.5))


def match_marks(
    marks: pd.DataFrame,
    *,
    definitions: Sequence[str] | None = None,
    match_to: str | None = "auto",
    q: float | None = None,
) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
    """q-matching (paper 002 Sec. 4.1, Table 7): equally many anti-biased training examples.

    Parameters
    ----------
    marks : pandas.DataFrame
        From :func:`collect_marks`.
    definitions : sequence of str, optional
        The definitions to keep (default: all, in order of appearance).
    match_to : str, "auto" or None, default="auto"
        The definition whose training count the others take (see the module docstring);
        ``None``: no matching.
    q : float in [0, 1], optional
        Instead of ``match_to``: mark this share of each split for every definition with
        a score.

    Returns
    -------
    marks : pandas.DataFrame
        The kept definitions' marks, re-thresholded where matched.
    matching : dict
        Per definition: ``q`` (anti-biased share of training examples), ``matched_to``,
        ``rethresholded`` (bool) and ``has_score``.

    Examples
    --------
    >>> marks = pd.DataFrame({
    ...     "id": list("abcdeabcde"), "split": ["train"] * 10,
    ...     "definition": ["minority"] * 5 + ["cartography"] * 5,
    ...     "anti_biased": [True, True, False, False, False, True, False, False, False, False],
    ...     "score": [np.nan] * 5 + [0.9, 0.1, 0.8, 0.2, 0.3]})
    >>> m, info = match_marks(collect_marks(marks))
    >>> m[m.definition == "cartography"]["anti_biased"].tolist()
    [True, False, True, False, False]
    >>> info["cartography"]["matched_to"], info["cartography"]["q"]
    ('minority', 0.4)
    """
    known = list(dict.fromkeys(marks["definition"].tolist()))
    if definitions is None or len(definitions) == 0:
        definitions = known
    unknown = [d for d in definitions if d not in known]
    if unknown:
        raise ParameterError(
            f"The 'definitions' argument names {unknown}, which the marks do not have; "
            f"marked definitions: {known}."
        )
    definitions = list(dict.fromkeys(definitions))
    if q is not None:
        if not 0.0 <= float(q) <= 1.0:
            raise ParameterError(f"The 'q' argument must be in [0, 1]; got {q!r}.")
        if match_to not in (None, "auto"):
            raise ParameterError(
                f"Pass either 'q' or 'match_to', not both; got q={q!r}, match_to={match_to!r}."
            )
    by_def = {d: marks[marks["definition"] == d].copy() for d in known}
    scored = {d: _has_score(by_def[d]) for d in known}
    n_anti = {d: int(t.loc[t["split"] == "train", "anti_biased"].sum()) for d, t in by_def.items()}
    n_train = {d: int((t["split"] == "train").sum()) for d, t in by_def.items()}

    target: str | None = None
    if q is None and match_to is not None:
        if match_to == "auto":
            unscored = [d for d in definitions if not scored[d]]
            target = unscored[0] if unscored else definitions[0]
        elif match_to not in known:
            raise ParameterError(
                f"The 'match_to' argument must be 'auto', None or a marked definition "
                f"{known}; got {match_to!r}."
            )
        else:
            target = match_to
        fixed = {d: n_anti[d] for d in definitions if not scored[d] and d != target}
        bad = {d: c for d, c in fixed.items() if c != n_anti[target]}
        if bad:
            raise ParameterError(
                f"Definitions {sorted(bad)} have no 'score' to re-threshold and mark {bad} "
                f"training examples, {n_anti[target]} for the 'match_to' target {target!r}: "
                "they cannot be matched. Amplify them separately, or pass match_to=None to "
                "use the marks as they are."
            )

    out, info = [], {}
    for d in definitions:
        t = by_def[d]
        entry: dict[str, Any] = {"has_score": scored[d], "matched_to": None, "rethresholded": False}
        if scored[d] and (q is not None or (target is not None and d != target)):
            shares = {"train": float(q), "eval": float(q)} if q is not None else {}
            if q is None:
                tt = by_def[target]
                n_eval_target = int((tt["split"] == "eval").sum())
                shares["train"] = n_anti[target] / max(n_train[target], 1)
                # A target with a score chose its test share with its own q: take that; a
                # fixed-size target's test count comes from its clustering, so the paper
                # (Table 7) applies the training q to the test split.
                shares["eval"] = (
                    n_anti_of(tt, "eval") / max(n_eval_target, 1)
                    if scored[target]
                    else shares["train"]
                )
            for split in ("train", "eval"):
                rows = (t["split"] == split).to_numpy()
                score = t.loc[rows, "score"].to_numpy(dtype=float)
                if q is None and split == "train":
                    k = min(n_anti[target], len(score))  # exactly the target's count
                else:
                    k = _round_half_up(shares[split] * len(score))
                t.loc[rows, "anti_biased"] = _top(score, k)
            entry.update(rethresholded=True, matched_to=None if q is not None else target)
        entry["q"] = n_anti_of(t, "train") / max(n_train[d], 1)
        entry["n_train_anti_biased"] = n_anti_of(t, "train")
        entry["n_eval_anti_biased"] = n_anti_of(t, "eval")
        entry["analysis"] = str(t["analysis"].iloc[0]) if len(t) else d
        info[d] = entry
        out.append(t)
    return pd.concat(out, ignore_index=True), info


def n_anti_of(marks: pd.DataFrame, split: str) -> int:
    """Anti-biased examples of ``split`` in a one-definition marks table.

    Examples
    --------
    >>> n_anti_of(pd.DataFrame({"split": ["train", "eval"], "anti_biased": [True, True]}), "eval")
    1
    """
    return int(marks.loc[marks["split"] == split, "anti_biased"].sum())


def _aligned(marks: pd.DataFrame, split: str, ds: Dataset, definition: str) -> np.ndarray:
    """The definition's marks of ``split`` in ``ds``'s row order; every id exactly once."""
    t = marks[marks["split"] == split]
    if t.empty:
        raise DataFormatError(
            f"The marks of definition {definition!r} have no {split!r} rows; the analysis "
            + (
                "ran without an evaluation split. Re-run it with --eval (spurious audit DATA "
                "--eval EVAL) so the test examples are marked too."
                if split == "eval"
                else "did not mark the training split."
            )
        )
    dup = t["id"][t["id"].duplicated()]
    if len(dup):
        raise DataFormatError(
            f"The marks of definition {definition!r} list {split!r} id(s) more than once, "
            f"e.g. {dup.iloc[:3].tolist()}."
        )
    flags = pd.Series(t["anti_biased"].to_numpy(dtype=bool), index=t["id"].astype(str))
    ids = pd.Index(ds.ids.astype(str))
    extra = flags.index.difference(ids)
    missing = ids.difference(flags.index)
    if len(extra) or len(missing):
        role = "training" if split == "train" else "evaluation"
        raise DataFormatError(
            f"The {split!r} marks of definition {definition!r} do not match the {role} data "
            f"{ds.name!r} ({len(ds)} rows): {len(extra)} marked id(s) not in the data "
            f"(e.g. {list(extra[:3])}), {len(missing)} row(s) not marked (e.g. "
            f"{list(missing[:3])}). Pass the data the analysis ran on."
        )
    return flags.reindex(ids).to_numpy(dtype=bool)
