"""The canary: can this audit see a shortcut of a given strength in *your* data?

:func:`run_canary` plants synthetic shortcuts of graded strength into copies of a real
labelled dataset (:func:`spurious.data.plant.plant_shortcut`: a token in a share of one
label's examples, a length cue, a lexical-overlap cue, a token in only the other field),
runs each analysis on the unplanted copy and on every planted copy, and scores what each
analysis says against the known truth:

- dataset level: the analysis *flags* a copy when its headline severity is ``low`` or
  above (the verdict API: a severity rests on an interval or a null test). A plant is
  *detected* when the planted copy is flagged and the unplanted copy of the same rows is
  not. On real data an analysis may already flag the unplanted copy (SNLI's hypotheses
  leak); then the plant is *escalated* when the severity rises above the unplanted one's,
  and ``detected`` is left undecided (NaN);
- example level: precision and recall of the planted rows among the rows the analysis
  marks ``is_<name>_issue`` (chance precision = the planted share of the copy).

Repeats draw new rows (and, with ``sizes``, new subsamples) from the seed. The analyses
run through the one lifecycle (:func:`spurious.runner.run`, in memory); features keyed by
text (MiniLM) are cached on disk, so a planted copy only encodes its changed rows.

This module registers no analysis (it is not under ``detectors/`` or ``evaluate/``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.data.plant import PLANT_KINDS, default_field, plant_shortcut
from spurious.exceptions import ParameterError
from spurious.utils.io import atomic_path, atomic_write_json, atomic_write_text

logger = logging.getLogger(__name__)

__all__ = ["CanaryResult", "default_plants", "run_canary"]

_SEVERITY_RANK = {"none": 0, "low": 1, "moderate": 2, "high": 3}
#: Rates of the default grid: shares of one label's examples that carry the plant.
DEFAULT_RATES = (0.005, 0.02, 0.05, 0.2)


def default_plants(dataset: Dataset) -> list[dict[str, str]]:
    """The shortcuts planted by default for a dataset's task.

    Two-field tasks: a token in the default field (the hypothesis), a token in the other
    field only (the premise: a shortcut a hypothesis-only audit cannot see), a length cue
    and an overlap cue in the default field. One-field tasks: a token and a length cue.

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> [p["kind"] + "@" + p["field"] for p in default_plants(
    ...     make_nli_artifacts(n=30, random_state=0).dataset)]
    ['token@hypothesis', 'token@premise', 'length@hypothesis', 'overlap@hypothesis']
    """
    if dataset.task.multiple_choice:
        return [{"kind": "token", "field": "options"}, {"kind": "length", "field": "options"}]
    fields = list(dataset.task.text_fields)
    main = default_field(dataset)
    plants = [{"kind": "token", "field": main}]
    if len(fields) >= 2:
        plants.append({"kind": "token", "field": next(f for f in fields if f != main)})
    plants.append({"kind": "length", "field": main})
    if len(fields) >= 2:
        plants.append({"kind": "overlap", "field": main})
    return plants


@dataclass
class CanaryResult:
    """What :func:`run_canary` measured.

    Attributes
    ----------
    rows : pandas.DataFrame
        One row per analysis x copy: ``analysis``, ``n``, ``repeat``, ``plant``
        (``kind@field``, ``"none"`` for the unplanted copy), ``kind``, ``field``,
        ``rate``, ``n_planted``, ``status``, ``severity``, ``inconclusive``, ``value``,
        ``baseline_severity``, ``baseline_value``, ``value_change`` (the headline value
        minus the unplanted copy's), ``flagged``, ``baseline_flagged``, ``detected`` (NaN
        when the unplanted copy is already flagged), ``escalated``, ``precision``, ``recall``,
        ``chance_precision``, ``seconds``.
    summary : pandas.DataFrame
        Per analysis x plant x rate x n: the detection, escalation and flag rates over
        repeats and the mean precision / recall.
    config : dict
        The grid and seed (plain data).
    timings : dict
        Seconds per part (``baseline``, ``planted``, ``total``).
    skipped : dict
        Analyses that did not run on these data, with the reason.
    """

    rows: pd.DataFrame
    summary: pd.DataFrame
    config: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def thresholds(self) -> pd.DataFrame:
        """Per analysis x plant x n: the smallest planted rate from which every larger rate
        of the grid is detected (or escalated) in at least half the repeats; NaN: none."""
        out = []
        s = self.summary
        for (a, p, n), g in s.groupby(["analysis", "plant", "n"], sort=False):
            g = g.sort_values("rate")
            seen = np.where(g["detection_rate"].notna(), g["detection_rate"], g["escalation_rate"])
            ok = np.asarray(seen, dtype=float) >= 0.5
            first = np.nan
            for i in range(len(ok)):
                if ok[i:].all():
                    first = float(g["rate"].iloc[i])
                    break
            out.append({"analysis": a, "plant": p, "n": n, "min_rate_detected": first})
        return pd.DataFrame(out)

    def sentences(self) -> list[str]:
        """One line per analysis x plant: "at this size, this audit detects ..."."""
        lines = []
        label = self.config.get("label")
        # Multiple choice: the plant goes into the gold option of a share of all items.
        unit = (
            "the items (gold option)"
            if self.config.get("task") == "mcq"
            else f"the {label!r} examples"
        )
        top = self.summary.groupby(["analysis", "plant", "n"], sort=False)["rate"].max()
        for r in self.thresholds().itertuples(index=False):
            if np.isnan(r.min_rate_detected):
                lines.append(
                    f"n={r.n}: {r.analysis} does not detect {r.plant} at any planted rate "
                    f"up to {top[(r.analysis, r.plant, r.n)]:.1%} of {unit}"
                )
            else:
                lines.append(
                    f"n={r.n}: {r.analysis} detects {r.plant} planted in >= "
                    f"{r.min_rate_detected:.1%} of {unit}"
                )
        return lines

    def format_table(self) -> str:
        """The summary as a plain-text table (the CLI prints it)."""
        s = self.summary.copy()
        cols = ["analysis", "plant", "n", "rate", "detection_rate", "escalation_rate"]
        cols += ["precision", "recall"]
        s["rate"] = s["rate"].map(lambda r: f"{r:.1%}")
        for c in ("detection_rate", "escalation_rate", "precision", "recall"):
            s[c] = s[c].map(lambda v: "-" if pd.isna(v) else f"{v:.2f}")
        return s[cols].to_string(index=False)

    def save(self, out: str | Path) -> dict[str, Path]:
        """Write ``canary.json``, ``canary.parquet`` (every row) and ``canary.svg`` to ``out``."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        paths = {
            "json": out / "canary.json",
            "parquet": out / "canary.parquet",
            "plot": out / "canary.svg",
        }
        atomic_write_json(paths["json"], self.to_json())
        with atomic_path(paths["parquet"]) as tmp:
            self.rows.to_parquet(tmp, index=False)
        svg = detection_plot(self)
        if svg is not None:
            atomic_write_text(paths["plot"], svg)
        else:
            paths.pop("plot")
        return paths

    def to_json(self) -> dict[str, Any]:
        """Plain data: config, timings, skipped analyses, summary, thresholds and sentences."""
        return {
            "config": self.config,
            "timings": self.timings,
            "skipped": self.skipped,
            "summary": _records(self.summary),
            "thresholds": _records(self.thresholds()),
            "sentences": self.sentences(),
        }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in r.items()}
        for r in frame.astype(object).to_dict("records")
    ]


