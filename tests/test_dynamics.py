"""Training dynamics: the record, its files, the summary statistics and the fast path."""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import sparse

from spurious.context import RunContext
from spurious.data import Dataset
from spurious.data.synthetic import make_nli_artifacts
from spurious.exceptions import AnalysisError, DataFormatError, ParameterError, ResultLoadError
from spurious.models.dynamics import (
    TrainingDynamics,
    cartography_stats,
    load_dynamics,
    probe_dynamics,
)

torch = pytest.importorskip("torch")


def _frame(records: dict[str, list[tuple[float, float, bool]]], split: str = "train"):
    rows = [
        {"id": i, "split": split, "epoch": e, "p_gold": p, "pred": 0 if c else 1, "correct": c}
        for i, recs in records.items()
        for e, p, c in recs
    ]
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------
# Summary statistics, computed by hand
# ---------------------------------------------------------------------------------------
def test_stats_known_answers():
    frame = _frame(
        {
            # p = .2 .8 .4 .6: mean .5; population std sqrt((.09+.09+.01+.01)/4) = sqrt(.05);
            # correct F T F T: 2/4 correct, forgotten once (epoch 2 -> 3).
            "a": [(1, 0.2, False), (2, 0.8, True), (3, 0.4, False), (4, 0.6, True)],
            # always right with p = .9: confidence .9, no spread, never forgotten.
            "b": [(1, 0.9, True), (2, 0.9, True), (3, 0.9, True), (4, 0.9, True)],
            # learned, forgotten, learned, forgotten: two forgetting events.
            "c": [(1, 0.6, True), (2, 0.3, False), (3, 0.7, True), (4, 0.2, False)],
            # never learned: 0 forgetting events (the reference code's sentinel is 1000).
            "d": [(1, 0.1, False), (2, 0.1, False), (3, 0.3, False), (4, 0.1, False)],
        }
    )
    # Row order must not matter: shuffle the records.
    frame = frame.sample(frac=1.0, random_state=3).reset_index(drop=True)
    stats = cartography_stats(TrainingDynamics(frame, ["yes", "no"])).set_index("id")
    assert stats.loc["a", "confidence"] == pytest.approx(0.5)
    assert stats.loc["a", "variability"] == pytest.approx(np.sqrt(0.05))
    assert stats.loc["a", "correctness"] == pytest.approx(0.5)
    assert stats.loc["a", "forgetting"] == 1
    assert stats.loc["b"].tolist()[:4] == pytest.approx([0.9, 0.0, 1.0, 0])
    assert stats.loc["c", "forgetting"] == 2
    assert stats.loc["c", "variability"] == pytest.approx(np.std([0.6, 0.3, 0.7, 0.2]))
    assert stats.loc["d", "forgetting"] == 0 and stats.loc["d", "correctness"] == 0
    assert stats.loc["d", "confidence"] == pytest.approx(0.15)
    # Population std (divide by E), not the sample std.
    assert stats.loc["d", "variability"] == pytest.approx(np.std([0.1, 0.1, 0.3, 0.1], ddof=0))
    assert (stats["n_recordings"] == 4).all()


def test_stats_split_and_missing_recording():
    frame = pd.concat(
        [
            _frame({"a": [(1, 0.2, False), (2, 0.8, True)]}),
            _frame({"z": [(1, 0.5, True), (2, 0.7, True)]}, split="eval"),
        ]
    )
    dyn = TrainingDynamics(frame, ["y", "n"])
    assert cartography_stats(dyn, "eval")["id"].tolist() == ["z"]
    assert cartography_stats(dyn, "eval")["confidence"].iloc[0] == pytest.approx(0.6)
    gap = _frame({"a": [(1, 0.2, False), (2, 0.8, True)], "b": [(1, 0.3, False)]})
    with pytest.raises(AnalysisError, match="example 'b' has 1 record"):
        cartography_stats(TrainingDynamics(gap, ["y", "n"]))
    with pytest.raises(AnalysisError, match="no 'eval' split"):
        cartography_stats(TrainingDynamics(gap, ["y", "n"]), "eval")


