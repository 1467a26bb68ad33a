"""How a cartography result reads: the headline, the summary line and the notes.

:func:`cartography_headline` judges the agreement of the full and partial-input maps
beyond permuted labels (``spearman_excess``), or reports the map as ``info`` when there
is no partial view or no null; :func:`cartography_summary` is the one-line summary;
:func:`map_notes` says how the map was made (fast-path proxy, in-sample or held-out
dynamics), which the report shows beside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spurious.context import RunContext
from spurious.detectors.cartography.mcq import MC_FAST_PATH_NOTE
from spurious.detectors.cartography.regions import REGIONS
from spurious.results import Headline

if TYPE_CHECKING:  # the protocol the analysis passing itself satisfies
    from spurious.detectors.cartography.settings import CartographySettings

#: Why the fast path's full-input map is a proxy (issue 19 item 12; numbers measured on SNLI
#: dev: bench/results/finetune.json, agreement_fast_vs_finetune, and README).
FAST_PATH_NOTE = (
    "The fast path is a proxy: an MLP trained {epochs} epochs on frozen {features} sentence "
    "features, not a fine-tuned model. Such a probe sees mostly hypothesis cues: on SNLI dev "
    "its full-input confidence agreed with a fine-tuned MiniLM's map at Spearman 0.54 only. "
    "For a full-input map use path='finetune' (or load dynamics of your own training run)."
)


def map_notes(analysis: CartographySettings, ctx: RunContext) -> list[str]:
    """What the reader must know about how the map was made (the report shows these)."""
    notes = []
    if analysis.path == "fast" and ctx.train.task.multiple_choice:
        notes.append(
            MC_FAST_PATH_NOTE.format(
                model=analysis.model or "mlp",
                features=analysis.features,
                epochs=10 if analysis.epochs is None else analysis.epochs,
            )
        )
    elif analysis.path == "fast":
        notes.append(
            FAST_PATH_NOTE.format(
                features=analysis.features,
                epochs=10 if analysis.epochs is None else analysis.epochs,
            )
        )
    if ctx.eval is None:
        if analysis.held_out_folds is None:
            notes.append(
                "Mapped in-sample: every example is recorded by a model that trains on it, "
                "so late epochs reward memorisation. Give an evaluation split, or set "
                "held_out_folds=2 for held-out (cross-fitted) dynamics."
            )
        else:
            notes.append(
                f"Held-out dynamics: each example is recorded by a probe trained on the "
                f"other {analysis.held_out_folds - 1} of {analysis.held_out_folds} folds."
            )
    return notes


def cartography_summary(
    analysis: CartographySettings,
    metrics: dict[str, float],
    n_scored: int,
    split: str,
    partial_view: str | None,
) -> str:
    """The result's one-line summary: region shares, anti-biased count, the maps' agreement."""
    shares = ", ".join(f"{r.replace('_', '-')} {metrics[f'share_{r}']:.0%}" for r in REGIONS[:3])
    summary = (
        f"{n_scored:,} {split} examples mapped ({shares}); "
        f"{int(metrics['n_anti_biased'])} anti-biased (q={analysis.anti_biased_fraction:.0%}); "
        f"mean confidence {metrics['mean_confidence']:.3f}"
    )
    if "spearman_confidence" in metrics:
        summary += (
            f"; {partial_view} vs full confidence Spearman {metrics['spearman_confidence']:.2f}"
        )
    return summary


def cartography_headline(analysis: CartographySettings, result: Any) -> Headline:
    """Agreement of the full and partial-input maps beyond permuted labels.

    The effect is ``spearman_excess`` (Spearman of the two maps' confidence minus the
    same with permuted labels) with its 95% interval, so the severity rests on the
    interval's lower bound. Without the null (fine-tuned or loaded dynamics,
    ``null_permutations=0``) the raw Spearman and its Fisher-z interval are shown as
    ``info``: the two maps agree on permuted labels too (e.g. 0.77-0.84 on the
    conformance suite's shuffled data), so the raw correlation is not a verdict.
    """
    m = result.metrics
    details = result.details or {}
    anti = int(m.get("n_anti_biased", 0))
    rho = m.get("spearman_confidence")
    partial = (details.get("views") or {}).get("partial")
    if rho is None or partial is None:
        text = (
            f"mean confidence {m.get('mean_confidence', float('nan')):.2f}; "
            f"{anti} anti-biased (hardest) examples"
        )
        return analysis.verdict_scale.headline(
            "dataset cartography", m.get("mean_confidence"), text, severity="info"
        )
    label = partial.replace("_only", "-only").replace("_", " ")
    text = f"{label} confidence ranks examples like full-input confidence (Spearman {rho:.2f}"
    raw = (m.get("spearman_confidence_ci_low"), m.get("spearman_confidence_ci_high"))
    if "spearman_excess" in m:
        rho0, excess = m["spearman_confidence_null"], m["spearman_excess"]
        text += f"; {rho0:.2f} with permuted labels, excess {excess:+.2f}"
        text += f"); {anti} anti-biased examples"
        return analysis.verdict_scale.headline(
            "partial-input cartography",
            rho,
            text,
            effect=excess,
            interval=(m["spearman_excess_ci_low"], m["spearman_excess_ci_high"]),
            p_value=m.get("spearman_excess_p_value"),
            null="permuted labels (both maps re-made)",
            measured="Spearman of full vs partial-input confidence minus the same with "
            "permuted labels",
        )
    text += f"); {anti} anti-biased examples; no permuted-label null on this path"
    interval = raw if None not in raw else None
    return analysis.verdict_scale.headline(
        "partial-input cartography",
        rho,
        text,
        interval=interval,
        measured="Spearman of full vs partial-input confidence (no null: not judged)",
        severity="info",
    )
