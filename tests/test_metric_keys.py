"""Metric names: scores named for what they hold, names of models in their own key segments.

Flat keys such as ``acc_<model>_<adv>`` collided when names held underscores (model
``a_b`` on adversary ``c`` and model ``a`` on adversary ``b_c`` both gave ``acc_a_b_c``);
keys are now ``<metric>/<model>/<adv>`` (``spurious.utils.metric_keys``).
"""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pandas as pd
import pytest

from spurious.analysis import get_analysis
from spurious.context import RunContext
from spurious.data import Dataset
from spurious.data.predictions import align_predictions
from spurious.data.synthetic import make_nli_artifacts
from spurious.evaluate.prediction_bias import bias_table
from spurious.exceptions import ParameterError
from spurious.report.sections.fairness import fairness_section
from spurious.report.sections.prediction_bias import prediction_bias_section
from spurious.results import Result
from spurious.schema import metrics_schema
from spurious.utils.metric_keys import metric_key, split_metric_key


def test_keys_split_back_into_their_names():
    for names in (("a_b", "c"), ("a", "b_c"), ("org/model", "100%"), ("x%2Fy",)):
        key = metric_key("f1_ci_low", *names)
        assert split_metric_key(key) == ("f1_ci_low", names)
    assert metric_key("f1", "a_b", "c") != metric_key("f1", "a", "b_c")
    assert metric_key("bias", "org/model", "h") == "bias/org%2Fmodel/h"
    with pytest.raises(ParameterError, match="'metric'"):
        metric_key("f1/x", "m")


def _nli_context() -> RunContext:
    train, test = make_nli_artifacts(n=360, random_state=0).dataset.split(0.3)
    names = np.array(test.label_names, dtype=object)
    rng = np.random.default_rng(0)
    preds = []
    for model, noise in (("a_b", 0.1), ("a", 0.4)):
        lab = test.labels.copy()
        flip = rng.random(len(lab)) < noise
        lab[flip] = rng.integers(0, test.n_classes, flip.sum())
        preds.append(
            align_predictions(dict(zip(test.ids, names[lab], strict=True)), test, name=model)
        )
    return RunContext(train, test, predictions=preds, progress=False)


def test_fairness_keys_with_underscored_names_do_not_collide():
    cls = get_analysis("fairness")
    params = {**cls.fast_params, "adversaries": {"c": "bow", "b_c": "tfidf"}, "seeds": [0]}
    res = cls(**params).run(context=_nli_context())
    m, d = res.metrics, res.details
    cells = {
        split_metric_key(k)[1]: v for k, v in m.items() if split_metric_key(k)[0] == "accuracy"
    }
    # 2 models x (none + 2 adversaries), each its own key: the old scheme lost one of
    # (a_b, c) and (a, b_c) to the other.
    assert set(cells) == {(mo, a) for mo in ("a_b", "a") for a in ("none", "c", "b_c")}
    for row in d["matrix"]:
        assert cells[(row["model"], row["adversary"])] == row["accuracy"]
    assert d["score"] == "accuracy" and not any(k.startswith("acc_") for k in m)
    assert m["accuracy/a_b/none"] > m["accuracy/a/none"]
    jsonschema.validate(json.loads(json.dumps(m).replace("NaN", "null")), metrics_schema(cls))


def _qa_two_models(n: int = 2000) -> tuple[Dataset, list, pd.DataFrame]:
    rng = np.random.default_rng(0)
    ids = [f"q{i}" for i in range(n)]
    frame = pd.DataFrame(
        {"id": ids, "question": ["q"] * n, "context": ["c"] * n, "answers": [["gold"]] * n}
    )
    ds = Dataset.from_frame(frame, "qa", name="toy")
    h = rng.integers(0, 10, n).astype(float)
    right = {"bert_base": rng.random(n) < np.where(h > 6, 0.3, 0.9), "bert": rng.random(n) < 0.6}
    preds = [
        align_predictions(dict(zip(ids, np.where(r, "gold", "x"), strict=True)), ds, name=name)
        for name, r in right.items()
    ]
    attributes = pd.DataFrame({"id": ids, "h": h, "base_h": rng.random(n)})
    return ds, preds, attributes


def test_prediction_bias_keys_name_the_score_and_keep_names_apart():
    ds, preds, attributes = _qa_two_models()
    res = bias_table(ds, preds, attributes, metric="em", n_trials=50, sample_size=200)
    m = res.metrics
    # bias_bert_base_h was both (bert_base, h) and (bert, base_h)
    assert {split_metric_key(k)[1] for k in m if k.startswith("bias/")} == {
        (mo, h) for mo in ("bert_base", "bert") for h in ("h", "base_h")
    }
    assert m["bias/bert_base/h"] > 0.4 and m["bias/bert/base_h"] == 0.0
    # named for what it holds: the mean EM on a 0-1 scale, and the worse group's EM
    assert m["em/bert"] == pytest.approx(0.6, abs=0.03) and 0 <= m["em/bert_base"] <= 1
    assert m["worse_group_em/bert_base/h"] == pytest.approx(0.3, abs=0.05)
    assert m["threshold/h"] == 6.0
    assert not any(k.startswith(("overall_", "threshold_")) for k in m)
    cls = get_analysis("prediction_bias")
    jsonschema.validate(json.loads(json.dumps(m).replace("NaN", "null")), metrics_schema(cls))
    html = prediction_bias_section(res).html_body
    assert "SQuAD EM (0-1; HF evaluate prints x100)" in html


def test_results_written_with_the_old_keys_still_render(tmp_path):
    """A fairness result of the flat-key era (acc_, mean_acc_, score "SQuAD F1")."""
    old = Result(
        "fairness",
        pd.DataFrame({"id": ["q1"]}),
        {"mean_acc_none": 0.734, "mean_acc_qa_lexical": 0.635, "acc_bert_tiny_none": 0.5},
        details={
            "models": ["bert_tiny"],
            "adversary_order": ["qa_lexical"],
            "score": "SQuAD F1",
            "matrix": [{"model": "bert_tiny", "adversary": "none", "accuracy": 0.5063}],
        },
    )
    html = fairness_section(old).html_body
    assert "0.734" in html and "0.635" in html and "0.506" in html and "SQuAD F1 (0-1)" in html
    old_bias = Result(
        "prediction_bias",
        pd.DataFrame({"id": ["a"]}),
        {"overall_m": 0.42, "threshold_h": 3.0, "n_low_h": 900.0, "n_high_h": 1100.0},
        details={"models": ["m"], "heuristics": ["h"], "metric": "em",
                 "table": [{"model": "m", "heuristic": "h", "bias": 0.1}]},
    )  # fmt: skip
    html = prediction_bias_section(old_bias).html_body
    assert "0.420" in html and "900 / 1,100" in html
    # resample --from-run reads an old run's threshold as well as a new one's
    from spurious.cli.bias import _threshold_from_run

    for key in ("threshold_h", "threshold/h"):
        (tmp_path / key.replace("/", "-") / "prediction_bias").mkdir(parents=True)
        path = tmp_path / key.replace("/", "-") / "prediction_bias" / "metrics.json"
        path.write_text(json.dumps({key: 3.0}))
        assert _threshold_from_run(path.parents[1], "h") == 3.0
