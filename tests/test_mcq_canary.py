"""Issue 22 part 6: the canary on multiple-choice items (plants in the gold option)."""

from __future__ import annotations

import numpy as np

from spurious.canary import default_plants, run_canary
from spurious.data.plant import plant_shortcut
from spurious.data.synthetic_mcq import make_mcq_artifacts


def test_plants_go_into_the_gold_option_and_keep_everything_else():
    ds = make_mcq_artifacts(n=200, n_options=(3, 5), artifact="none", random_state=0).dataset
    assert [p["kind"] for p in default_plants(ds)] == ["token", "length"]
    for kind in ("token", "length"):
        out = plant_shortcut(ds, kind, rate=0.25, random_state=1)
        f, g = out.dataset.frame, ds.frame
        assert out.planted.sum() == 50 and out.spec["n_planted"] == 50
        assert (f["label_id"] == g["label_id"]).all() and (f["id"] == g["id"]).all()
        for i in range(len(ds)):
            gold = g["label_id"][i]
            changed = [a != b for a, b in zip(f["options"][i], g["options"][i], strict=True)]
            assert changed == [out.planted[i] and j == gold for j in range(len(changed))]
        if kind == "token":
            planted = f["options"][out.planted]
            assert all(
                "zqxjv" in o[y] for o, y in zip(planted, f["label_id"][out.planted], strict=True)
            )


def test_the_canary_sees_a_cue_in_a_fifth_of_the_gold_options():
    ds = make_mcq_artifacts(n=400, artifact="none", random_state=2).dataset
    res = run_canary(
        ds,
        analyses={"mc_cues": {}, "mc_leakage": {"features": "lexical", "n_permutations": 19}},
        plants=[{"kind": "token", "field": "options"}, {"kind": "length", "field": "options"}],
        rates=[0.2],
        background="shuffled",
    )
    s = res.summary.set_index(["analysis", "plant"])["detection_rate"]
    # The planted word lengthens the gold option: the "longest" cue points at it; an
    # appended option makes it stand out enough for the choices-only probe too.
    assert s["mc_cues", "token@options"] == 1.0 and s["mc_cues", "length@options"] == 1.0
    assert s["mc_leakage", "length@options"] == 1.0
    assert np.isfinite(s["mc_leakage", "token@options"])
    assert any("of the items (gold option)" in line for line in res.sentences())