def detection_plot(result: CanaryResult) -> str | None:
    """SVG text: detection (or escalation) rate against planted rate, one panel per plant,
    one line per analysis (the largest n)."""
    from matplotlib.figure import Figure

    s = result.summary
    if s.empty:
        return None
    s = s[s["n"] == s["n"].max()]
    plants = list(dict.fromkeys(s["plant"]))
    fig = Figure(figsize=(3.2 * len(plants), 3.0))
    axes = fig.subplots(1, len(plants), squeeze=False)[0]
    for ax, plant in zip(axes, plants, strict=True):
        for name, g in s[s["plant"] == plant].groupby("analysis", sort=False):
            g = g.sort_values("rate")
            seen = np.where(g["detection_rate"].notna(), g["detection_rate"], g["escalation_rate"])
            style = "-" if g["detection_rate"].notna().all() else "--"
            ax.plot(g["rate"] * 100, seen, style, marker="o", label=str(name))
        ax.set_xscale("log")
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(str(plant), fontsize=9)
        ax.set_xlabel(
            "planted in % of the items"
            if result.config.get("task") == "mcq"
            else "planted in % of the label's examples"
        )
    axes[0].set_ylabel("detected (dashed: escalated)")
    axes[-1].legend(fontsize=7, frameon=False)
    fig.tight_layout()
    import io

    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    return buf.getvalue()


