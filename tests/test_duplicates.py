"""The ``duplicates`` analysis (issue 23 item 15): planted copies give known counts."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from scipy import sparse

import spurious
from spurious.data import Dataset
from spurious.detectors.duplicates import (
    Duplicates,
    candidate_pairs,
    exact_codes,
    near_pairs,
    normalise_fields,
)
from spurious.detectors.duplicates.search import _tfidf
from spurious.report.sections import build_section
from tests.conftest import shared_data

LABELS = ("entailment", "neutral", "contradiction")


def _sentence(rng: np.random.Generator, n_words: int) -> str:
    # Made-up words from a large vocabulary: two such sentences share almost nothing.
    return " ".join(f"w{k}" for k in rng.choice(5000, size=n_words, replace=False))


def planted(n: int = 120, seed: int = 0) -> tuple[pd.DataFrame, dict[str, int]]:
    """``n`` distinct NLI rows, then planted copies whose counts are known."""
    rng = np.random.default_rng(seed)
    rows = [
        {"premise": _sentence(rng, 12), "hypothesis": _sentence(rng, 14), "label": LABELS[i % 3]}
        for i in range(n)
    ]
    extra = []
    # 5 exact copies with the same label, spelled differently (case, spaces, tabs).
    for k in range(5):
        r = rows[k]
        extra.append({**r, "premise": "  " + r["premise"].upper(), "hypothesis": r["hypothesis"].replace(" ", "\t ")})  # fmt: skip
    # 3 exact copies with another label: annotation conflicts.
    for k in range(5, 8):
        r = rows[k]
        extra.append({**r, "label": LABELS[(LABELS.index(r["label"]) + 1) % 3]})
    # 4 near copies (one word appended to the hypothesis) with the same label ...
    for k in range(8, 12):
        r = rows[k]
        extra.append({**r, "hypothesis": r["hypothesis"] + " w9999"})
    # ... and 2 with another label (an edit that flips it).
    for k in range(12, 14):
        r = rows[k]
        extra.append({**r, "hypothesis": r["hypothesis"] + " w9998", "label": LABELS[(LABELS.index(r["label"]) + 1) % 3]})  # fmt: skip
    # A premise shared by two different pairs is not a copy.
    extra.append({"premise": rows[20]["premise"], "hypothesis": _sentence(rng, 14), "label": "neutral"})  # fmt: skip
    frame = pd.DataFrame(rows + extra)
    expected = {
        "n_examples": len(frame),
        "n_exact_groups": 8,
        "n_exact_rows": 16,
        "n_exact_redundant": 8,
        "n_exact_conflict_groups": 3,
        "n_exact_conflict_rows": 6,
        "n_near_pairs": 6,
        "n_near_rows": 12,
        "n_near_conflict_pairs": 2,
        "n_redundant": 12,  # 8 exact + 4 near that keep the label
        "premise_n_duplicate_rows": 16 + 12 + 2,
    }
    return frame, expected


@pytest.fixture(scope="module")
def planted_run():
    frame, expected = planted()
    ds = Dataset.from_frame(frame, "nli")
    return Duplicates().run(ds, progress=False), frame, expected


def test_planted_copies_give_the_known_counts(planted_run):
    res, frame, expected = planted_run
    for key, value in expected.items():
        assert res.metrics[key] == value, (key, res.metrics[key], value)
    assert res.metrics["share_redundant"] == pytest.approx(12 / len(frame))
    assert res.headline["severity"] == "info"  # information, not a shortcut claim
    assert res.headline["verdict"] == (
        "copies are counted twice by cross-validated and held-out scores: deduplicate (or "
        "group) them before reading leakage figures; exact copies with different labels "
        "(annotation conflicts)"
    )
    assert res.headline["text"] == (
        "12 of 135 examples (8.89%) repeat another input (8 exact, 4 near copies); "
        "3 exact group(s) with different labels; 2 near pair(s) with different labels"
    )


def test_per_example_scores_mark_the_copies(planted_run):
    res, _, _ = planted_run
    s = res.scores
    n = 120
    issue = s["is_duplicates_issue"].to_numpy()
    # Originals 0-11 and their copies (exact 0-7, near 8-11) are in clusters; 12-13 (near,
    # other label) are not copies, only conflicts.
    copies = np.r_[0:12, n : n + 12]
    assert set(np.flatnonzero(issue)) == set(copies)
    conflict = s["duplicates_label_conflict"].to_numpy()
    assert set(np.flatnonzero(conflict)) == set(np.r_[5:8, 12:14, n + 5 : n + 8, n + 12 : n + 14])
    assert s["duplicates_copies"].iloc[0] == 2 and s["duplicates_copies"].iloc[8] == 1
    assert s["duplicates_score"].iloc[0] == 1.0
    assert 0.9 <= s["duplicates_score"].iloc[8] < 1.0
    assert s["duplicates_score"].iloc[30] == 0.0 and s["duplicates_cluster"].iloc[30] == -1
    # Exact copy and original share a cluster.
    assert s["duplicates_cluster"].iloc[0] == s["duplicates_cluster"].iloc[n]


def test_normalisation_is_nfc_casefold_and_whitespace():
    fields = normalise_fields({"t": ["Cafe\u0301  au LAIT", "caf\u00e9 au lait", "cafe au lait"]})
    assert exact_codes(fields).tolist() == [0, 0, 1]


def test_candidate_pairs_miss_no_pair_that_brute_force_finds():
    rng = np.random.default_rng(3)
    for trial in range(5):
        base = [_sentence(rng, int(rng.integers(3, 15))) for _ in range(150)]
        # Near variants: drop or add a word, so many pairs sit around the thresholds.
        texts = base + [t.rsplit(" ", 1)[0] if len(t) > 8 else t + " w1" for t in base[:60]]
        x = _tfidf(normalise_fields({"t": texts})["t"])
        cos = (x @ x.T).toarray()
        for t in (0.5, 0.8, 0.9):
            want = {(a, b) for a, b in zip(*np.nonzero(cos >= t), strict=True) if a < b}
            got = set(zip(*candidate_pairs(x, t), strict=True))
            assert want <= got, (trial, t, sorted(want - got)[:5])
    # And the verified pairs are exactly those at or above the threshold.
    f = normalise_fields({"t": texts})
    i, j, s = near_pairs(f, 0.8, np.arange(len(texts)))
    assert set(zip(i, j, strict=True)) == {
        (a, b) for a, b in zip(*np.nonzero(cos >= 0.8 - 1e-9), strict=True) if a < b
    }
    assert np.allclose(s, cos[i, j])


def test_candidate_pairs_of_identical_rows():
    x = sparse.csr_matrix(np.array([[0.6, 0.8], [0.6, 0.8], [1.0, 0.0]]))
    assert [a.tolist() for a in candidate_pairs(x, 0.99)] == [[0], [1]]


def test_near_search_can_be_off_or_capped(planted_run):
    _, frame, expected = planted_run
    ds = Dataset.from_frame(frame, "nli")
    off = Duplicates(near_threshold=None).run(ds, progress=False)
    capped = Duplicates(max_near_rows=100).run(ds, progress=False)
    for res in (off, capped):
        assert res.metrics["near_searched"] == 0.0 and res.metrics["n_near_pairs"] == 0.0
        assert res.metrics["n_redundant"] == expected["n_exact_redundant"]
        assert "near copies not searched" in res.summary
    assert "more than 100 rows" in build_section(capped).html_body


def test_qa_has_no_label_conflicts_and_counts_copies():
    rng = np.random.default_rng(1)
    contexts = [_sentence(rng, 30) for _ in range(10)]
    rows = [
        {"question": _sentence(rng, 8), "context": contexts[i % 10], "answers": ["w1"]}
        for i in range(40)
    ]
    rows.append(dict(rows[3]))  # one exact copy
    ds = Dataset.from_frame(pd.DataFrame(rows), "qa")
    res = Duplicates().run(ds, progress=False)
    assert res.metrics["n_exact_redundant"] == 1 and res.metrics["n_redundant"] == 1
    assert "n_exact_conflict_groups" not in res.metrics
    assert res.metrics["context_n_duplicate_rows"] == 41  # by design, not a copy


def test_with_an_eval_split_the_training_split_is_counted_too():
    frame, expected = planted()
    train = Dataset.from_frame(frame, "nli", name="train")
    test = Dataset.from_frame(frame.iloc[100:120], "nli", name="test")  # no copies in it
    run = spurious.run(train, eval=test, analyses={"duplicates": {}}, progress=False)
    m = run["duplicates"].metrics
    assert m["n_examples"] == 20 and m["n_redundant"] == 0
    assert m["train_n_redundant"] == expected["n_redundant"]
    assert m["train_n_exact_conflict_groups"] == 3
    assert run["duplicates"].headline["verdict"] == "no input repeats another"


def test_report_section_shows_the_numbers_and_escapes_dataset_text():
    frame, _ = planted()
    frame.loc[0, "hypothesis"] = "<script>alert(1)</script> " + frame.loc[0, "hypothesis"]
    frame.loc[120, "hypothesis"] = frame.loc[0, "hypothesis"]
    res = Duplicates().run(Dataset.from_frame(frame, "nli"), progress=False)
    section = build_section(res)
    html = str(section.html_body)
    assert section.status == "ok" and "<script>" not in html and "&lt;script&gt;" in html
    assert "Exact copies with different labels" in html and "Near pairs" in html
    assert "annotation conflicts" in html


def test_audit_plans_it_before_the_model_based_analyses():
    from spurious.plan import audit_plan

    for task in ("nli", "text", "qa"):
        names = list(audit_plan(profile="quick", task=task))
        assert "duplicates" in names, task
    names = list(audit_plan(profile="quick", task="nli"))
    assert names.index("atlas") < names.index("duplicates") < names.index("partial_input")


def test_snli_dev_counts_and_speed():
    path = shared_data("snli", "dev.jsonl")
    ds = spurious.load_dataset(path, "nli")
    start = time.process_time()
    res = Duplicates().run(ds, progress=False)
    cpu = time.process_time() - start
    m = res.metrics
    assert m["n_examples"] == 9842
    assert (m["n_exact_redundant"], m["n_exact_conflict_groups"]) == (2, 0)
    assert (m["n_near_pairs"], m["n_near_conflict_pairs"], m["n_redundant"]) == (19, 17, 4)
    assert m["premise_share_duplicate"] > 0.99  # three hypotheses per premise, by design
    assert res.headline["verdict"] == "few copies: figures on this split are barely inflated"
    assert cpu < 5.0, f"{cpu:.1f} s of CPU on 9,842 pairs"
