"""The run context: the inputs of one run, and shared inputs built once for every analysis.

A :class:`RunContext` holds the datasets of a run (the data, an optional evaluation
split), what the user supplied besides (model predictions, heuristic attributes,
annotations) and a memo of *artifacts*: feature matrices, heuristic values, and later
trained models, training dynamics and hidden states. An analysis asks for an artifact by
kind and configuration::

    X = ctx.artifact("features", features="minilm", view="hypothesis_only", split="eval")

The first request builds it with the provider registered for the kind (the built-in
providers live in :mod:`spurious.artifacts`; plugins add kinds with
:func:`register_artifact`); every later request with the same configuration, from any
analysis of the run, gets the same object. Providers build on the on-disk caches
(encoder features, heuristics), so a re-run reuses them too. The keys include the
fingerprints of the datasets involved, never object identities.

Models trained on the task are artifacts too: ``ctx.artifact("trained_model",
view="hypothesis_only", epochs=3)`` fine-tunes once per run (and once per data and
config on disk), ``ctx.artifact("hidden_states", view=..., split=...)`` reads its
representations, and ``ctx.artifact("training_dynamics", ...)`` its per-epoch
predictions.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from spurious.artifacts import BUILTIN, builtin_provider
from spurious.exceptions import AnalysisError, ParameterError
from spurious.utils.hashing import stable_hash
from spurious.utils.memory import PeakMeter
from spurious.utils.progress import default_progress
from spurious.utils.registry import Registry

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from spurious.artifacts.protocol import ArtifactContext
    from spurious.data.dataset import Dataset
    from spurious.data.predictions import PredictionSet
    from spurious.results import Result

logger = logging.getLogger(__name__)

#: kind -> provider ``f(ctx, **config) -> artifact``: the built-in providers of
#: :mod:`spurious.artifacts` (registered here, explicitly, so the kinds never depend on
#: import order) and those of plugins (:func:`register_artifact`).
ARTIFACTS: Registry[Callable[..., Any]] = Registry("artifact kind")
for _kind in BUILTIN:
    ARTIFACTS.register(_kind, builtin_provider(_kind))


def register_artifact(kind: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering the provider that builds artifacts of ``kind``.

    Examples
    --------
    >>> @register_artifact("doc_example_lengths")
    ... def _lengths(ctx, *, split="train"):
    ...     return [len(t) for t in ctx.split(split).frame["hypothesis"]]
    >>> ARTIFACTS.unregister("doc_example_lengths")
    """
    return ARTIFACTS.decorator(kind)


