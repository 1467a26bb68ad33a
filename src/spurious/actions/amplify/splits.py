"""The bias-amplified splits: random baseline, reinsertion and the splits of every
definition (:class:`AmplifiedSplits`: views, DatasetDicts, summary, result, saving).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spurious.actions.amplify.outputs import _file_format, _prepare_out, _report_manifest
from spurious.data.dataset import Dataset
from spurious.exceptions import ParameterError
from spurious.marks import _round_half_up
from spurious.provenance import Provenance
from spurious.results import Result
from spurious.utils.io import atomic_write_json

__all__ = [
    "AMPLIFY_FORMAT_VERSION",
    "REINSERT_FRACTIONS",
    "AmplifiedSplits",
    "DefinitionSplits",
    "random_subset_mask",
    "reinsert_name",
    "reinsertion_masks",
]

#: Paper 002 Sec. 5: shares of the anti-biased training examples put back.
REINSERT_FRACTIONS = (0.10, 0.20, 0.35, 0.50, 0.70)
#: Version of ``summary.json``.
AMPLIFY_FORMAT_VERSION = 1


# =======================================================================================
# Random baseline and reinsertion
# =======================================================================================
def random_subset_mask(n: int, size: int, random_state: int | None = 0) -> np.ndarray:
    """A seeded random subset of ``size`` of ``n`` rows (Table 1's *rand* baseline).

    The same ``(n, size, random_state)`` always gives the same rows, so definitions with
    equally sized biased splits (after q-matching) share one baseline.

    Examples
    --------
    >>> m = random_subset_mask(10, 4, random_state=0)
    >>> int(m.sum()), bool((m == random_subset_mask(10, 4, random_state=0)).all())
    (4, True)
    """
    if not 0 <= size <= n:
        raise ParameterError(f"The 'size' argument must be in [0, {n}]; got {size}.")
    rng = np.random.default_rng(random_state)
    mask = np.zeros(n, dtype=bool)
    mask[rng.choice(n, size=size, replace=False)] = True
    return mask


def reinsertion_masks(
    anti_biased: np.ndarray,
    fractions: Sequence[float] = REINSERT_FRACTIONS,
    random_state: int | None = 0,
) -> dict[float, np.ndarray]:
    """Training masks with a share of the anti-biased examples put back (paper 002 Sec. 5).

    One seeded permutation of the anti-biased rows; fraction ``f`` keeps the biased rows
    and the first ``round(f * n_anti)`` of the permutation (halves up), so a larger
    fraction contains every smaller one.

    Parameters
    ----------
    anti_biased : numpy.ndarray of bool
        The training split's marks.
    fractions : sequence of float in (0, 1]
    random_state : int or None

    Returns
    -------
    dict of float to numpy.ndarray of bool

    Examples
    --------
    >>> anti = np.array([True] * 10 + [False] * 5)
    >>> masks = reinsertion_masks(anti, (0.2, 0.5))
    >>> [int((m & anti).sum()) for m in masks.values()]
    [2, 5]
    >>> bool((masks[0.2] <= masks[0.5]).all())
    True
    """
    anti = np.asarray(anti_biased, dtype=bool)
    for f in fractions:
        if not 0.0 < float(f) <= 1.0:
            raise ParameterError(
                f"The 'reinsert' fractions must be in (0, 1]; got {f!r} in {list(fractions)}."
            )
    # A stream of its own, so the reinsertion draw does not depend on the random baseline.
    rng = np.random.default_rng([0 if random_state is None else random_state, 1])
    order = rng.permutation(np.flatnonzero(anti))
    out = {}
    for f in fractions:
        mask = ~anti
        mask[order[: _round_half_up(float(f) * len(order))]] = True
        out[float(f)] = mask
    return out


def reinsert_name(fraction: float) -> str:
    """Split name of a reinsertion fraction: ``train.reinserted_<percent>``.

    Examples
    --------
    >>> reinsert_name(0.35), reinsert_name(0.125)
    ('train.reinserted_35', 'train.reinserted_12_5')
    """
    pct = f"{float(fraction) * 100:.6g}".replace(".", "_")
    return f"train.reinserted_{pct}"


# =======================================================================================
# The splits
# =======================================================================================
@dataclass
class DefinitionSplits:
    """The bias-amplified splits of one definition.

    Attributes
    ----------
    definition : str
    splits : dict of str to (str, numpy.ndarray)
        Split name -> (``"train"`` or ``"eval"``, boolean mask over that dataset's rows).
    matching : dict
        See :func:`match_marks`.
    """

    definition: str
    splits: dict[str, tuple[str, np.ndarray]]
    matching: dict[str, Any]


@dataclass
class AmplifiedSplits:
    """Bias-amplified splits of every definition, ready to write.

    Built by :func:`amplify` / :func:`amplify_run`. ``to_hf`` gives a
    ``datasets.DatasetDict`` per definition, ``summary`` the sizes and label
    distributions, ``result`` the ``amplify`` result for the report, ``save`` all of
    them on disk.
    """

    train: Dataset
    eval: Dataset
    definitions: dict[str, DefinitionSplits]
    params: dict[str, Any]
    #: Where the marks came from (run directory, analyses, its manifest's datasets and
    #: config); recorded in ``summary.json``.
    source: dict[str, Any] = field(default_factory=dict)
    #: The results that marked (their report sections precede the amplify section).
    results: dict[str, Result] = field(default_factory=dict)

    def __repr__(self) -> str:
        sizes = ", ".join(
            f"{d}: train.biased {int(s.splits['train.biased'][1].sum())}"
            for d, s in self.definitions.items()
        )
        return f"<AmplifiedSplits {sizes}>"

    def dataset(self, definition: str, split: str) -> Dataset:
        """One split as a :class:`~spurious.data.Dataset` (for training and evaluating)."""
        role, mask = self._split(definition, split)
        ds = self.train if role == "train" else self.eval
        return ds.subset(np.flatnonzero(mask), f"{ds.name}[{definition}:{split}]")

    def ids(self, definition: str, split: str) -> list[str]:
        """Example ids of one split, in row order."""
        role, mask = self._split(definition, split)
        ds = self.train if role == "train" else self.eval
        return [str(i) for i in ds.ids[mask]]

    def _split(self, definition: str, split: str) -> tuple[str, np.ndarray]:
        if definition not in self.definitions:
            raise ParameterError(
                f"The 'definition' argument must be one of {list(self.definitions)}; got "
                f"{definition!r}."
            )
        splits = self.definitions[definition].splits
        if split not in splits:
            raise ParameterError(
                f"The 'split' argument must be one of {list(splits)}; got {split!r}."
            )
        return splits[split]

    def to_hf(self, definition: str, *, add_id: bool = True) -> Any:
        """The splits of ``definition`` as a ``datasets.DatasetDict`` (inputs' own columns).

        Examples
        --------
        >>> from spurious.actions.amplify import amplify
        >>> from spurious.data.synthetic import make_nli_artifacts
        >>> train, test = make_nli_artifacts(n=60, random_state=0).dataset.split(0.5)
        >>> marks = pd.concat([pd.DataFrame({"id": d.ids, "split": s, "definition": "m",
        ...     "anti_biased": np.arange(len(d)) % 4 == 0}) for d, s in ((train, "train"),
        ...     (test, "eval"))])
        >>> dd = amplify(train, test, marks, reinsert=(0.5,)).to_hf("m")
        >>> list(dd)[:3], dd["train.biased"].num_rows
        (['train.biased', 'train.anti_biased', 'train.random'], 22)
        """
        from spurious.actions.filter import rows_as_hf
        from spurious.actions.hf_output import import_datasets

        datasets = import_datasets("The bias-amplified splits as a DatasetDict")
        self._split(definition, "train.biased")  # an unknown definition raises here
        parts = {}
        for name, (role, mask) in self.definitions[definition].splits.items():
            ds = self.train if role == "train" else self.eval
            parts[name] = rows_as_hf(ds, mask, add_id=add_id)
        return datasets.DatasetDict(parts)

    # -- summary -------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """Split sizes and label distributions per definition (``summary.json``)."""
        defs = {}
        for d, s in self.definitions.items():
            splits = {}
            for name, (role, mask) in s.splits.items():
                ds = self.train if role == "train" else self.eval
                splits[name] = {
                    "from": role,
                    "n": int(mask.sum()),
                    "share_of_source": float(mask.mean()) if len(mask) else 0.0,
                    "labels": _label_counts(ds, mask),
                }
            defs[d] = {**s.matching, "splits": splits}
        return {
            "format_version": AMPLIFY_FORMAT_VERSION,
            "params": self.params,
            "source": self.source,
            "n_train": len(self.train),
            "n_eval": len(self.eval),
            "labels": {
                "train": _label_counts(self.train, np.ones(len(self.train), dtype=bool)),
                "eval": _label_counts(self.eval, np.ones(len(self.eval), dtype=bool)),
            },
            "definitions": defs,
            "provenance": Provenance(
                seed=self.params.get("random_state"),
                fingerprints={"train": self.train.fingerprint, "eval": self.eval.fingerprint},
            ).to_dict(),
        }

    def result(self) -> Result:
        """The ``amplify`` result the report renders (sizes and labels in ``details``).

        ``scores``: one row per example of both splits (``id``, ``split``, ``label``),
        with ``anti_biased_<definition>`` (after q-matching), ``reinserted_<definition>``
        (the smallest reinsertion fraction whose split holds the example; NaN for
        biased and never reinserted ones) and ``in_random`` (in ``train.random``).
        """
        summary = self.summary()
        frames = []
        for role, ds in (("train", self.train), ("eval", self.eval)):
            names = np.asarray(ds.label_names, dtype=object)
            f = pd.DataFrame({"id": ds.ids.astype(str), "split": role, "label": names[ds.labels]})
            for d, s in self.definitions.items():
                biased = s.splits["train.biased" if role == "train" else _eval_biased(s)][1]
                f[f"anti_biased_{d}"] = ~biased
                if role == "train":
                    first = np.full(len(ds), np.nan)
                    for frac in sorted(self.params["reinsert"], reverse=True):
                        mask = s.splits[reinsert_name(frac)][1]
                        first[mask & ~biased] = frac
                    f[f"reinserted_{d}"] = first
                else:
                    f[f"reinserted_{d}"] = np.nan
            f["in_random"] = (
                next(iter(self.definitions.values())).splits["train.random"][1]
                if role == "train"
                else False
            )
            frames.append(f)
        metrics: dict[str, float] = {
            "n_train": float(len(self.train)),
            "n_eval": float(len(self.eval)),
        }
        eval_name = self.params["eval_name"]
        for d, s in summary["definitions"].items():
            sp = s["splits"]
            metrics[f"n_train_biased_{d}"] = float(sp["train.biased"]["n"])
            metrics[f"n_train_anti_biased_{d}"] = float(sp["train.anti_biased"]["n"])
            metrics[f"n_{eval_name}_anti_biased_{d}"] = float(sp[f"{eval_name}.anti_biased"]["n"])
            metrics[f"q_{d}"] = float(s["q"])
        first = next(iter(summary["definitions"].values()))
        n_b = first["splits"]["train.biased"]["n"]
        equal = len({s["splits"]["train.biased"]["n"] for s in summary["definitions"].values()})
        text = (
            f"train.biased keeps {n_b:,} of {len(self.train):,} training examples "
            f"({n_b / max(len(self.train), 1):.0%})"
            + (" for every definition" if equal == 1 else " (sizes differ by definition)")
            + "; "
            + ", ".join(
                f"{d} {eval_name}.anti_biased {s['splits'][f'{eval_name}.anti_biased']['n']:,}"
                for d, s in summary["definitions"].items()
            )
        )
        return Result(
            analysis="amplify",
            scores=pd.concat(frames, ignore_index=True),
            metrics=metrics,
            params=self.params,
            provenance=Provenance.from_dict(summary["provenance"]),
            summary=f"bias-amplified splits of {len(self.definitions)} definition(s): {text}",
            details={
                "definitions": summary["definitions"],
                "eval_name": eval_name,
                "labels": summary["labels"],
                "label_names": list(self.train.label_names),
                "source": self.source,
            },
            headline={
                "label": "bias-amplified splits",
                "value": float(n_b / max(len(self.train), 1)),
                "text": text,
                "verdict": "biased training / anti-biased test splits written",
                "severity": "info",
                # Not a finding: a description of what was written (the schema's shape).
                "inconclusive": False,
                "evidence": {
                    "basis": "point",
                    "interval": None,
                    "p_value": None,
                    "null": None,
                    "measured": "share of the training rows in the biased training split",
                },
            },
        )

    # -- writing -------------------------------------------------------------------------
    def save(
        self,
        out: str | os.PathLike[str],
        *,
        hf: bool = True,
        files: bool = True,
        file_format: str | None = None,
        force: bool = False,
        inputs: Sequence[str | os.PathLike[str] | None] = (),
        report: bool = True,
        report_results: Mapping[str, Result] | None = None,
        add_id: bool = True,
        keep: Sequence[str] = (),
    ) -> Path:
        """Write the splits and their summary into ``out``.

        Layout::

            out/summary.json                    sizes, label distributions, q, params,
                                                provenance (seed, versions, fingerprints)
            out/amplify/                        the amplify Result (metrics, scores, details)
            out/report.html                     the report (with report_results' sections)
            out/hf/<definition>/                datasets.load_from_disk -> DatasetDict
            out/files/<definition>/<split>.<ext>  the splits in the inputs' own format

        Parameters
        ----------
        out : path
            A new or empty folder; a folder with earlier amplify outputs needs ``force``,
            which removes only those outputs. It must not hold an input.
        hf, files : bool, default=True
            Write the DatasetDicts / the files.
        file_format : str, optional
            Format of the files (``jsonl``, ``json``, ``csv``, ``tsv``, ``parquet``);
            default: each input's own (Arrow becomes Parquet, SQuAD stays SQuAD JSON,
            data without a file -- in memory, Hugging Face -- JSONL).
        force : bool, default=False
        inputs : sequence of paths
            Files that must never be written over (the command's inputs).
        report : bool, default=True
            Write ``report.html`` (also ``out/amplify`` for ``spurious report``).
        report_results : mapping of name to Result, optional
            Sections shown before the amplify section (the analyses that marked).
        add_id : bool, default=True
            Add an ``id`` column to outputs of inputs without one (see
            :mod:`spurious.actions.filter`).
        keep : sequence of str
            Entries of ``out`` written by the same command (``spurious amplify`` runs the
            marking analysis into ``out/run``): neither a conflict nor removed.

        Returns
        -------
        pathlib.Path
            ``out``.
        """
        from spurious.actions.filter import output_format, save_hf, write_rows

        out = Path(out)
        plan = {}
        if files:
            for d, s in self.definitions.items():
                for name, (role, _mask) in s.splits.items():
                    ds = self.train if role == "train" else self.eval
                    fmt = file_format or _file_format(ds)
                    path = out / "files" / d / f"{name}.{fmt}"
                    output_format(path, fmt)
                    plan[(d, name)] = (path, fmt)
        _prepare_out(
            out, force=force, inputs=inputs, paths=[p for p, _ in plan.values()], keep=keep
        )
        if hf:
            for d in self.definitions:
                save_hf(self.to_hf(d, add_id=add_id), out / "hf" / d, inputs=inputs)
        for (d, name), (path, fmt) in plan.items():
            role, mask = self.definitions[d].splits[name]
            ds = self.train if role == "train" else self.eval
            write_rows(ds, mask, path, fmt, add_id=add_id, inputs=inputs)
        summary = self.summary()
        summary["outputs"] = {
            "hf": {d: f"hf/{d}" for d in self.definitions} if hf else {},
            "files": {f"{d}/{n}": str(p.relative_to(out)) for (d, n), (p, _) in plan.items()},
        }
        atomic_write_json(out / "summary.json", summary)
        result = self.result()
        if report:
            from spurious.report import render

            result.save(out / "amplify")
            sections = {**(report_results or {}), "amplify": result}
            render(
                sections,
                out / "report.html",
                manifest=_report_manifest(self.source, self.params, summary),
            )
        return out


def _eval_biased(s: DefinitionSplits) -> str:
    return next(n for n, (role, _) in s.splits.items() if role == "eval" and n.endswith(".biased"))


def _label_counts(ds: Dataset, mask: np.ndarray) -> dict[str, int]:
    counts = np.bincount(ds.labels[mask], minlength=len(ds.label_names))
    return {str(name): int(c) for name, c in zip(ds.label_names, counts, strict=False)}
