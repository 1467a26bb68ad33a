"""The analysis contract: one base for everything that produces a :class:`~spurious.results.Result`.

An *analysis* is a detector (per-example scores and dataset metrics from the data alone:
``partial_input``, ``aflite``) or a model-facing evaluation (``prediction_bias`` of
a model's predictions). Every analysis

- stores its keyword arguments in ``__init__`` and declares ``_parameter_constraints``
  (checked once, at the public boundary, with one message format);
- declares what it needs as a typed :class:`Requirements` (labels, an evaluation split,
  predictions, heuristics, a trained model, training dynamics ...), so ``spurious audit``
  can tell which analyses the inputs allow and say why the others were skipped;
- gets every input through a :class:`~spurious.context.RunContext`, which builds shared
  inputs (features, heuristics, predictions, later trained models and dynamics) once and
  hands the same object to every analysis of a run;
- declares ``fast_params`` (used by the conformance suite and CI) and ``profiles``
  (``spurious audit --quick``) on the class, so no side table needs editing;
- is registered in :data:`ANALYSES` with :func:`register_analysis`. Built-in analyses
  are the modules of :mod:`spurious.detectors` and :mod:`spurious.evaluate`, imported by
  :func:`load_analyses`; third-party packages add theirs through the entry-point group
  ``spurious.analyses``.

Adding an analysis is writing one module (and optionally a report section module); see
``docs/adding-an-analysis.md``.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import time
from dataclasses import dataclass, field, fields
from importlib import metadata
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import pandas as pd
from sklearn.base import BaseEstimator

from spurious.exceptions import AnalysisError, ParameterError, as_missing_dependency
from spurious.provenance import Provenance
from spurious.results import Details, Result, check_marks, check_tables

# The headline types, re-exported beside the contract that returns them (an analysis'
# `headline` returns a Headline).
from spurious.results import Evidence as Evidence
from spurious.results import Headline as Headline
from spurious.results import PartialHeadline as PartialHeadline
from spurious.results import Severity as Severity
from spurious.utils.io import to_jsonable
from spurious.utils.registry import Registry
from spurious.utils.validation import check_params
from spurious.verdict import SEVERITY_ORDER as SEVERITY_ORDER
from spurious.verdict import VerdictScale as VerdictScale
from spurious.verdict import severity_of as severity_of

if TYPE_CHECKING:  # pragma: no cover
    from spurious.context import RunContext
    from spurious.data.dataset import Dataset

logger = logging.getLogger(__name__)

#: Packages whose modules hold the built-in analyses (imported by :func:`load_analyses`).
BUILTIN_PACKAGES = ("spurious.detectors", "spurious.evaluate")
#: Entry-point group through which other packages register analyses.
ENTRY_POINT_GROUP = "spurious.analyses"


@dataclass(frozen=True)
class Requirements:
    """What an analysis needs from the inputs of a run.

    Attributes
    ----------
    labels : bool
        Class labels (tasks ``nli``, ``pair``, ``text``; not ``qa``).
    eval_split : bool
        A held-out evaluation split besides the data.
    multi_field : bool
        A task with two or more text fields (partial inputs exist).
    tasks : tuple of str or None
        Tasks the analysis applies to (``None``: any task but multiple choice, which an
        analysis names explicitly: its items choose among their own options, so a model
        of "the label of the text" does not measure them).
    predictions : bool
        Model predictions for the scored split (``--predictions``).
    heuristics : bool
        Heuristic attributes h(x) of the scored split (computed, or ``--attributes``).
    annotator_labels : bool
        Several annotations per example (annotator labels or several QA answers).
    features : bool
        A representation Phi(x) (built by the context from a featurizer spec; the
        lexical featurizers need nothing beyond the core install, so this is met whenever
        the context can build ``features`` artifacts).
    trained_model : bool
        A model fine-tuned on the task (the training engine).
    training_dynamics : bool
        Per-epoch predictions of a model while it trained (the training engine).
    extras : tuple of str
        Optional dependencies the analysis cannot run without, as ``(module, extra)``
        pairs, e.g. ``(("torch", "torch"),)``: unmet when ``module`` is not installed, with
        the ``pip install 'spurious[extra]'`` that installs it.

    Examples
    --------
    >>> Requirements(labels=True, eval_split=True).needs()
    ['labels', 'eval_split']
    """

    labels: bool = False
    eval_split: bool = False
    multi_field: bool = False
    tasks: tuple[str, ...] | None = None
    predictions: bool = False
    heuristics: bool = False
    annotator_labels: bool = False
    features: bool = False
    trained_model: bool = False
    training_dynamics: bool = False
    extras: tuple[tuple[str, str], ...] = ()

    def needs(self) -> list[str]:
        """Names of the requirements that are set (for ``spurious analyses`` and docs)."""
        out = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "tasks":
                if value is not None:
                    out.append(f"tasks={','.join(value)}")
            elif f.name == "extras":
                out.extend(f"spurious[{extra}]" for _, extra in value)
            elif value:
                out.append(f.name)
        return out

    def missing_extras(self) -> list[str]:
        """``pip install`` hints for the optional dependencies that are not installed.

        Examples
        --------
        >>> Requirements(extras=(("no_such_module_xyz", "encoder"),)).missing_extras()
        ["no_such_module_xyz is not installed (pip install 'spurious[encoder]')"]
        """
        return [
            f"{module} is not installed (pip install 'spurious[{extra}]')"
            for module, extra in self.extras
            if not module_available(module)
        ]

    def unmet(self, ctx: RunContext) -> list[str]:
        """Why ``ctx`` cannot serve an analysis with these requirements (empty: it can)."""
        task = ctx.train.task
        why: list[str] = []
        if self.tasks is not None and task.name not in self.tasks:
            why.append(f"applies to tasks {list(self.tasks)}, not {task.name!r}")
        elif self.tasks is None and task.multiple_choice:
            why.append(
                f"does not score the options of multiple-choice items (task {task.name!r}): "
                "it models a class of the text, and an item's gold letter is not one"
            )
        if self.labels and not task.has_labels:
            why.append(f"needs class labels; task {task.name!r} has none")
        if self.multi_field and len(task.text_fields) < 2:
            why.append(
                f"needs two or more text fields; task {task.name!r} has {list(task.text_fields)}"
            )
        if self.eval_split and ctx.eval is None:
            why.append("needs an evaluation split (--eval)")
        if self.predictions and not ctx.has_predictions:
            why.append("needs model predictions (--predictions)")
        if self.annotator_labels and not ctx.has_annotations:
            why.append("needs several annotations per example (--annotations)")
        if self.heuristics and not ctx.can_compute_heuristics():
            why.append(
                f"needs heuristic attributes; no heuristic is defined for task {task.name!r} "
                "(pass --attributes)"
            )
        why.extend(f"needs {m}" for m in self.missing_extras())
        for kind, flag in (
            ("features", self.features),
            ("trained_model", self.trained_model),
            ("training_dynamics", self.training_dynamics),
        ):
            if flag and not ctx.can_build(kind):
                why.append(f"needs {kind.replace('_', ' ')} (no provider is installed)")
        return why


def module_available(name: str) -> bool:
    """Whether ``name`` can be imported here (found on the path; not imported).

    Examples
    --------
    >>> module_available("json"), module_available("no_such_module_xyz")
    (True, False)
    """
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@dataclass
class AnalysisOutput:
    """What :meth:`Analysis._run` returns; :meth:`Analysis.run` wraps it into a :class:`Result`."""

    scores: pd.DataFrame
    metrics: dict[str, float]
    summary: str = ""
    details: Details = field(default_factory=dict)
    fingerprints: dict[str, str] = field(default_factory=dict)
    #: Optional anti-biased marks for every split (see :data:`spurious.results.MARK_COLUMNS`).
    marks: pd.DataFrame | None = None
    #: Optional dataset-level tables too long for ``details`` (the atlas' every token x
    #: label): ``{name: frame}``, saved as ``tables/<name>.parquet`` (see ``Result.tables``).
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)


#: name -> analysis class, filled by :func:`register_analysis`.
ANALYSES: Registry[type[Analysis]] = Registry("analysis")

A = TypeVar("A", bound="type[Analysis]")


def register_analysis(cls: A) -> A:
    """Class decorator adding an analysis to :data:`ANALYSES`; refuses duplicate names."""
    name = getattr(cls, "name", None)
    if not name:
        raise TypeError(f"{cls.__name__} must set the ClassVar 'name' to be registered.")
    ANALYSES.register(name, cls)
    return cls


_LOADED = False

#: Built-in analysis modules that could not be imported for lack of an optional
#: dependency: module -> what to install (listed by ``spurious analyses``).
UNAVAILABLE: dict[str, str] = {}


def load_analyses() -> Registry[type[Analysis]]:
    """Import every built-in analysis module and installed plugin; return :data:`ANALYSES`.

    Modules of :data:`BUILTIN_PACKAGES` are imported (recursively), so a new analysis
    module is found without being listed anywhere.
    """
    global _LOADED
    if _LOADED:
        return ANALYSES
    for package_name in BUILTIN_PACKAGES:
        package = importlib.import_module(package_name)
        for info in pkgutil.walk_packages(package.__path__, prefix=package_name + "."):
            try:
                importlib.import_module(info.name)
            except ModuleNotFoundError as e:
                # An analysis module must import without its extras; if one does not, the
                # registry still loads and says which extra would bring it back.
                missing = as_missing_dependency(e, info.name)
                if missing is None:
                    raise
                UNAVAILABLE[info.name] = str(missing)
                logger.warning("analysis module %s is unavailable: %s", info.name, missing)
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except Exception as e:  # a broken plugin must not break the built-in analyses
            logger.warning("could not load analysis plugin %s: %s", ep.name, e)
    _LOADED = True
    return ANALYSES


def get_analysis(name: str) -> type[Analysis]:
    """The registered analysis class called ``name`` (built-ins are loaded first)."""
    return load_analyses().get(name)


class Analysis(BaseEstimator):  # type: ignore[misc]  # scikit-learn has no type hints
    """Base class of every analysis (detectors and model-facing evaluations).

    Subclasses store their keyword arguments in ``__init__`` (no logic there),
    declare ``_parameter_constraints`` and :attr:`requires`, and implement
    :meth:`_run`, which receives the run's :class:`~spurious.context.RunContext`.
    :meth:`run` validates parameters and requirements, times the call and wraps the
    output with provenance and a headline.

    Class attributes
    ----------------
    name : str
        Registry name; also the run-directory folder of its results.
    kind : {"detector", "evaluation"}
        A detector reads the data alone; an evaluation judges given model outputs.
    description : str
        One sentence for ``--help`` and the report.
    requires : Requirements
        What the analysis needs (see :meth:`requirements` for parameter-dependent needs).
    metric_docs, score_columns : dict
        Every metric / per-example column it writes -> meaning (direction, range).
    fast_params : dict
        Parameters that make it run in seconds on a few hundred examples (tests, CI).
    profiles : dict
        ``spurious audit`` parameter sets by profile name (``"quick"``, ``"full"``).
    in_audit : bool
        Whether ``spurious audit`` runs it when its requirements are met.
    audit_order : int
        Where ``spurious audit`` runs it (lower first, then by name): model-free, cheap
        analyses that need no trained model come first, so their findings lead the report.
    after : tuple of str
        Analyses whose results this one reads from ``context.results`` when they run in
        the same run (PECO reads cartography's confidence, PVI partial_input's g_x): the
        runner runs them first whatever the order asked for, and the run's warnings say
        when one of them was not run (or did not succeed).
    verdict_scale : VerdictScale or None
        Thresholds that turn the headline effect into a severity and a verdict.
    """

    name: ClassVar[str] = ""
    kind: ClassVar[str] = "detector"
    description: ClassVar[str] = ""
    requires: ClassVar[Requirements] = Requirements()
    metric_docs: ClassVar[dict[str, str]] = {}
    score_columns: ClassVar[dict[str, str]] = {}
    fast_params: ClassVar[dict[str, Any]] = {}
    profiles: ClassVar[dict[str, dict[str, Any]]] = {}
    in_audit: ClassVar[bool] = True
    audit_order: ClassVar[int] = 50
    after: ClassVar[tuple[str, ...]] = ()
    verdict_scale: ClassVar[VerdictScale | None] = None
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {}

    # -- the public boundary -----------------------------------------------------------
    def run(
        self,
        dataset: Dataset | None = None,
        eval_dataset: Dataset | None = None,
        *,
        context: RunContext | None = None,
        progress: bool | None = None,
    ) -> Result:
        """Validate, run and time the analysis.

        Parameters
        ----------
        dataset : Dataset, optional
            The data (the training split when there are two). Not needed with ``context``.
        eval_dataset : Dataset, optional
            A held-out evaluation split, for analyses that use one.
        context : RunContext, optional
            Shared inputs of a run (features, heuristics, predictions ...); built from
            ``dataset`` and ``eval_dataset`` when not given.
        progress : bool, optional
            Show progress bars; ``None`` shows them when stderr is a terminal or notebook.

        Returns
        -------
        Result
        """
        from spurious.context import RunContext

        self.validate_params()
        if context is None:
            train = self._check_dataset(dataset, "dataset")
            if eval_dataset is not None:
                self._check_dataset(eval_dataset, "eval_dataset")
                self._check_uses_eval()
            context = RunContext(train, eval_dataset, progress=progress)
        elif dataset is not None or eval_dataset is not None:
            raise ParameterError(
                f"{type(self).__name__}.run takes either datasets or a context, not both."
            )
        elif progress is not None:
            context.progress = progress
        unmet = self.unmet(context)
        if unmet:
            raise AnalysisError(f"Analysis {self.name!r} cannot run: {'; '.join(unmet)}.")
        self.check(context)
        start = time.perf_counter()
        out = self._run(context)
        elapsed = time.perf_counter() - start
        result = Result(
            analysis=self.name,
            scores=out.scores,
            metrics={k: float(v) for k, v in out.metrics.items()},
            params=to_jsonable(self.params_for_json()),
            provenance=self._provenance(context, elapsed, out.fingerprints),
            summary=out.summary,
            details=to_jsonable(out.details),
            marks=check_marks(out.marks, self.name),
            tables=check_tables(out.tables, self.name),
        )
        result.headline = to_jsonable(self.headline(result))
        logger.info("%s finished in %.2fs: %s", self.name, elapsed, out.summary)
        return result

    def check(self, context: RunContext) -> None:
        """Raise on parameters that do not fit these inputs, before any work is done.

        Cheap checks only (a view exists for the task, a size fits the data); the run
        lifecycle calls it for every analysis before it creates the run directory, so
        bad input writes nothing. The default checks nothing.
        """

    def requirements(self) -> Requirements:
        """What this instance needs; may depend on parameters (e.g. a mode)."""
        return type(self).requires

    def unmet(self, context: RunContext) -> list[str]:
        """Why ``context`` cannot serve this analysis (empty when it can)."""
        return self.requirements().unmet(context)

    def uses_eval(self) -> bool:
        """Whether an evaluation split changes what this analysis computes."""
        return True

    def mark_definitions(self, task: Any) -> list[str]:
        """The definitions whose anti-biased marks (``Result.marks``) this analysis writes
        on data of ``task``; ``spurious amplify`` checks its options against them before
        running the analysis. The default marks nothing."""
        return []

    def _check_uses_eval(self) -> None:
        if not self.uses_eval():
            raise ParameterError(
                f"{type(self).__name__} with these parameters does not use an evaluation "
                "split, so 'eval_dataset' would be ignored; leave it out."
            )

    def scored_dataset(self, context: RunContext) -> Dataset:
        """The split whose examples the per-example scores cover (default: eval, else data)."""
        return context.target

    def headline(self, result: Result) -> Headline:
        """The finding in one line for the report overview (override per analysis).

        Returns a :class:`~spurious.results.Headline`: a dict with ``label``, ``value``, ``text``, ``verdict``, ``severity``
        (``"none"``, ``"low"``, ``"moderate"``, ``"high"`` or ``"info"``), ``inconclusive``
        and ``evidence`` (what the severity rests on); build it with
        :meth:`VerdictScale.headline` so that a severity always rests on an interval or a
        test against a null.
        """
        return VerdictScale(0, 0, 0).headline(self.name, None, result.summary, severity="info")

    # -- parameters --------------------------------------------------------------------
    def validate_params(self) -> None:
        """Check hyperparameters against ``_parameter_constraints`` (one message format)."""
        check_params(self._parameter_constraints, self.get_params(deep=False), type(self).__name__)

    def params_for_json(self) -> dict[str, Any]:
        """Hyperparameters as plain JSON (see :meth:`to_config`); objects become their repr."""
        try:
            return self.to_config()
        except ParameterError:
            out = {}
            for k, v in self.get_params(deep=False).items():
                out[k] = _plain(v) if _is_plain(v) else repr(v)
            return out

    def to_config(self) -> dict[str, Any]:
        """Parameters as plain data that :meth:`from_config` turns back into this analysis.

        Raises
        ------
        ParameterError
            A parameter is a Python object with no plain-data form (e.g. an estimator
            instance); such a run cannot be re-run from its manifest.
        """
        out: dict[str, Any] = {}
        for k, v in self.get_params(deep=False).items():
            v = self._param_to_config(k, v)
            if not _is_plain(v):
                raise ParameterError(
                    f"The {k!r} parameter of {type(self).__name__} is a "
                    f"{type(v).__name__} object, which has no plain-data form; a run using it "
                    "cannot be re-run from its manifest. Pass a name or a config dict instead."
                )
            out[k] = _plain(v)
        return out

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Analysis:
        """Build the analysis from :meth:`to_config`'s output (unknown keys are an error)."""
        valid = set(cls().get_params(deep=False))
        unknown = sorted(set(config) - valid)
        if unknown:
            raise ParameterError(
                f"Unknown parameter(s) {unknown} for analysis {cls.name!r}; valid: {sorted(valid)}."
            )
        return cls(**{k: cls._param_from_config(k, v) for k, v in config.items()})

    def _param_to_config(self, name: str, value: Any) -> Any:
        """Hook: the plain-data form of one parameter (override for object parameters)."""
        return value

    @classmethod
    def _param_from_config(cls, name: str, value: Any) -> Any:
        """Hook: rebuild one parameter from its plain-data form."""
        return value

    # -- internals ---------------------------------------------------------------------
    def _provenance(self, context: RunContext, elapsed: float, extra: dict[str, str]) -> Provenance:
        fps = {"train": context.train.fingerprint}
        if context.eval is not None:
            fps["eval"] = context.eval.fingerprint
        fps.update(extra)
        return Provenance(
            seed=getattr(self, "random_state", None),
            fingerprints=fps,
            timings={"total_s": round(elapsed, 4)},
        )

    def _check_dataset(self, ds: object, what: str) -> Dataset:
        """``ds`` itself when it is a :class:`Dataset`; a AnalysisError otherwise."""
        from spurious.data.dataset import Dataset

        if not isinstance(ds, Dataset):
            raise AnalysisError(
                f"{type(self).__name__}.run expects a spurious Dataset as {what!r}; got "
                f"{type(ds).__name__}. Load data with spurious.load_dataset()."
            )
        return ds

    def _run(self, context: RunContext) -> AnalysisOutput:
        raise NotImplementedError  # pragma: no cover  (abstract)


def _is_plain(value: Any) -> bool:
    if isinstance(value, str | int | float | bool | type(None)):
        return True
    if isinstance(value, list | tuple):
        return all(_is_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    return False


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