def _subsample(data: Dataset, n: int, rng: np.random.Generator) -> Dataset:
    """``n`` rows, stratified by label (every label keeps its share), in original order."""
    y = data.labels
    picks = []
    for k in np.unique(y):
        rows = np.flatnonzero(y == k)
        take = max(1, round(n * len(rows) / len(y)))
        picks.append(rng.choice(rows, size=min(take, len(rows)), replace=False))
    return data.subset(np.sort(np.concatenate(picks)))


def _shuffled(data: Dataset, rng: np.random.Generator) -> Dataset:
    """The same rows and ids with the labels permuted (label counts kept)."""
    frame = data.frame.copy()
    if data.task.multiple_choice:
        # A gold drawn uniformly among each item's own options (a permuted letter could
        # point past an item's last option).
        k = frame["options"].map(len).to_numpy()
        frame["label_id"] = (rng.random(len(frame)) * k).astype(np.int64)
        frame["label"] = [data.label_names[i] for i in frame["label_id"]]
        return Dataset(data.task, frame, data.label_names, f"{data.name}-shuffled")
    order = rng.permutation(len(frame))
    frame["label"] = frame["label"].to_numpy()[order]
    frame["label_id"] = frame["label_id"].to_numpy()[order]
    return Dataset(data.task, frame, data.label_names, f"{data.name}-shuffled")


def _plan(
    analyses: Sequence[str] | Mapping[str, Mapping[str, Any]] | None,
    profile: str,
    seed: int,
    task: str | None = None,
) -> dict[str, dict[str, Any]]:
    from spurious.analysis import load_analyses
    from spurious.runner import audit_plan

    registry = load_analyses()
    if analyses is None:
        return audit_plan(profile=profile, seed=seed, task=task)
    if isinstance(analyses, Mapping):
        plan = {}
        for name, params in analyses.items():
            cls = registry.get(name)
            base = dict(cls.profiles.get(profile, {}))
            if "random_state" in cls().get_params(deep=False):
                base["random_state"] = seed
            plan[name] = {**base, **dict(params)}
        return plan
    return audit_plan(profile=profile, seed=seed, only=list(analyses))


def _outcome(result: Any, name: str, planted: np.ndarray | None, ids: np.ndarray) -> dict:
    head = result.headline or {}
    out: dict[str, Any] = {
        "status": result.status,
        "severity": head.get("severity"),
        "inconclusive": bool(head.get("inconclusive", False)),
        "value": head.get("value") if isinstance(head.get("value"), int | float) else None,
        "precision": np.nan,
        "recall": np.nan,
        "seconds": float(result.provenance.timings.get("total_s", np.nan)),
    }
    column = f"is_{name}_issue"
    if planted is not None and result.status == "ok" and column in result.scores:
        flags = result.scores.set_index("id")[column].reindex(ids)
        if flags.notna().all():
            flagged = flags.to_numpy(dtype=bool)
            hit = int((flagged & planted).sum())
            out["precision"] = hit / flagged.sum() if flagged.any() else np.nan
            out["recall"] = hit / planted.sum() if planted.any() else np.nan
    return out