class RunContext:
    """Inputs of one run and the artifacts built from them, shared by every analysis.

    Parameters
    ----------
    train : Dataset
        The data (the training split when there are two).
    eval : Dataset, optional
        A held-out evaluation split.
    predictions : sequence of PredictionSet, optional
        Model predictions aligned to :attr:`target` (the evaluation split, else the data).
    attributes : pandas.DataFrame, optional
        Precomputed heuristic values (``id`` + one column per heuristic) for :attr:`target`.
    heuristics_train : Dataset, optional
        The split that statistics-based heuristics (e.g. ``max_word_label_pmi``) are
        fitted on; default: the data when an evaluation split is given, else none.
    progress : bool, optional
        Show progress bars (``None``: when a person watches, see :func:`default_progress`).

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> train, test = make_nli_artifacts(n=300, random_state=0).dataset.split(0.3)
    >>> ctx = RunContext(train, test, progress=False)
    >>> X = ctx.features("bow", "hypothesis_only", split="eval")
    >>> X is ctx.features("bow", "hypothesis_only", split="eval")  # built once
    True
    """

    def __init__(
        self,
        train: Dataset,
        eval: Dataset | None = None,
        *,
        predictions: Sequence[PredictionSet] = (),
        attributes: pd.DataFrame | None = None,
        heuristics_train: Dataset | None = None,
        progress: bool | None = None,
    ) -> None:
        from spurious.data.dataset import Dataset

        for what, ds in (("train", train), ("eval", eval)):
            if ds is not None and not isinstance(ds, Dataset):
                raise AnalysisError(
                    f"RunContext expects a spurious Dataset as {what!r}; got "
                    f"{type(ds).__name__}. Load data with spurious.load_dataset()."
                )
        if eval is not None:
            _check_compatible(train, eval)
        self.train = train
        self.eval = eval
        self.predictions = list(predictions)
        self.attributes = attributes
        self.heuristics_train = heuristics_train
        self.progress = default_progress() if progress is None else bool(progress)
        self._memo: dict[str, Any] = {}
        #: Seconds spent building each artifact (key -> s), for the manifest.
        self.timings: dict[str, float] = {}
        #: Keys of :attr:`timings` built while another artifact was being built (their
        #: time is inside the outer one's: summing only the others counts it once).
        self.nested_timings: set[str] = set()
        #: CPU seconds and peak RSS (``SPURIOUS_PEAK_RSS=1``) of each artifact and, from
        #: the runner, each analysis: key -> {"cpu_s": ..., "peak_rss_gib": ...}.
        self.resources: dict[str, dict[str, float]] = {}
        self.meter = PeakMeter()
        self._building = 0
        #: What a person should know about the inputs (rows dropped, overlaps), for the
        #: manifest and the report.
        self.warnings: list[str] = []
        #: Results of the analyses already run on this context, by name, in run order:
        #: an analysis may use an earlier one's output (PECO compares its biased regions
        #: with cartography's confidence when both run).
        self.results: dict[str, Result] = {}

    # -- the datasets ------------------------------------------------------------------
    @property
    def target(self) -> Dataset:
        """The split being judged: the evaluation split when given, else the data."""
        return self.eval if self.eval is not None else self.train

    def split(self, name: str) -> Dataset:
        """``"train"``, ``"eval"`` or ``"target"`` as a dataset (clear error if absent)."""
        if name == "train":
            return self.train
        if name == "target":
            return self.target
        if name == "eval":
            if self.eval is None:
                raise AnalysisError("This run has no evaluation split (pass --eval).")
            return self.eval
        raise ParameterError(f"Unknown split {name!r}; expected 'train', 'eval' or 'target'.")

    @property
    def has_predictions(self) -> bool:
        """Whether model predictions were supplied."""
        return bool(self.predictions)

    @property
    def has_annotations(self) -> bool:
        """Whether the judged split carries several annotations per example."""
        t = self.target
        if t.task.name == "qa":
            answers = t.frame.get("answers")
            return answers is not None and bool(answers.map(len).gt(1).any())
        col = t.frame.get("annotator_labels")
        return col is not None and bool(col.notna().any())

    def can_compute_heuristics(self) -> bool:
        """Whether heuristic values of :attr:`target` can be had: supplied ``attributes``,
        or at least one registered heuristic for the task."""
        if self.attributes is not None and len(self.attributes.columns) > 1:
            return True
        from spurious.heuristics import list_heuristics

        return bool(list_heuristics(self.target.task.name))

    def can_build(self, kind: str) -> bool:
        """Whether a provider for artifacts of ``kind`` is registered."""
        return kind in ARTIFACTS

    def fingerprints(self) -> dict[str, str]:
        """``{"train": ..., "eval": ...}`` fingerprints of the run's datasets."""
        out = {"train": self.train.fingerprint}
        if self.eval is not None:
            out["eval"] = self.eval.fingerprint
        return out

    # -- artifacts ---------------------------------------------------------------------
    def artifact(self, kind: str, **config: Any) -> Any:
        """The artifact of ``kind`` with ``config``, built on first request and then shared.

        ``config`` must be plain data (it becomes the memo key, together with the
        datasets' fingerprints).
        """
        provider = ARTIFACTS.get(kind)
        key = self._artifact_key(kind, config)
        if key not in self._memo:
            # Providers are typed against the protocol (they cannot import this module):
            # the annotation makes mypy check that the context satisfies it.
            ctx: ArtifactContext = self
            start = time.perf_counter()
            self._building += 1
            try:
                with self.meter.span() as used:
                    self._memo[key] = provider(ctx, **config)
            finally:
                self._building -= 1
            name = f"{kind}:{_describe(config)}"
            self.resources[name] = used
            self.timings[name] = round(time.perf_counter() - start, 4)
            if self._building:
                self.nested_timings.add(name)
        return self._memo[key]

    def built(self, kind: str, **config: Any) -> Any:
        """The artifact of ``kind`` with ``config`` if it was built already, else ``None``
        (never builds it): for a provider that can derive its artifact from another
        one more cheaply than building it, e.g. a one-field view's sentence embeddings
        as columns of the two-field view's matrix (``spurious.artifacts.features``).

        Examples
        --------
        >>> from spurious.data.synthetic import make_nli_artifacts
        >>> ctx = RunContext(make_nli_artifacts(n=40, random_state=0).dataset)
        >>> ctx.built("heuristics", names=["hypothesis_length"], params={}) is None
        True
        """
        return self._memo.get(self._artifact_key(kind, config))

    def _artifact_key(self, kind: str, config: dict[str, Any]) -> str:
        return f"{kind}:{stable_hash({'config': config, 'data': self.fingerprints()})}"

    def features(self, features: Any, view: str, *, split: str = "train") -> Any:
        """Feature matrix of ``split`` seen through ``view``.

        The featurizer is fitted on the data (the training split) once per
        ``(features, view)`` and applied to every split, exactly as a single analysis
        would; the matrices are shared between analyses, so an analysis must copy a
        matrix before changing it.

        Parameters
        ----------
        features : str or Featurizer
            A featurizer spec (see :func:`spurious.features.make_featurizer`).
        view : str
            A view name of the task (``"full"``, ``"hypothesis_only"`` ...).
        split : {"train", "eval"}
        """
        from spurious.features import make_featurizer

        featurizer = make_featurizer(features)
        key = _featurizer_key(featurizer, features)
        self._featurizers.setdefault(key, featurizer)
        return self.artifact("features", featurizer=key, view=view, split=split)

    def heuristics(
        self, names: Sequence[str], params: dict[str, dict[str, Any]] | None = None
    ) -> pd.DataFrame:
        """Heuristic attributes of :attr:`target`: ``id`` + one column per name.

        Supplied ``attributes`` are used when they hold the names; otherwise the values
        are computed (and cached on disk by the heuristics package). ``params`` configures
        heuristics by name (e.g. ``{"answer_length": {"aggregate": "mean"}}``).
        """
        return self.artifact("heuristics", names=list(names), params=dict(params or {}))

    def registered_featurizer(self, key: str) -> Any:
        """The featurizer object :meth:`features` registered under ``key`` (an object a
        caller passed, under its key), or ``None`` for a plain spec such as ``"tfidf"``
        that the ``fitted_featurizer`` provider makes itself."""
        return self._featurizers.get(key)

    # -- internals ---------------------------------------------------------------------
    @property
    def _featurizers(self) -> dict[str, Any]:
        featurizers: dict[str, Any] = self._memo.setdefault("__featurizers__", {})
        return featurizers


def _describe(config: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in config.items() if not isinstance(v, dict | list))


def _featurizer_key(featurizer: Any, spec: Any) -> str:
    # A short name or a config digest: plain data for the memo key.
    return spec if isinstance(spec, str) else "config:" + stable_hash(featurizer.config())


def _check_compatible(train: Dataset, eval: Dataset) -> None:
    if eval.task.name != train.task.name:
        raise AnalysisError(
            f"'eval_dataset' has task {eval.task.name!r} but 'dataset' has {train.task.name!r}."
        )
    if train.task.has_labels and eval.label_names != train.label_names:
        raise AnalysisError(
            f"'eval_dataset' label names {list(eval.label_names)} differ from 'dataset' label "
            f"names {list(train.label_names)}; pass label_names= when loading so both use the "
            "same ids."
        )
