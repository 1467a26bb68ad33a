"""Issue 23 item 3: every long step says what it does, how far it is (n of N) and its rate,
on stderr, only when progress is on; with ``progress=False`` none of it is printed.

Each test runs one instrumented step on tiny data twice: with progress forced on (the bar's
text is captured from stderr) and with progress off (none of that text appears).
"""

from __future__ import annotations

import re
import time

import numpy as np
import pandas as pd
import pytest

from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.data.synthetic import make_nli_artifacts
from spurious.utils.progress import Phases, step_bar, ticking


def _bars(err: str) -> str:
    """Captured stderr as lines (tqdm redraws with carriage returns)."""
    return err.replace("\r", "\n")


@pytest.fixture(autouse=True)
def eager_bars(monkeypatch):
    """Every update is drawn: tqdm otherwise redraws at most every 0.1 s, so what a bar
    shows of a step this small would depend on the machine's speed."""
    from tqdm import std

    init = std.tqdm.__init__

    def eager(self, *args, **kwargs):
        init(self, *args, **{**kwargs, "mininterval": 0, "miniters": 1})

    monkeypatch.setattr(std.tqdm, "__init__", eager)


@pytest.fixture(scope="module")
def nli():
    return make_nli_artifacts(n=240, random_state=0).dataset


# -- the helpers ---------------------------------------------------------------------------
def test_phases_counts_the_replicates_of_the_current_step(capsys):
    with Phases("peco", ["k-means", "null"], enabled=True) as p:
        p.start("k-means")
        p.start("null")
        for i in range(10):
            p.advance(i + 1, 10, "perm")
    err = _bars(capsys.readouterr().err)
    assert "peco: 1/2 steps, now null" in err
    # the last replicate is always drawn, with its rate
    assert re.search(r"now null 10/10 perm \([0-9.]+k? perm/s\)", err)
    with Phases("peco", ["sweep"], enabled=True) as p:
        p.start("sweep")
        time.sleep(1.2)
        p.advance(1, 1, "cell")  # slower than one a second: seconds per cell
    assert re.search(r"now sweep 1/1 cell \([0-9.]+ s/cell\)", _bars(capsys.readouterr().err))
    with Phases("peco", ["k-means", "null"], enabled=False) as p:
        p.start("null")
        p.advance(10, 10, "perm")
    assert capsys.readouterr().err == ""


def test_step_bar_names_the_step_and_counts(capsys):
    with step_bar("fairness: adversary runs", 3, enabled=True, unit="run") as bar:
        bar.update(3)
    err = _bars(capsys.readouterr().err)
    assert "fairness: adversary runs" in err and "3/3" in err and "run/s" in err
    with step_bar("fairness: adversary runs", 3, enabled=False, unit="run") as bar:
        bar.update(3)
    assert capsys.readouterr().err == ""


def test_ticking_redraws_the_clock_of_a_one_call_step(capsys):
    with step_bar("peco: t-SNE map", 1, enabled=True, tick=None) as bar, ticking(bar, 0.02):
        time.sleep(0.5)  # one long call that releases the GIL: no update for a while
    drawn = _bars(capsys.readouterr().err).count("peco: t-SNE map")
    assert drawn >= 3  # the first draw, redraws while waiting, the clear at close
    with step_bar("peco: t-SNE map", 1, enabled=False) as bar, ticking(bar, interval=0.02):
        time.sleep(0.1)
    assert capsys.readouterr().err == ""


def test_a_step_bar_ticks_between_updates_and_stops_when_closed_or_dropped(capsys):
    import gc
    import threading

    def tickers() -> int:
        return sum(t.name == "spurious-progress" for t in threading.enumerate())

    with step_bar("fairness: adversary runs", 2, enabled=True, unit="run", tick=0.02) as bar:
        time.sleep(0.4)  # one slow run: the clock still moves
    assert _bars(capsys.readouterr().err).count("fairness: adversary runs") >= 3
    time.sleep(0.1)
    assert capsys.readouterr().err == ""  # nothing drawn after the line was cleared
    bar = step_bar("fairness: adversary runs", 2, enabled=True, tick=0.02)
    del bar  # abandoned (an error on the way): its thread does not draw it forever
    gc.collect()
    deadline = time.monotonic() + 3  # a closed bar's thread ends within one tick
    while tickers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert tickers() == 0
    capsys.readouterr()