def run_canary(
    data: Dataset,
    *,
    analyses: Sequence[str] | Mapping[str, Mapping[str, Any]] | None = None,
    profile: str = "quick",
    plants: Sequence[Mapping[str, Any]] | None = None,
    rates: Sequence[float] = DEFAULT_RATES,
    sizes: Sequence[int] | None = None,
    n_repeats: int = 1,
    label: str | None = None,
    token: str | None = None,
    background: str = "own",
    random_state: int = 0,
    progress: Callable[[str], None] | None = None,
) -> CanaryResult:
    """Plant shortcuts of graded strength into copies of ``data`` and score each analysis.

    Parameters
    ----------
    data : Dataset
        A labelled dataset (the user's own).
    analyses : list of names or {name: params}, optional
        Default: every analysis of ``spurious audit`` with ``profile``'s parameters
        (analyses whose requirements these data do not meet are skipped and listed).
    profile : {"quick", "full"}, default="quick"
    plants : list of {"kind", "field", "rates"}, optional
        Default :func:`default_plants`. A plant's own ``rates`` replace ``rates`` for it
        (a small grid for the secondary plants).
    rates : sequence of float, default=(0.005, 0.02, 0.05, 0.2)
        Shares of ``label``'s examples that carry each plant.
    sizes : sequence of int, optional
        Subsample sizes (stratified by label); default: all rows.
    n_repeats : int, default=1
        Repeats per size (new subsample and planted rows each).
    label : str, optional
        The label the plants point to (default: the first label).
    token : str, optional
        The planted word (default :data:`spurious.data.plant.DEFAULT_TOKEN`).
    background : {"own", "shuffled"}, default="own"
        What the shortcuts are planted into: the data as they are (``"own"``: an analysis
        that already flags the real data cannot show a detection, only an escalation and
        the example-level scores), or the same texts with the labels permuted
        (``"shuffled"``: your texts, lengths and vocabulary, no real shortcut left, so the
        unplanted copy is clean and every plant's detection is decided).
    random_state : int, default=0
        Seed of subsamples, plants and every analysis.
    progress : callable, optional
        Called with a line as each copy finishes (the CLI prints it).

    Returns
    -------
    CanaryResult

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> data = make_nli_artifacts(n=300, artifact_rate=0.0, random_state=0).dataset
    >>> res = run_canary(data, analyses={"atlas": {}}, plants=[{"kind": "token"}],
    ...                  rates=[0.3], label="neutral")
    >>> res.summary[["analysis", "plant", "detection_rate"]].values.tolist()
    [['atlas', 'token@hypothesis', 1.0]]
    """
    rates, sizes = _check_grid(data, n_repeats, rates, sizes, background)
    label = data.label_names[0] if label is None else label
    plants = _check_plants(data, plants, rates)
    grid = _Grid(
        plan=_plan(analyses, profile, random_state, data.task.name),
        plants=plants,
        label=label,
        token_kw={} if token is None else {"token": token},
        profile=profile,
        seed=random_state,
        progress=progress,
    )
    # Checked once, before any analysis runs: bad plants fail here.
    for p in plants:
        plant_shortcut(
            data, p["kind"], rate=p["rates"][-1], label=label, field=p["field"], **grid.token_kw
        )

    rows: list[dict[str, Any]] = []
    t_all = time.perf_counter()
    for n in sizes:
        for rep in range(n_repeats):
            rng = np.random.default_rng([random_state, n, rep])
            base = data if n == len(data) else _subsample(data, n, rng)
            if background == "shuffled":
                base = _shuffled(base, rng)
            rows += _run_copies(base, rep, rng, grid)
    grid.timings["total_s"] = time.perf_counter() - t_all
    frame = _judge(pd.DataFrame(rows))
    config = {
        "n_data": len(data),
        "task": data.task.name,
        "label": label,
        "plants": plants,
        "rates": rates,
        "sizes": sizes,
        "n_repeats": int(n_repeats),
        "background": background,
        "profile": profile,
        "analyses": grid.plan,
        "random_state": int(random_state),
        **({"token": token} if token else {}),
    }
    timings = {k: round(v, 2) for k, v in grid.timings.items()}
    return CanaryResult(frame, _summarise(frame), config, timings, grid.skipped)