def test_record_validation():
    with pytest.raises(DataFormatError, match="missing \\['correct'\\]"):
        TrainingDynamics(_frame({"a": [(1, 0.5, True)]}).drop(columns="correct"), ["y"])
    with pytest.raises(DataFormatError, match="'train' or 'eval'"):
        TrainingDynamics(_frame({"a": [(1, 0.5, True)]}, split="test"), ["y"])
    with pytest.raises(DataFormatError, match="probabilities in \\[0, 1\\]"):
        TrainingDynamics(_frame({"a": [(1, 1.5, True)]}), ["y"])


# ---------------------------------------------------------------------------------------
# Files: Parquet + JSON, allenai/cartography jsonl
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small():
    synth = make_nli_artifacts(n=120, artifact_rate=0.9, random_state=1)
    train, test = synth.dataset.split(0.25, random_state=0)
    ctx = RunContext(train, test, progress=False)
    dyn = ctx.artifact(
        "training_dynamics", features="bow", epochs=3, records_per_epoch=2, random_state=0
    )
    return train, test, dyn


def test_save_load_round_trip(small, tmp_path):
    _, _, dyn = small
    assert dyn.epochs("train") == [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]  # fractional recordings
    dyn.save(tmp_path / "d")
    back = TrainingDynamics.load(tmp_path / "d")
    pd.testing.assert_frame_equal(back.frame, dyn.frame)
    assert back.label_names == dyn.label_names and back.meta == json.loads(json.dumps(dyn.meta))
    assert not [p for p in (tmp_path / "d").iterdir() if p.name.startswith(".")]
    with pytest.raises(ResultLoadError, match="no saved training dynamics"):
        TrainingDynamics.load(tmp_path)
    info = json.loads((tmp_path / "d" / "dynamics.json").read_text())
    info["format_version"] = 99
    (tmp_path / "d" / "dynamics.json").write_text(json.dumps(info))
    with pytest.raises(ResultLoadError, match="format version 99"):
        TrainingDynamics.load(tmp_path / "d")


def test_cartography_jsonl_round_trip(small, tmp_path):
    train, _, dyn = small
    files = dyn.to_cartography_jsonl(tmp_path)
    assert [f.name for f in files] == [f"dynamics_epoch_{e}.jsonl" for e in range(6)]
    first = json.loads(files[2].read_text().splitlines()[0])
    assert set(first) == {"guid", "logits_epoch_2", "gold"} and isinstance(first["gold"], int)
    back = TrainingDynamics.from_cartography_jsonl(tmp_path, train)
    train_rows = dyn.of("train").copy()
    # Recording e of the files is epoch e + 1; everything else is the same.
    train_rows["epoch"] = train_rows["epoch"].map({e: i + 1.0 for i, e in enumerate(dyn.epochs())})
    cols = ["id", "epoch", "p_gold", "pred", "correct", "gold"]
    pd.testing.assert_frame_equal(
        back.frame[cols].sort_values(["epoch", "id"]).reset_index(drop=True),
        train_rows[cols].sort_values(["epoch", "id"]).reset_index(drop=True),
        check_exact=False,
        rtol=1e-9,
    )
    # The statistics survive the trip (order of the recordings is kept).
    a = cartography_stats(dyn).set_index("id").sort_index()
    b = cartography_stats(back).set_index("id").sort_index()
    pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-9)


def test_export_recovers_gold_without_gold_column(small, tmp_path):
    train, _, dyn = small
    no_gold = TrainingDynamics(dyn.frame.drop(columns="gold"), dyn.label_names)
    no_gold.to_cartography_jsonl(tmp_path)
    back = TrainingDynamics.from_cartography_jsonl(tmp_path, train)  # checks gold vs labels
    assert len(back.ids()) == len(train)


