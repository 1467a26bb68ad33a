"""``spurious audit --executor ray``: the heavy steps on Ray give the local results.

The fast tests check the command line (the executor is recorded in the run's config and
re-run from its manifest; ``--ray-address`` alone and a missing Ray are refused before
any work). The slow ones start a local 2-worker Ray cluster once for the module and run
each step on it and locally: the encoding, the cross-fitted dynamics, cartography's null
trainings, minority's clusterings and a whole audit.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from spurious.cli import main
from spurious.data.synthetic import make_nli_artifacts
from spurious.exceptions import ParameterError
from spurious.execution import LocalExecutor, RayExecutor, current_executor, use_executor
from spurious.plan import audit_plan
from spurious.runner import normalise_config

RAY = {"kind": "ray", "options": {"address": "head:6379"}}


@pytest.fixture(scope="module")
def data_file(nli_jsonl):
    return nli_jsonl


def _audit(data_file, out, *extra):
    args = ["audit", str(data_file), "--task", "nli", "--quick", "--out", str(out), *extra]
    return CliRunner().invoke(main, args)


# -- the command line (no Ray started) -----------------------------------------------------
def test_audit_records_the_executor_and_run_config_replays_it(data_file, tmp_path, monkeypatch):
    pytest.importorskip("ray")
    joined = []  # the run joins its executor once, before the run folder exists
    monkeypatch.setattr(RayExecutor, "start", lambda self: joined.append(self.address) or self)
    monkeypatch.setattr(RayExecutor, "close", lambda self: None)
    out = tmp_path / "run"
    res = _audit(data_file, out, "--only", "atlas", "--executor", "ray", "--ray-address",
                 "head:6379")  # fmt: skip
    assert res.exit_code == 0, res.output
    config = json.loads((out / "manifest.json").read_text())["config"]
    assert config["executor"] == RAY
    assert joined == ["head:6379"]
    again = CliRunner().invoke(
        main, ["run", "--config", str(out / "manifest.json"), "--out", str(tmp_path / "again")]
    )
    assert again.exit_code == 0, again.output
    assert (
        json.loads((tmp_path / "again" / "manifest.json").read_text())["config"]["executor"] == RAY
    )
    assert joined == ["head:6379", "head:6379"]
    # Without --executor the config has no executor key: existing configs are unchanged.
    assert _audit(data_file, tmp_path / "plain", "--only", "atlas").exit_code == 0
    plain = json.loads((tmp_path / "plain" / "manifest.json").read_text())["config"]
    assert "executor" not in plain


def test_ray_address_alone_is_refused_before_any_work(data_file, tmp_path):
    out = tmp_path / "run"
    res = _audit(data_file, out, "--only", "atlas", "--ray-address", "head:6379")
    assert res.exit_code == 2
    assert "--ray-address" in res.output and "--executor ray" in res.output
    assert not out.exists()


def test_missing_ray_names_the_extra_before_any_work(data_file, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    out = tmp_path / "run"
    res = _audit(data_file, out, "--only", "atlas", "--executor", "ray")
    assert res.exit_code == 2
    assert "pip install 'spurious[ray]'" in res.output
    assert not out.exists()


def test_the_plan_gives_the_executor_to_every_analysis_that_has_one():
    plan = audit_plan(profile="quick", shared={"features": "bow", "executor": RAY}, task="nli")
    with_executor = sorted(name for name, params in plan.items() if "executor" in params)
    assert {"aflite", "cartography", "minority", "partial_input"} <= set(with_executor)
    assert all(plan[name]["executor"] == RAY for name in with_executor)
    assert "executor" not in plan["atlas"]


def test_config_executor_is_checked_and_scoped():
    base = {"inputs": {"data": "x.jsonl", "task": "nli"}, "analyses": {"atlas": {}}}
    assert "executor" not in normalise_config({**base, "executor": "local"})
    with pytest.raises(ParameterError, match="'executor' parameter"):
        normalise_config({**base, "executor": "spark"})
    outer = current_executor()
    assert isinstance(outer, LocalExecutor)
    with use_executor(LocalExecutor()) as ex:
        assert current_executor() is ex
    assert isinstance(current_executor(), LocalExecutor)


# -- on a local 2-worker Ray cluster -------------------------------------------------------
@pytest.fixture(scope="module")
def ray_executor():
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield RayExecutor()
    if started:
        ray.shutdown()


@pytest.fixture(scope="module")
def nli():
    return make_nli_artifacts(n=120, artifact_rate=0.5, random_state=1).dataset.split(0.3)


@pytest.mark.slow
def test_encoding_on_ray_equals_local_and_is_cached_the_same(ray_executor, tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    from spurious.features import distributed
    from spurious.features.encoder import EncoderFeaturizer, SentenceEncoder

    monkeypatch.setattr(distributed, "MIN_CHUNK", 2)  # 7 texts -> 4 tasks on 2 workers
    texts = ["A man plays a guitar.", "A dog runs.", "Two kids eat.", "A dog runs.",
             "Someone sleeps on a long red sofa.", "Rain.", "A woman reads a book."]  # fmt: skip
    local = EncoderFeaturizer(cache_dir=False, executor="local").embed_texts(texts)
    cached = tmp_path / "cache"
    remote = EncoderFeaturizer(cache_dir=cached, executor=ray_executor).embed_texts(texts)
    # Same bits: a text's vector does not depend on its batch companions or process.
    np.testing.assert_array_equal(remote, local)
    # Stored under the key a local run looks up: nothing is encoded again.
    monkeypatch.setattr(SentenceEncoder, "encode", lambda *a, **k: pytest.fail("re-encoded"))
    np.testing.assert_array_equal(EncoderFeaturizer(cache_dir=cached).embed_texts(texts), local)


@pytest.mark.slow
def test_crossfit_folds_on_ray_equal_local(ray_executor):
    from spurious.models.dynamics import crossfit_dynamics

    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 6)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.normal(size=90) > 0).astype(int)
    kw = {"n_folds": 3, "epochs": 2, "random_state": 4}
    local = crossfit_dynamics(X, y, executor="local", **kw)
    pd.testing.assert_frame_equal(crossfit_dynamics(X, y, executor=ray_executor, **kw), local)
    assert sorted(local["fold"].unique()) == [0, 1, 2]


@pytest.mark.slow
def test_cartography_null_trainings_on_ray_equal_local(ray_executor, nli):
    from spurious.detectors.cartography import Cartography

    train, test = nli
    kw = {"features": "bow", "epochs": 2, "null_permutations": 2}
    local = Cartography(**kw).run(train, test)
    remote = Cartography(**kw, executor=ray_executor).run(train, test)
    assert "spearman_confidence_null" in local.metrics
    assert remote.metrics == local.metrics  # exact: same seeds, same arithmetic
    pd.testing.assert_frame_equal(remote.scores, local.scores)


@pytest.mark.slow
def test_minority_clusterings_on_ray_equal_local(ray_executor, nli):
    from spurious.detectors.minority import MinorityExamples

    train, test = nli
    kw = {"features": "bow", "n_clusters": 3, "compare_methods": True, "n_permutations": 20,
          "task_epochs": 2, "stability_seeds": 2}  # fmt: skip
    local = MinorityExamples(**kw).run(train, test)
    remote = MinorityExamples(**kw, executor=ray_executor).run(train, test)
    assert "kmeans_homogeneity" in local.metrics and "ward_homogeneity" in local.metrics
    assert "marking_jaccard_mean" in local.metrics and "marked_frequency" in local.scores
    assert remote.metrics == local.metrics
    pd.testing.assert_frame_equal(remote.scores, local.scores)


@pytest.mark.slow
def test_audit_on_ray_gives_the_local_results(ray_executor, data_file, tmp_path):
    only = ["--only", "partial_input", "--only", "minority", "--features", "bow",
            "--set", "partial_input.n_resamples=50", "--set", "minority.n_clusters=3"]  # fmt: skip
    assert _audit(data_file, tmp_path / "local", *only).exit_code == 0
    res = _audit(data_file, tmp_path / "ray", *only, "--executor", "ray")
    assert res.exit_code == 0, res.output
    config = json.loads((tmp_path / "ray" / "manifest.json").read_text())["config"]
    assert config["executor"] == "ray"
    assert config["analyses"]["minority"]["executor"] == "ray"
    for name in ("partial_input", "minority"):
        a = pd.read_parquet(tmp_path / "local" / name / "scores.parquet")
        b = pd.read_parquet(tmp_path / "ray" / name / "scores.parquet")
        pd.testing.assert_frame_equal(a, b)
