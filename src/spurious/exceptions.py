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


class DetectorError(SpuriousError, RuntimeError):
    """A detector cannot run on the inputs it was given (for example a missing input)."""


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