def _hand_dataset() -> Dataset:
    frame = pd.DataFrame(
        {
            "id": ["101", "102", "103"],
            "premise": ["a cat sits", "a dog runs", "a man eats"],
            "hypothesis": ["an animal sits", "a cat runs", "a person is hungry"],
            "label": ["entailment", "contradiction", "neutral"],
        }
    )
    return Dataset.from_frame(frame, "nli", name="hand")


def test_hand_written_cartography_files(tmp_path):
    ds = _hand_dataset()
    gold = {str(i): int(k) for i, k in zip(ds.ids, ds.labels, strict=True)}
    folder = tmp_path / "training_dynamics"  # allenai/cartography's layout
    folder.mkdir()
    logits = {
        0: {"101": [2.0, 0.0, 0.0], "102": [0.0, 0.0, 1.0], "103": [1.0, 0.0, 0.0]},
        1: {"101": [3.0, 0.0, 0.0], "102": [0.0, 0.0, 2.0], "103": [0.0, 1.0, 0.0]},
    }
    for e, by_id in logits.items():
        # guids written as ints, as allenai/cartography writes them.
        lines = [
            json.dumps({"guid": int(i), f"logits_epoch_{e}": z, "gold": gold[i]})
            for i, z in by_id.items()
        ]
        (folder / f"dynamics_epoch_{e}.jsonl").write_text("\n".join(lines) + "\n")
    dyn = TrainingDynamics.from_cartography_jsonl(tmp_path, ds)
    assert dyn.epochs() == [1.0, 2.0]
    rows = dyn.frame.set_index(["id", "epoch"])
    e2 = np.exp(2.0)
    assert rows.loc[("101", 1.0), "p_gold"] == pytest.approx(e2 / (e2 + 2))
    assert rows.loc[("103", 1.0), "correct"] == False  # noqa: E712  (predicts entailment)
    assert rows.loc[("103", 2.0), "correct"] == True  # noqa: E712
    stats = cartography_stats(dyn).set_index("id")
    e1 = np.exp(1.0)
    p103 = [1 / (e1 + 2), e1 / (e1 + 2)]
    assert stats.loc["103", "confidence"] == pytest.approx(np.mean(p103))
    assert stats.loc["103", "correctness"] == 0.5 and stats.loc["102", "correctness"] == 1.0
    # Through load_dynamics too (the path='load' reader).
    assert load_dynamics(tmp_path, ds).epochs() == [1.0, 2.0]


def test_cartography_files_errors(tmp_path):
    ds = _hand_dataset()

    def write(e, recs):
        (tmp_path / f"dynamics_epoch_{e}.jsonl").write_text(
            "\n".join(json.dumps(r) for r in recs) + "\n"
        )

    with pytest.raises(DataFormatError, match="holds no dynamics_epoch"):
        TrainingDynamics.from_cartography_jsonl(tmp_path, ds)
    write(0, [{"guid": 999, "logits_epoch_0": [0, 0, 0], "gold": 0}])
    with pytest.raises(DataFormatError, match="guid '999' is not an id"):
        TrainingDynamics.from_cartography_jsonl(tmp_path, ds)
    write(0, [{"guid": 101, "logits_epoch_0": [0, 0, 0], "gold": 2}])
    with pytest.raises(DataFormatError, match="gold 2 of guid '101' differs"):
        TrainingDynamics.from_cartography_jsonl(tmp_path, ds)
    write(0, [{"guid": 101, "logits_epoch_0": [0, 0], "gold": 0}])
    with pytest.raises(DataFormatError, match="has 2 logits"):
        TrainingDynamics.from_cartography_jsonl(tmp_path, ds)
    write(0, [{"guid": 101, "logits": [0, 0, 0], "gold": 0}])
    with pytest.raises(DataFormatError, match="missing 'logits_epoch_0'"):
        TrainingDynamics.from_cartography_jsonl(tmp_path, ds)
    write(0, [{"guid": 101, "logits_epoch_0": [0, 0, 0], "gold": 0}])
    write(2, [{"guid": 101, "logits_epoch_2": [0, 0, 0], "gold": 0}])
    with pytest.raises(DataFormatError, match="lacks dynamics_epoch_1"):
        TrainingDynamics.from_cartography_jsonl(tmp_path, ds)
    write(1, [{"guid": 102, "logits_epoch_1": [0, 0, 0], "gold": 2}])
    with pytest.raises(DataFormatError, match="different guids"):
        TrainingDynamics.from_cartography_jsonl(tmp_path, ds)


