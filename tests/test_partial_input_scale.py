"""partial_input at scale: count bootstrap, tokenise-once lexical folds, folds once, executors.

Each shortcut is checked against the computation it replaces: the count bootstrap
against ``scipy.stats.bootstrap`` (same intervals up to Monte-Carlo error), the per-fold
lexical features and the out-of-fold probabilities against refitting the featurizer on
every fold (equal to the bit), Ray against the local executor (same result).
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.model_selection import StratifiedGroupKFold

from spurious.context import RunContext
from spurious.data import Dataset
from spurious.data.synthetic import make_nli_artifacts
from spurious.detectors import PartialInput
from spurious.detectors.partial_input import _fit_predict, assign_folds, stratified_group_folds
from spurious.exceptions import FeatureError
from spurious.execution import LocalExecutor, RayExecutor
from spurious.features import LexicalFeaturizer, make_featurizer
from spurious.stats.bootstrap import bootstrap_of_means, safe_ratio
from spurious.views import get_view, standard_views


# -- the count bootstrap ----------------------------------------------------------------
def _paired_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    full = np.where(rng.random(n) < 0.75, y, rng.integers(0, 3, n))
    hyp = np.where(rng.random(n) < 0.55, y, rng.integers(0, 3, n))
    agree = (hyp == full).astype(float)
    return agree, agree * (hyp == y)


@pytest.mark.parametrize("n", [60, 400])
def test_count_bootstrap_matches_scipy_within_monte_carlo_error(n):
    agree, agree_correct = _paired_data(n, seed=n)
    B = 20_000
    cases = [
        # (statistic of means, the same statistic over resampled examples, arrays)
        (lambda a: a, lambda a, axis=-1: a.mean(axis=axis), [agree]),
        (
            lambda a, ac: safe_ratio(ac, a),
            lambda a, ac, axis=-1: safe_ratio(ac.mean(axis=axis), a.mean(axis=axis)),
            [agree, agree_correct],
        ),
        (
            lambda a, ac: a - ac,
            lambda a, ac, axis=-1: a.mean(axis=axis) - ac.mean(axis=axis),
            [agree, agree_correct],
        ),
    ]
    for of_means, of_examples, arrays in cases:
        est, lo, hi = bootstrap_of_means(of_means, arrays, n_resamples=B, random_state=0)
        ref = stats.bootstrap(
            arrays, of_examples, n_resamples=B, paired=True, vectorized=True,
            method="percentile", rng=np.random.default_rng(0),
        )  # fmt: skip
        assert est == pytest.approx(float(of_examples(*arrays)))
        # Monte-Carlo sd of a 2.5% quantile with B = 20,000 is ~ 0.0015 / (density x sd)
        # of the statistic; 0.35 standard errors of the statistic is > 5 such sds.
        se = np.std(ref.bootstrap_distribution)
        assert abs(lo - ref.confidence_interval.low) < 0.35 * se + 1 / n
        assert abs(hi - ref.confidence_interval.high) < 0.35 * se + 1 / n
        # And the whole distribution, not just the two quantiles.
        theta = _count_distribution(of_means, arrays, B)
        assert stats.ks_2samp(theta, ref.bootstrap_distribution).pvalue > 1e-3


def _count_distribution(of_means, arrays, B):
    # The count bootstrap's draws, via its own building blocks, for the KS comparison.
    codes = arrays[0] * 2 + (arrays[1] if len(arrays) > 1 else 0)
    _, first, counts = np.unique(codes, return_index=True, return_counts=True)
    values = np.stack([a[first] for a in arrays], axis=1)
    draws = np.random.default_rng(1).multinomial(len(codes), counts / len(codes), size=B)
    means = draws @ values / len(codes)
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = np.asarray(of_means(*means.T), dtype=float)
    return theta[np.isfinite(theta)]


def test_count_bootstrap_is_seeded_fast_and_nan_when_undefined():
    agree, agree_correct = _paired_data(1_000_000, seed=1)
    fn = lambda a, ac: safe_ratio(ac, a)  # noqa: E731
    a = bootstrap_of_means(fn, [agree, agree_correct], n_resamples=1000, random_state=3)
    b = bootstrap_of_means(fn, [agree, agree_correct], n_resamples=1000, random_state=3)
    assert a == b and a[1] < a[0] < a[2]
    assert a[2] - a[1] < 0.01  # a million examples: a tight interval
    # A ratio whose denominator can be resampled to 0 has no interval.
    tiny = np.array([1.0, 0.0, 0.0, 0.0])
    est, lo, hi = bootstrap_of_means(fn, [tiny, tiny], n_resamples=200, random_state=0)
    assert est == 1.0 and np.isnan(lo) and np.isnan(hi)
    with pytest.raises(ValueError, match="equal length"):
        bootstrap_of_means(fn, [tiny, tiny[:2]])


def test_count_bootstrap_of_continuous_data_resamples_examples():
    x = np.random.default_rng(0).normal(size=5000)  # every value distinct
    est, lo, hi = bootstrap_of_means(lambda m: m, [x], n_resamples=300, random_state=0)
    assert lo < est < hi and hi - lo == pytest.approx(2 * 1.96 / np.sqrt(5000), rel=0.25)


# -- lexical features per fold from one tokenisation ------------------------------------
def _texts_dataset(n: int, seed: int) -> Dataset:
    # Few distinct words so that min_df and max_features ties matter.
    rng = np.random.default_rng(seed)
    words = np.array(["a", "an", "the", "dog", "cat", "man", "woman", "runs", "sits", "not"])
    sent = lambda k: " ".join(rng.choice(words, k))  # noqa: E731
    frame = pd.DataFrame(
        {
            "premise": [sent(rng.integers(3, 9)) for _ in range(n)],
            "hypothesis": [sent(rng.integers(1, 6)) for _ in range(n)],
            "label": rng.choice(["entailment", "neutral", "contradiction"], n),
        }
    )
    return Dataset.from_frame(frame, "nli")


@pytest.mark.parametrize(
    "params",
    [
        {"weighting": "tfidf"},
        {"weighting": "binary", "ngram_max": 1},
        {"weighting": "count", "min_df": 3},
        {"weighting": "tfidf", "max_features": 25},  # ties in the frequency ranking
        {"weighting": "binary", "max_features": 7, "ngram_max": 3, "cross_features": False},
    ],
)
def test_fold_features_equal_refitting_on_the_training_rows(params):
    data = _texts_dataset(500, seed=len(params))
    feat = LexicalFeaturizer(**params)
    train_rows = np.sort(np.random.default_rng(0).choice(500, 380, replace=False))
    for name in ("full", "premise_only", "hypothesis_only"):
        view = get_view(data.task, name)
        blocks = {b: feat.count_block(data, b) for b in feat.block_names(view)}
        fast = feat.fit_rows(blocks, view, train_rows)
        ref = clone(feat).fit(data.subset(train_rows), view).transform(data, view)
        assert fast.shape == ref.shape
        np.testing.assert_array_equal(fast.indptr, ref.indptr)
        np.testing.assert_array_equal(fast.indices, ref.indices)
        np.testing.assert_array_equal(fast.data, ref.data)  # to the bit


@pytest.mark.parametrize("min_df", [30, 1000])
def test_fold_features_refuse_an_empty_vocabulary_like_fit(min_df):
    data = _texts_dataset(40, seed=0)
    feat = LexicalFeaturizer(min_df=min_df)
    counts = feat.count_block(data, "hypothesis")
    with pytest.raises(FeatureError) as fast:
        feat.block_features(counts, np.arange(30))
    with pytest.raises(FeatureError) as ref:
        clone(feat).fit(data.subset(np.arange(30)), "hypothesis_only")
    assert str(fast.value) == str(ref.value)


# -- the detector: same out-of-fold probabilities as refitting per condition -------------
def _legacy_oof(
    data: Dataset, features: str, n_folds: int, seed: int, probe: str
) -> dict[str, np.ndarray]:
    """The computation before this change: folds per condition, featurizer refit per fold."""
    views = [v for v in standard_views(data.task).values()]
    y, groups = data.labels, data.group_keys("auto")
    out = {}
    for view in views:
        folds = StratifiedGroupKFold(n_folds, shuffle=True, random_state=seed).split(
            np.zeros(len(y)), y, groups=groups
        )
        proba = np.zeros((len(data), data.n_classes))
        for tr, te in folds:
            feat = clone(make_featurizer(features))
            a, b = data.subset(tr), data.subset(te)
            proba[te] = _fit_predict(
                probe, seed, feat.fit_transform(a, view), a.labels,
                feat.transform(b, view), data.n_classes,
            )  # fmt: skip
        out[view.name] = proba[np.arange(len(data)), y]
    return out


@pytest.fixture(scope="module")
def grouped():
    # Premise groups (several hypotheses per premise) so StratifiedGroupKFold is used.
    data = make_nli_artifacts(n=450, artifact_rate=0.8, random_state=4).dataset
    assert len(set(data.group_keys("auto"))) < len(data)
    return data


# The default probe once; scikit-learn's (faster on tiny data) for the other case.
@pytest.mark.parametrize(
    ("features", "probe"), [("tfidf", "logistic"), ("bow", "sklearn-logistic")]
)
def test_cross_fit_equals_refitting_per_condition(grouped, features, probe):
    res = PartialInput(features=features, probe=probe, n_folds=3, n_resamples=50).run(grouped)
    legacy = _legacy_oof(grouped, features, 3, 0, probe)
    for view, p_gold in legacy.items():
        np.testing.assert_array_equal(res.scores[f"p_gold_{view}"].to_numpy(), p_gold)


def test_any_other_featurizer_is_refit_per_fold_with_the_same_result(grouped):
    class Refit(LexicalFeaturizer):  # not the tokenise-once path: refit per fold
        pass

    kw = dict(probe="sklearn-logistic", n_folds=3, n_resamples=50)
    fast = PartialInput(**kw).run(grouped)
    slow = PartialInput(features=Refit(), **kw).run(grouped)
    pd.testing.assert_frame_equal(fast.scores, slow.scores)
    assert fast.metrics == slow.metrics


def test_folds_and_token_counts_are_built_once_per_run(grouped, caplog):
    ctx = RunContext(grouped, progress=False)
    with caplog.at_level(logging.INFO, logger="spurious.detectors.partial_input"):
        kw = dict(probe="sklearn-logistic", n_folds=3, n_resamples=50)
        PartialInput(**kw).run(context=ctx)
        PartialInput(features="bow", **kw).run(context=ctx)
    built = list(ctx.timings)
    assert sum(k.startswith("cv_folds:") for k in built) == 1  # both analyses, every view
    # premise, hypothesis, hypothesis-not-in-premise for tf-idf (n-grams to 2) and bow (1).
    assert sum(k.startswith("lexical_counts:") for k in built) == 6
    done = [r.getMessage() for r in caplog.records if " done " in r.getMessage()]
    assert len(done) == 6  # progress per fold, for each analysis
    assert all(f"fold {k}/3 done" in m for k, m in zip((1, 2, 3), done, strict=False))
    folds = assign_folds(grouped, 3, "auto", 0)
    for k in range(3):  # groups never straddle folds
        inside = set(grouped.group_keys("auto")[folds == k])
        assert inside.isdisjoint(grouped.group_keys("auto")[folds != k])


def _sklearn_folds(y, groups, n_folds, seed):
    fold_of = np.empty(len(y), dtype=np.int64)
    splitter = StratifiedGroupKFold(n_folds, shuffle=True, random_state=seed)
    for k, (_, test) in enumerate(splitter.split(np.zeros(len(y)), y, groups=groups)):
        fold_of[test] = k
    return fold_of


@pytest.mark.filterwarnings("ignore:The least populated class")
def test_group_folds_are_scikit_learns_to_the_row():
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(80):
        n_groups, n_classes = int(rng.integers(10, 300)), int(rng.integers(2, 6))
        groups = np.repeat(np.arange(n_groups), rng.integers(1, 6, n_groups))
        y = rng.choice(n_classes, len(groups), p=rng.dirichlet(np.ones(n_classes)))
        n_folds, seed = int(rng.integers(2, 8)), int(rng.integers(0, 1000))
        if np.bincount(y).max() < n_folds or n_groups < n_folds:
            continue
        ref = _sklearn_folds(y, groups, n_folds, seed)
        np.testing.assert_array_equal(stratified_group_folds(y, groups, n_folds, seed), ref)
        checked += 1
    assert checked > 60
    # Many folds or classes go through scikit-learn itself; its errors too.
    y, groups = np.arange(40) % 9, np.arange(40) // 2
    np.testing.assert_array_equal(
        stratified_group_folds(y, groups, 3, 1), _sklearn_folds(y, groups, 3, 1)
    )
    with pytest.raises(ValueError, match="number of groups"):
        stratified_group_folds(np.arange(6) % 2, np.array([0, 0, 0, 1, 1, 1]), 3, 0)


def test_executor_parameter_round_trips_and_is_validated():
    pi = PartialInput(executor=RayExecutor(num_cpus=2))
    cfg = pi.to_config()
    assert cfg["executor"] == {"kind": "ray", "options": {"num_cpus": 2}}
    back = PartialInput.from_config(cfg)
    assert isinstance(back.executor, RayExecutor) and back.executor.num_cpus == 2
    assert PartialInput(executor=LocalExecutor()).to_config()["executor"] == "local"
    with pytest.raises(Exception, match="'executor' parameter"):
        PartialInput(executor="dask").validate_params()


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield ray
    if started:
        ray.shutdown()


@pytest.mark.parametrize("features", ["tfidf", "minilm"])
def test_ray_executor_gives_the_local_result(ray_cluster, grouped, features, tmp_path, monkeypatch):
    monkeypatch.setenv("SPURIOUS_CACHE_DIR", str(tmp_path / "cache"))
    kw = dict(features=features, n_folds=3, n_resamples=50)
    local = PartialInput(**kw).run(grouped)
    ex = RayExecutor()
    remote = PartialInput(**kw, executor=ex).run(grouped)
    if features == "tfidf":
        pd.testing.assert_frame_equal(local.scores, remote.scores)
        assert local.metrics == remote.metrics
    else:
        # Dense products sum in an order that depends on the BLAS thread count, which
        # Ray sets to a task's CPUs (1 here): equal up to float rounding.
        pd.testing.assert_frame_equal(local.scores, remote.scores, rtol=1e-3)
        preds = [c for c in local.scores if c.startswith("pred_")]
        pd.testing.assert_frame_equal(local.scores[preds], remote.scores[preds])
    ex.close()  # the caller's cluster is left running
    assert ray_cluster.is_initialized()


def test_fits_side_by_side_give_the_numbers_of_one_after_another(grouped, tmp_path, monkeypatch):
    """Dense (stateless) features: the fold x condition fits run on one worker thread per
    core when their row copies fit in memory together; every fit is single-threaded
    either way, so the results are equal, not merely close."""
    from spurious.detectors.partial_input import crossfit
    from spurious.execution import executor as executor_module

    monkeypatch.setenv("SPURIOUS_CACHE_DIR", str(tmp_path / "cache"))
    kw = dict(features="minilm", n_folds=3, n_resamples=50)
    runs = {}
    for cores in (1, 4):  # 4 worker threads even on a 2-core machine
        monkeypatch.setattr(executor_module, "available_cores", lambda n=cores: n)
        inputs = crossfit._CrossFitInputs(
            None, np.zeros(3), np.zeros(3), 2, "logistic", 0, matrices={"full": np.ones(3)}
        )
        assert crossfit.side_by_side(LocalExecutor(), inputs, 3) == cores
        runs[cores] = PartialInput(**kw).run(grouped)
    pd.testing.assert_frame_equal(runs[1].scores, runs[4].scores)
    assert runs[1].metrics == runs[4].metrics
    # Above the memory bound fold-by-fold fits (any probe but the default) run one
    # after another; the default probe's joint fits copy no rows of a dense matrix.
    monkeypatch.setattr(crossfit, "SIDE_BY_SIDE_BYTES", 0)
    for probe, expected in [("sklearn-logistic", 1), ("logistic", 4)]:
        inputs = crossfit._CrossFitInputs(
            None, np.zeros(10), np.zeros(10), 2, probe, 0, matrices={"full": np.ones((10, 4))}
        )
        assert crossfit.side_by_side(LocalExecutor(), inputs, 3) == expected


def test_joint_condition_fit_matches_fold_by_fold_and_falls_back_on_a_missing_class():
    """The default probe on a stateless matrix fits a condition's folds together; its
    out-of-fold probabilities are the fold-by-fold fits' up to the solver tolerance, and
    a fold whose training rows miss a class is fitted on its own (that class gets 0)."""
    from spurious.detectors.partial_input import crossfit

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 12)).astype(np.float32)
    y = np.argmax(X[:, :3] + rng.gumbel(size=(600, 3)), axis=1)
    fold_of = np.arange(600) % 3
    view = get_view("nli", "hypothesis_only")
    for labels in (y, np.where((y == 2) & (fold_of != 0), 1, y)):  # then: class 2 in fold 0 only
        inputs = crossfit._CrossFitInputs(
            None, labels, fold_of, 3, "logistic", 0, matrices={view.name: X}
        )
        assert crossfit.joint(inputs)
        joint = crossfit._fit_view(view, inputs)
        by_fold = np.zeros_like(joint)
        for k in range(3):
            by_fold[fold_of == k] = crossfit._fit_fold((view, k), inputs)
        assert np.abs(joint - by_fold).max() < 2e-3
    assert np.all(joint[fold_of == 0][:, 2] == 0)  # fold 0's probe never saw class 2