# -- the steps -----------------------------------------------------------------------------
def test_peco_counts_null_and_bootstrap_replicates(capsys, nli):
    from spurious.detectors.peco import Peco

    for progress in (True, False):
        Peco(**Peco.fast_params).run(context=RunContext(nli, progress=progress))
        err = _bars(capsys.readouterr().err)
        if progress:
            assert "now shuffled-label null 20/20 perm" in err
            assert "now bootstrap 20/20 resample" in err
            assert "now pca map of 240 points" in err  # the 2-D map is a step of its own
        else:
            assert "peco" not in err and "perm" not in err


def test_aflite_shows_rounds_and_the_shuffled_label_check(capsys, nli):
    from spurious.detectors.aflite import AFLite

    for progress in (True, False):
        AFLite(**AFLite.fast_params).run(context=RunContext(nli, progress=progress))
        err = _bars(capsys.readouterr().err)
        if progress:
            assert "aflite: rounds" in err and "3/3" in err
            # n_shuffles=1: one shuffled fit of the representation, then the real and the
            # shuffled fit of each baseline view (premise-only, hypothesis-only)
            assert re.search(r"aflite: shuffled-label check: 100%.* 5/5 .*fit/s", err)
            assert "hypothesis_only input" in err  # which baseline is being fitted
        else:
            assert "aflite" not in err


def test_fairness_counts_adversary_runs(capsys, nli):
    from spurious.evaluate.fairness.adversaries import run_adversaries

    tr, ev = nli.split(0.3)
    params = {"n_partitions": 4, "train_size": 0.3, "max_rounds": 1}
    for progress in (True, False):
        run_adversaries(RunContext(tr, ev, progress=progress), ["bow"], [0, 1],
                        aflite_params=params)  # fmt: skip
        err = _bars(capsys.readouterr().err)
        if progress:
            assert "fairness: adversary runs" in err and "2/2" in err
            assert "bow seed 1" in err  # which run is on
        else:
            assert "fairness" not in err and "aflite" not in err


def test_fairness_on_qa_counts_adversary_seed_fold_runs(capsys):
    from spurious.evaluate.fairness.qa import run_qa_adversaries

    frame = pd.DataFrame({
        "question": [f"q{i}" for i in range(40)],
        "context": ["Ann saw Bob. Cy left."] * 40,
        "answers": [["Cy"] if i % 4 == 0 else ["Bob"] for i in range(40)],
        "title": [f"t{i % 5}" for i in range(40)],
    })  # fmt: skip
    ds = Dataset.from_frame(frame, "qa")
    params = {"n_partitions": 4, "train_size": 8, "max_rounds": 1}
    for progress in (True, False):
        runs, _ = run_qa_adversaries(ds, ["qa_position", "qa_lexical"], [0], aflite_params=params,
                                     progress=progress)  # fmt: skip
        assert len(runs) == 2
        err = _bars(capsys.readouterr().err)
        if progress:
            # 2 adversaries x 1 seed x 2 cross-fitted halves
            assert "fairness: QA adversary runs" in err and "4/4" in err
            assert "qa_lexical: features" in err and "qa_lexical seed 0 fold 2/2" in err
            assert "aflite: rounds" in err  # each run's rounds, below the line
        else:
            assert "fairness" not in err and "aflite" not in err


def test_fairness_on_multiple_choice_counts_runs(capsys):
    from spurious.data.synthetic_mcq import make_mcq_artifacts
    from spurious.evaluate.fairness.mcq import run_mc_adversaries

    s = make_mcq_artifacts(n=120, artifact="length", artifact_rate=0.5, random_state=0)
    params = {"n_partitions": 4, "train_size": 0.2, "slice_size": 0.05, "max_rounds": 1}
    for progress in (True, False):
        run_mc_adversaries(RunContext(s.dataset, progress=progress), ["lexical:choices_only"],
                           [0], aflite_params=params)  # fmt: skip
        err = _bars(capsys.readouterr().err)
        if progress:
            assert "fairness: option adversary runs" in err and "2/2" in err
            assert "aflite: rounds" in err
        else:
            assert "fairness" not in err and "aflite" not in err