def test_export_needs_logits(small, tmp_path):
    _, _, dyn = small
    bare = TrainingDynamics(dyn.frame.drop(columns="logits"), dyn.label_names)
    with pytest.raises(AnalysisError, match="needs logits"):
        bare.to_cartography_jsonl(tmp_path)


# ---------------------------------------------------------------------------------------
# The fast path
# ---------------------------------------------------------------------------------------
def _blobs(n=300, d=8, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    centers = rng.normal(size=(3, d)) * 2.0
    return (centers[y] + rng.normal(size=(n, d))).astype(np.float32), y


def test_probe_dynamics_records_every_example_every_epoch():
    X, y = _blobs()
    frame = probe_dynamics(X[:200], y[:200], X[200:], y[200:], epochs=4, random_state=0)
    counts = frame.groupby(["split", "epoch"]).size()
    assert set(counts.loc["train"]) == {200} and set(counts.loc["eval"]) == {100}
    assert sorted(frame["epoch"].unique()) == [1.0, 2.0, 3.0, 4.0]
    assert frame["p_gold"].between(0, 1).all()
    logits = np.stack(frame["logits"].to_numpy())
    assert logits.shape == (1200, 3)
    np.testing.assert_array_equal(logits.argmax(1), frame["pred"])
    np.testing.assert_array_equal(frame["correct"], frame["pred"] == frame["gold"])
    dyn = TrainingDynamics(frame, ["a", "b", "c"])
    assert dyn.accuracy("eval")[4.0] > 0.9  # separable blobs are learned


@pytest.mark.parametrize("model", ["mlp", "linear"])
def test_probe_dynamics_is_deterministic_and_leaves_global_rng(model):
    X, y = _blobs()
    torch_state = torch.random.get_rng_state().clone()
    np_state = np.random.get_state()[1].copy()  # noqa: NPY002  (checking it is untouched)
    threads = torch.get_num_threads()
    a = probe_dynamics(X, y, model=model, epochs=3, random_state=7)
    b = probe_dynamics(X, y, model=model, epochs=3, random_state=7)
    c = probe_dynamics(X, y, model=model, epochs=3, random_state=8)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["p_gold"], c["p_gold"])
    assert torch.equal(torch.random.get_rng_state(), torch_state)
    np.testing.assert_array_equal(np.random.get_state()[1], np_state)  # noqa: NPY002
    assert torch.get_num_threads() == threads


def test_eval_split_is_never_trained_on():
    X, y = _blobs(seed=2)
    y_eval = y[200:].copy()
    a = probe_dynamics(X[:200], y[:200], X[200:], y_eval, epochs=3)
    # Other gold labels for the evaluation rows change their p_gold, never the training.
    b = probe_dynamics(X[:200], y[:200], X[200:], (y_eval + 1) % 3, epochs=3)
    pd.testing.assert_frame_equal(a[a.split == "train"], b[b.split == "train"])
    np.testing.assert_allclose(
        np.stack(a[a.split == "eval"]["logits"]), np.stack(b[b.split == "eval"]["logits"])
    )