def _check_grid(
    data: Dataset,
    n_repeats: Any,
    rates: Sequence[float],
    sizes: Sequence[int] | None,
    background: str,
) -> tuple[list[float], list[int]]:
    """Raise on invalid arguments of :func:`run_canary`; the sorted rates and the sizes."""
    if not isinstance(data, Dataset):
        raise ParameterError(
            f"The 'data' parameter of run_canary must be a spurious Dataset. Got "
            f"{type(data).__name__} instead."
        )
    if not data.task.has_labels:
        raise ParameterError(f"run_canary needs class labels; task {data.task.name!r} has none.")
    if not isinstance(n_repeats, Integral) or n_repeats < 1:
        raise ParameterError(
            f"The 'n_repeats' parameter of run_canary must be an int >= 1. Got {n_repeats!r}."
        )
    if not rates or any(not 0 < float(r) <= 1 for r in rates):
        raise ParameterError(
            f"The 'rates' parameter of run_canary must list shares in (0, 1]. Got {rates!r}."
        )
    sorted_rates = sorted(float(r) for r in rates)
    sizes = [len(data)] if not sizes else [int(n) for n in sizes]
    if any(n < 2 or n > len(data) for n in sizes):
        raise ParameterError(
            f"The 'sizes' parameter of run_canary must lie in [2, {len(data)}] (the rows "
            f"of the data). Got {sizes!r}."
        )
    if background not in ("own", "shuffled"):
        raise ParameterError(
            "The 'background' parameter of run_canary must be 'own' or 'shuffled'. "
            f"Got {background!r} instead."
        )
    return sorted_rates, sizes


def _check_plants(
    data: Dataset, plants: Sequence[Mapping[str, Any]] | None, rates: list[float]
) -> list[dict[str, Any]]:
    """The plants with their field and sorted rates filled in (default :func:`default_plants`)."""
    out = [dict(p) for p in (plants or default_plants(data))]
    for p in out:
        p.setdefault("field", default_field(data))
        p["rates"] = sorted(float(r) for r in p.get("rates", rates))
        if not p["rates"] or any(not 0 < r <= 1 for r in p["rates"]):
            raise ParameterError(
                f"A plant's 'rates' must list shares in (0, 1]. Got {p['rates']!r}."
            )
        if p.get("kind") not in PLANT_KINDS:
            raise ParameterError(
                f"A plant's 'kind' must be one of {list(PLANT_KINDS)}. Got {p.get('kind')!r}."
            )
    return out


@dataclass
class _Grid:
    """What every copy of :func:`run_canary` shares, and what the copies add up."""

    plan: dict[str, dict[str, Any]]
    plants: list[dict[str, Any]]
    label: str
    token_kw: dict[str, str]
    profile: str
    seed: int
    progress: Callable[[str], None] | None
    timings: dict[str, float] = field(default_factory=lambda: {"baseline_s": 0.0, "planted_s": 0.0})
    skipped: dict[str, str] = field(default_factory=dict)