def test_cartography_numbers_its_null_maps(capsys, nli):
    from spurious.detectors.cartography import Cartography

    params = {**Cartography.fast_params, "null_permutations": 2}
    for progress in (True, False):
        Cartography(**params).run(context=RunContext(nli, progress=progress))
        err = _bars(capsys.readouterr().err)
        if progress:
            for draw in (1, 2):
                assert f"cartography: null map {draw}/2 (full)" in err
                assert f"cartography: null map {draw}/2 (hypothesis_only)" in err
            assert "ex/s" in err
        else:
            assert "cartography" not in err and "ex/s" not in err


def test_minority_counts_the_rows_its_mlps_train_on(capsys):
    from spurious.detectors.minority.clustering import find_minority_examples

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 8))
    y = (X[:, 0] > 0).astype(int)
    for progress in (True, False):
        find_minority_examples(X, y, method="deepcluster", n_clusters=4, task_epochs=2,
                               epochs=1, progress=progress)  # fmt: skip
        err = _bars(capsys.readouterr().err)
        if progress:
            assert re.search(r"minority: task model: 100%.*600/600.*ex/s", err)
            assert re.search(r"minority: DeepCluster MLP: 100%.*300/300.*ex/s", err)
            assert "minority: ward into 4 clusters" in err
        else:
            assert "minority" not in err


def test_the_report_line_says_it_is_rendering(capsys, tmp_path, nli):
    import spurious

    analyses = {"atlas": {}}
    for progress, out in ((True, tmp_path / "on"), (False, tmp_path / "off")):
        run = spurious.run(nli, analyses=analyses, out=out, progress=progress)
        assert run.report is not None and run.report.is_file()
        err = _bars(capsys.readouterr().err)
        if progress:
            assert "report: 0/1 steps, now rendering report.html" in err
        else:
            assert "report:" not in err


def test_cartography_numbers_its_null_maps_on_multiple_choice(capsys):
    from spurious.data.synthetic_mcq import make_mcq_artifacts
    from spurious.detectors.cartography import Cartography

    s = make_mcq_artifacts(n=160, artifact="length", artifact_rate=0.5, random_state=0)
    params = {**Cartography.fast_params, "features": "lexical", "null_permutations": 1}
    for progress in (True, False):
        Cartography(**params).run(context=RunContext(s.dataset, progress=progress))
        err = _bars(capsys.readouterr().err)
        if progress:
            assert re.search(r"cartography: null map 1/1 \(\w+\)", err)
        else:
            assert "cartography" not in err


def test_partial_input_says_which_fold_runs(capsys, nli):
    from spurious.detectors import PartialInput

    for progress in (True, False):
        PartialInput(features="bow", n_folds=3, n_resamples=20).run(
            context=RunContext(nli, progress=progress)
        )
        err = _bars(capsys.readouterr().err)
        if progress:
            n = len(PartialInput()._views(nli))  # conditions per fold
            assert re.search(rf"partial_input: fold x condition: .* 0/{3 * n} .*fold 1/3", err)
            assert f"{3 * n}/{3 * n}" in err and "fit/s" in err
        else:
            assert "partial_input" not in err


def test_prediction_bias_counts_its_threshold_searches(capsys):
    from spurious.data.predictions import align_predictions
    from spurious.evaluate.prediction_bias import bias_table

    n = 2000
    ds = Dataset.from_frame(pd.DataFrame({
        "id": [str(i) for i in range(n)], "question": ["q"] * n, "context": ["c"] * n,
        "answers": [["yes", "yes"]] * n,
    }), "qa")  # fmt: skip
    attr = pd.DataFrame({"id": ds.ids, "length": np.arange(n) % 10})
    # right on long inputs only: a bias on 'length', so the permutation test runs
    model = align_predictions({str(i): "yes" if i % 10 >= 5 else "no" for i in range(n)}, ds,
                              name="m")  # fmt: skip
    for progress in (True, False):
        res = bias_table(ds, [model], attr, n_trials=20, sample_size=200, n_permutations=4,
                         progress=progress)  # fmt: skip
        assert res.metrics["bias/m/length"] > 0.5
        err = _bars(capsys.readouterr().err)
        if progress:
            assert re.search(r"prediction_bias: threshold search: .* 0/5 .*length", err)
            assert "permutation null" in err and "5/5" in err
        else:
            assert "prediction_bias" not in err