def test_probe_dynamics_options_and_errors():
    X, y = _blobs(n=100)
    frame = probe_dynamics(sparse.csr_matrix(X), y, epochs=2, records_per_epoch=3)
    assert sorted(frame["epoch"].unique()) == pytest.approx([1 / 3, 2 / 3, 1, 4 / 3, 5 / 3, 2])
    ids = [f"x{i}" for i in range(100)]
    frame = probe_dynamics(X, y, epochs=2, train_ids=ids, record_logits=False)
    assert "logits" not in frame and frame["id"].iloc[0] == "x0"
    with pytest.raises(ParameterError, match="'model' parameter"):
        probe_dynamics(X, y, model="forest")
    with pytest.raises(ParameterError, match=r"'epochs' parameter .* >= 1; got 0"):
        probe_dynamics(X, y, epochs=0)
    with pytest.raises(ParameterError, match="one label id per row \\(100\\)"):
        probe_dynamics(X, y[:50])
    with pytest.raises(ParameterError, match="both 'X_eval' and 'y_eval'"):
        probe_dynamics(X, y, X)
    with pytest.raises(ParameterError, match="NaN"):
        probe_dynamics(np.full((3, 2), np.nan), [0, 1, 0])


def test_probe_dynamics_does_not_change_the_callers_matrix():
    X, y = _blobs()
    before = X.copy()
    probe_dynamics(X, y, epochs=1)
    np.testing.assert_array_equal(X, before)


# ---------------------------------------------------------------------------------------
# The run-context artifact
# ---------------------------------------------------------------------------------------
def test_artifact_is_built_once_and_covers_both_splits(small):
    train, test, _ = small
    ctx = RunContext(train, test, progress=False)
    a = ctx.artifact("training_dynamics", features="bow", epochs=2)
    assert a is ctx.artifact("training_dynamics", features="bow", epochs=2)
    assert set(a.ids("train")) == set(train.ids) and set(a.ids("eval")) == set(test.ids)
    assert a.meta["path"] == "fast" and a.meta["model"] == "mlp" and a.meta["view"] == "full"
    h = ctx.artifact("training_dynamics", features="bow", epochs=2, view="hypothesis_only")
    assert h.meta["view"] == "hypothesis_only" and h is not a
    no_eval = RunContext(train, progress=False).artifact(
        "training_dynamics", features="bow", epochs=2
    )
    assert no_eval.splits() == ["train"]


def test_artifact_load_path(small, tmp_path):
    train, test, dyn = small
    dyn.save(tmp_path / "saved")
    ctx = RunContext(train, test, progress=False)
    loaded = ctx.artifact("training_dynamics", path="load", source=str(tmp_path / "saved"))
    pd.testing.assert_frame_equal(loaded.frame, dyn.frame)
    # Dynamics that miss the run's evaluation split are refused with the reason.
    dyn.to_cartography_jsonl(tmp_path / "jsonl")
    with pytest.raises(AnalysisError, match="no 'eval' split"):
        ctx.artifact("training_dynamics", path="load", source=str(tmp_path / "jsonl"))
    with pytest.raises(ParameterError, match="needs 'source'"):
        ctx.artifact("training_dynamics", path="load")
    with pytest.raises(ParameterError, match="Unknown fast-path training option"):
        ctx.artifact("training_dynamics", features="bow", momentum=0.9)
    with pytest.raises(ParameterError, match="'path' option"):
        ctx.artifact("training_dynamics", path="gpu")


def test_finetune_path_names_the_missing_engine(small, monkeypatch):
    train, test, _ = small
    # None in sys.modules makes the import fail as if the engine were not installed.
    monkeypatch.setitem(sys.modules, "spurious.models.finetune", None)
    ctx = RunContext(train, test, progress=False)
    with pytest.raises(AnalysisError, match=r"fine-tuning engine \(spurious.models.finetune"):
        ctx.artifact("training_dynamics", path="finetune", epochs=1)


def test_finetune_path_delegates(small, monkeypatch):
    """path='finetune' calls finetune_dynamics(ctx, view=..., **config) and checks its output."""
    train, test, dyn = small
    calls = []

    def fake(ctx, *, view, **config):
        calls.append((view, config))
        return dyn.frame  # a bare frame is wrapped

    import spurious.artifacts.finetune

    monkeypatch.setattr(spurious.artifacts.finetune, "finetune_dynamics", fake)
    ctx = RunContext(train, test, progress=False)
    out = ctx.artifact("training_dynamics", path="finetune", view="hypothesis_only", epochs=2)
    assert isinstance(out, TrainingDynamics) and out.meta["path"] == "finetune"
    assert calls == [("hypothesis_only", {"epochs": 2, "seed": 0})]