def _run_copies(
    base: Dataset, rep: int, rng: np.random.Generator, grid: _Grid
) -> list[dict[str, Any]]:
    """Run the analyses on ``base`` unplanted, then on every plant x rate: one row each."""
    from spurious.runner import run

    rows: list[dict[str, Any]] = []
    ids = base.ids
    t0 = time.perf_counter()
    # grid.plan holds the profile's parameters already (run() refuses a profile beside it)
    baseline = run(base, analyses=grid.plan, seed=grid.seed, progress=False)
    grid.timings["baseline_s"] += time.perf_counter() - t0
    base_out = {}
    for name, res in baseline.results.items():
        if res.status == "skipped":
            grid.skipped[name] = res.error or "skipped"
            continue
        base_out[name] = _outcome(res, name, None, ids)
        rows.append(
            {"analysis": name, "n": len(base), "repeat": rep, "plant": "none",
             "kind": "none", "field": None, "rate": 0.0, "n_planted": 0,
             **base_out[name]}
        )  # fmt: skip
    if grid.progress:
        grid.progress(f"n={len(base)} repeat {rep}: unplanted copy done")
    for p in grid.plants:
        for rate in p["rates"]:
            seed = int(rng.integers(0, 2**31 - 1))
            planted = plant_shortcut(
                base, p["kind"], rate=rate, label=grid.label, field=p["field"],
                random_state=seed, **grid.token_kw,
            )  # fmt: skip
            t0 = time.perf_counter()
            got = run(planted.dataset, analyses=grid.plan, seed=grid.seed, progress=False)
            grid.timings["planted_s"] += time.perf_counter() - t0
            for name, res in got.results.items():
                if name not in base_out:
                    continue
                o = _outcome(res, name, planted.planted, ids)
                rows.append(
                    {
                        "analysis": name,
                        "n": len(base),
                        "repeat": rep,
                        "plant": f"{p['kind']}@{p['field']}",
                        "kind": p["kind"],
                        "field": p["field"],
                        "rate": rate,
                        "n_planted": int(planted.planted.sum()),
                        **o,
                    }
                )
            if grid.progress:
                grid.progress(
                    f"n={len(base)} repeat {rep}: {p['kind']}@{p['field']} at {rate:.1%} done"
                )
    return rows


def _flag(severity: Any) -> float:
    return np.nan if severity not in _SEVERITY_RANK else float(_SEVERITY_RANK[severity] >= 1)


def _judge(frame: pd.DataFrame) -> pd.DataFrame:
    """Add the baseline's severity and the dataset-level judgements to every row."""
    if frame.empty:
        return frame
    base = frame[frame["plant"] == "none"].set_index(["analysis", "n", "repeat"])["severity"]
    key = pd.MultiIndex.from_frame(frame[["analysis", "n", "repeat"]])
    frame["baseline_severity"] = base.reindex(key).to_numpy()
    base_value = frame[frame["plant"] == "none"].set_index(["analysis", "n", "repeat"])["value"]
    frame["baseline_value"] = base_value.reindex(key).to_numpy()
    frame["value_change"] = pd.to_numeric(frame["value"], errors="coerce") - pd.to_numeric(
        frame["baseline_value"], errors="coerce"
    )
    frame["flagged"] = frame["severity"].map(_flag)
    frame["baseline_flagged"] = frame["baseline_severity"].map(_flag)
    rank = frame["severity"].map(_SEVERITY_RANK)
    base_rank = frame["baseline_severity"].map(_SEVERITY_RANK)
    frame["escalated"] = np.where(rank.notna() & base_rank.notna(), rank > base_rank, np.nan)
    detected = np.where(frame["baseline_flagged"] == 0.0, frame["flagged"], np.nan)
    frame["detected"] = detected.astype(float)
    planted_share = frame["n_planted"] / frame["n"]
    frame["chance_precision"] = np.where(frame["plant"] == "none", np.nan, planted_share)
    return frame


def _summarise(frame: pd.DataFrame) -> pd.DataFrame:
    if frame.empty:
        return pd.DataFrame(
            columns=["analysis", "plant", "n", "rate", "detection_rate", "escalation_rate"]
        )
    planted = frame[frame["plant"] != "none"]
    g = planted.groupby(["analysis", "plant", "n", "rate"], sort=False)
    out = g.agg(
        n_repeats=("repeat", "nunique"),
        n_planted=("n_planted", "mean"),
        detection_rate=("detected", "mean"),
        escalation_rate=("escalated", "mean"),
        value_change=("value_change", "mean"),
        flag_rate=("flagged", "mean"),
        baseline_flag_rate=("baseline_flagged", "mean"),
        precision=("precision", "mean"),
        recall=("recall", "mean"),
        chance_precision=("chance_precision", "mean"),
    ).reset_index()
    return out
