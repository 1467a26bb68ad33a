"""What an artifact provider may use of the run context, as a protocol.

Providers receive :class:`~spurious.context.RunContext` as their first argument. The
context imports this layer (it registers the built-in providers), so the providers are
typed against this protocol rather than the class: no module here imports the context,
not even for type checking, and the package graph stays acyclic with type-only imports
counted. :class:`RunContext` satisfies the protocol structurally (mypy checks it where
the context calls a provider, and ``tests/test_artifacts_protocol.py`` at run time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from spurious.data.dataset import Dataset

__all__ = ["ArtifactContext"]


@runtime_checkable
class ArtifactContext(Protocol):
    """The inputs of a run and the memo of its artifacts (see ``RunContext``)."""

    train: Dataset
    eval: Dataset | None
    attributes: pd.DataFrame | None
    heuristics_train: Dataset | None
    progress: bool

    @property
    def target(self) -> Dataset:
        """The split being judged: the evaluation split when given, else the data."""
        ...

    def split(self, name: str) -> Dataset:
        """``"train"``, ``"eval"`` or ``"target"`` as a dataset."""
        ...

    def artifact(self, kind: str, **config: Any) -> Any:
        """The artifact of ``kind`` with ``config``, built on first request."""
        ...

    def built(self, kind: str, **config: Any) -> Any:
        """The artifact of ``kind`` with ``config`` if built already, else ``None``."""
        ...

    def features(self, features: Any, view: str, *, split: str = "train") -> Any:
        """Feature matrix of ``split`` seen through ``view``."""
        ...

    def registered_featurizer(self, key: str) -> Any:
        """The featurizer object :meth:`features` registered under ``key``, or ``None``."""
        ...