# ---------------------------------------------------------------------------------------
# Held-out (cross-fitted) dynamics
# ---------------------------------------------------------------------------------------
def test_stratified_folds_balance_labels_and_sizes():
    from spurious.models.dynamics import stratified_folds

    y = np.repeat([0, 1, 2], [10, 7, 4])
    folds = stratified_folds(y, 3, random_state=0)
    assert np.bincount(folds).tolist() == [7, 7, 7]
    for label in range(3):
        counts = np.bincount(folds[y == label], minlength=3)
        assert counts.max() - counts.min() <= 1
    assert (stratified_folds(y, 3, random_state=0) == folds).all()
    with pytest.raises(ParameterError, match="'n_folds' argument must be an int >= 2"):
        stratified_folds(y, 1)


def test_crossfit_records_each_example_with_the_model_of_the_other_folds():
    """Known answer: fold f's rows are exactly the evaluation records of a probe trained
    on the other folds with seed random_state + f."""
    from spurious.models.dynamics import crossfit_dynamics, stratified_folds

    X, y = _blobs(n=200)
    ids = [f"x{i}" for i in range(200)]
    frame = crossfit_dynamics(X, y, n_folds=2, ids=ids, epochs=3, random_state=4)
    assert set(frame["split"]) == {"train"}
    assert frame.groupby("epoch")["id"].apply(list).map(lambda v: v == ids).all()
    folds = stratified_folds(y, 2, random_state=4)
    held, fit = np.flatnonzero(folds == 1), np.flatnonzero(folds == 0)
    ref = probe_dynamics(
        X[fit], y[fit], X[held], y[held], epochs=3, n_classes=3, random_state=5,
        train_ids=[ids[i] for i in fit], eval_ids=[ids[i] for i in held],
    )  # fmt: skip
    ref = ref[ref["split"] == "eval"].set_index(["epoch", "id"])["p_gold"]
    got = frame[frame["fold"] == 1].set_index(["epoch", "id"])["p_gold"]
    np.testing.assert_allclose(got.loc[ref.index].to_numpy(), ref.to_numpy())


def test_crossfit_does_not_reward_memorisation():
    """Control: labels unrelated to the features. In-sample dynamics of a wide MLP climb
    (it memorises); held-out dynamics stay at chance, as they should."""
    from spurious.models.dynamics import crossfit_dynamics

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 20)).astype(np.float32)
    y = rng.integers(0, 3, 200)
    kw = {"epochs": 30, "hidden_size": 256, "lr": 1e-2, "random_state": 0}
    inside = probe_dynamics(X, y, **kw)
    held = crossfit_dynamics(X, y, n_folds=2, **kw)
    last_in = inside[inside["epoch"] == 30.0]["correct"].mean()
    last_held = held[held["epoch"] == 30.0]["correct"].mean()
    assert last_in > 0.8
    assert abs(last_held - 1 / 3) < 0.12
    assert held["p_gold"].mean() < inside["p_gold"].mean() - 0.2


def test_artifact_held_out_folds(small):
    train, test, _ = small
    ctx = RunContext(train, None, progress=False)
    dyn = ctx.artifact("training_dynamics", features="bow", epochs=2, held_out_folds=2)
    assert dyn.meta["held_out_folds"] == 2 and dyn.splits() == ["train"]
    assert sorted(dyn.ids("train")) == sorted(map(str, train.ids))
    with pytest.raises(ParameterError, match=r"'held_out_folds' option .* without an evaluation"):
        RunContext(train, test, progress=False).artifact(
            "training_dynamics", features="bow", epochs=2, held_out_folds=2
        )
    with pytest.raises(ParameterError, match=r"'held_out_folds' option .* path='fast'"):
        ctx.artifact("training_dynamics", path="load", source="x", held_out_folds=2)
