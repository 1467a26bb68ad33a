"""Detector base class and the one registry the CLI and report discover detectors from."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import pandas as pd
from sklearn.base import BaseEstimator

from spurious.data.dataset import Dataset
from spurious.exceptions import DetectorError, ParameterError
from spurious.provenance import Provenance
from spurious.results import DetectorResult
from spurious.utils.io import to_jsonable
from spurious.utils.validation import InvalidParameterError

logger = logging.getLogger(__name__)

#: name -> detector class. Filled by :func:`register_detector`.
REGISTRY: dict[str, type[Detector]] = {}

D = TypeVar("D", bound="type[Detector]")


def register_detector(cls: D) -> D:
    """Class decorator adding a detector to :data:`REGISTRY`; refuses duplicate names."""
    name = getattr(cls, "name", None)
    if not name:
        raise TypeError(f"{cls.__name__} must set the ClassVar 'name' to be registered.")
    if name in REGISTRY and REGISTRY[name] is not cls:
        raise ValueError(
            f"A detector named {name!r} is already registered ({REGISTRY[name].__qualname__})."
        )
    REGISTRY[name] = cls
    return cls


def get_detector(name: str) -> type[Detector]:
    """The registered detector class called ``name``."""
    from spurious import detectors  # noqa: F401  (importing fills the registry)

    try:
        return REGISTRY[name]
    except KeyError:
        raise ParameterError(
            f"Unknown detector {name!r}; registered detectors: {sorted(REGISTRY)}."
        ) from None


@dataclass
class DetectorOutput:
    """What ``_run`` returns; :meth:`Detector.run` wraps it into a :class:`DetectorResult`."""

    scores: pd.DataFrame
    metrics: dict[str, float]
    summary: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    fingerprints: dict[str, str] = field(default_factory=dict)


class Detector(BaseEstimator):
    """Base class of all detectors.

    Subclasses store their keyword arguments in ``__init__`` (scikit-learn
    convention: no logic there), declare ``_parameter_constraints``, and implement
    :meth:`_run`. :meth:`run` validates parameters and inputs, times the call and
    wraps the output with provenance.

    Class attributes
    ----------------
    name : str
        Registry name; also the run-directory folder of its results.
    description : str
        One sentence for ``--help`` and the report.
    requires : tuple of str
        What the detector needs: ``"labels"``, ``"eval"`` (an evaluation split),
        ``"multi_field"`` (a task with more than one text field).
    metric_docs : dict
        Every metric name it writes -> meaning (direction, range).
    score_columns : dict
        Every per-example column -> meaning.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()
    metric_docs: ClassVar[dict[str, str]] = {}
    score_columns: ClassVar[dict[str, str]] = {}
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {}

    def run(
        self, dataset: Dataset, eval_dataset: Dataset | None = None, *, progress: bool = False
    ) -> DetectorResult:
        """Validate, run and time the detector.

        Parameters
        ----------
        dataset : Dataset
            The (training) data.
        eval_dataset : Dataset, optional
            A held-out evaluation split, for detectors that train on one and score another.
        progress : bool
            Show progress bars (the CLI turns this on).

        Returns
        -------
        DetectorResult
        """
        self.validate_params()
        self._check_inputs(dataset, eval_dataset)
        start = time.perf_counter()
        out = self._run(dataset, eval_dataset, progress=progress)
        elapsed = time.perf_counter() - start
        fps = {"train": dataset.fingerprint}
        if eval_dataset is not None:
            fps["eval"] = eval_dataset.fingerprint
        fps.update(out.fingerprints)
        prov = Provenance(
            seed=getattr(self, "random_state", None),
            fingerprints=fps,
            timings={"total_s": round(elapsed, 4)},
        )
        logger.info("%s finished in %.2fs: %s", self.name, elapsed, out.summary)
        return DetectorResult(
            detector=self.name,
            scores=out.scores,
            metrics={k: float(v) for k, v in out.metrics.items()},
            params=to_jsonable(self.params_for_json()),
            provenance=prov,
            summary=out.summary,
            details=to_jsonable(out.details),
        )

    def validate_params(self) -> None:
        """Check hyperparameters against ``_parameter_constraints`` (sklearn messages)."""
        try:
            self._validate_params()
        except InvalidParameterError as e:
            raise ParameterError(str(e)) from None

    def params_for_json(self) -> dict[str, Any]:
        """Hyperparameters in JSON form (objects become their repr)."""
        out = {}
        for k, v in self.get_params(deep=False).items():
            out[k] = v if isinstance(v, str | int | float | bool | type(None) | list) else repr(v)
        return out

    def _check_inputs(self, dataset: Dataset, eval_dataset: Dataset | None) -> None:
        if not isinstance(dataset, Dataset):
            raise DetectorError(
                f"{type(self).__name__}.run expects a spurious Dataset as 'dataset'; got "
                f"{type(dataset).__name__}. Load data with spurious.load_dataset()."
            )
        if eval_dataset is not None:
            if not isinstance(eval_dataset, Dataset):
                raise DetectorError(
                    f"{type(self).__name__}.run expects a spurious Dataset as 'eval_dataset'; "
                    f"got {type(eval_dataset).__name__}."
                )
            if eval_dataset.task.name != dataset.task.name:
                raise DetectorError(
                    f"'eval_dataset' has task {eval_dataset.task.name!r} but 'dataset' has "
                    f"{dataset.task.name!r}."
                )
            if dataset.task.has_labels and eval_dataset.label_names != dataset.label_names:
                raise DetectorError(
                    f"'eval_dataset' label names {list(eval_dataset.label_names)} differ from "
                    f"'dataset' label names {list(dataset.label_names)}; pass label_names= "
                    "when loading so both use the same ids."
                )
        if "labels" in self.requires and not dataset.task.has_labels:
            raise DetectorError(
                f"Detector {self.name!r} needs class labels; task {dataset.task.name!r} has none."
            )
        if "eval" in self.requires and eval_dataset is None:
            raise DetectorError(f"Detector {self.name!r} needs an evaluation split (eval_dataset).")
        if "multi_field" in self.requires and len(dataset.task.text_fields) < 2:
            raise DetectorError(
                f"Detector {self.name!r} compares partial and full inputs and needs a task with "
                f"two or more text fields; task {dataset.task.name!r} has "
                f"{list(dataset.task.text_fields)}."
            )

    def _run(
        self, dataset: Dataset, eval_dataset: Dataset | None, *, progress: bool
    ) -> DetectorOutput:
        raise NotImplementedError  # pragma: no cover  (abstract)
