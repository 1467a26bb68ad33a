"""Known leakage on real NLI data (../shared/data; skipped with a reason when absent)."""

from __future__ import annotations

from spurious import load_dataset
from spurious.detectors import PartialInput

from .conftest import shared_data


def test_snli_hypothesis_only_leaks():
    train = load_dataset(shared_data("snli", "test_tokenized.jsonl"), "nli")
    dev = load_dataset(shared_data("snli", "dev.jsonl"), "nli")
    m = PartialInput(features="bow", n_resamples=200).run(train, dev).metrics
    # Gururangan et al. / Poliak et al.: SNLI hypotheses alone carry the label well above
    # chance; the premise alone does not.
    assert m["delta_maj_hypothesis_only_ci_low"] > 0.15
    assert abs(m["delta_maj_premise_only"]) < 0.03
    assert m["accuracy_full"] > m["accuracy_hypothesis_only"]


def test_counterfactual_augmentation_reduces_leakage():
    def leak(variant: str) -> float:
        tr = load_dataset(shared_data("cad_snli", variant, "train.tsv"), "nli")
        te = load_dataset(shared_data("cad_snli", variant, "test.tsv"), "nli")
        return (
            PartialInput(features="bow", n_resamples=200, conditions=["hypothesis_only"])
            .run(tr, te)
            .metrics["delta_maj_hypothesis_only"]
        )

    original, revised = leak("original"), leak("revised_combined")
    assert original > 0.08
    assert revised < original - 0.05


def test_mnli_grouped_split_keeps_premise_only_at_chance():
    ds = load_dataset(shared_data("mnli", "dev_matched.jsonl"), "nli")
    train, test = ds.split(0.3, random_state=0)
    assert set(train.frame.premise).isdisjoint(test.frame.premise)
    m = (
        PartialInput(features="bow", n_resamples=100, conditions=["premise_only"])
        .run(train, test)
        .metrics
    )
    assert abs(m["delta_maj_premise_only"]) < 0.04
