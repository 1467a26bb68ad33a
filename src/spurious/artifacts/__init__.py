"""Shared inputs of a run (*artifacts*), one provider per kind, in one layer.

An artifact provider ``f(ctx, **config) -> artifact`` builds what several analyses of a
run share: feature matrices and the featurizers fitted for them, heuristic values, the
cross-fitting folds and lexical counts, fine-tuned models, their hidden states and
training dynamics. :class:`~spurious.context.RunContext` memoises them by kind, config and
the datasets' fingerprints (``ctx.artifact(kind, **config)``).

This layer sits above ``models/``, ``features/`` and ``heuristics/`` (whose code takes
plain arguments: datasets, arrays, a ``progress`` flag) and below the run context and the
analyses. Providers receive the run context as their first argument but never import it,
not even for type checking: they are typed against
:class:`~spurious.artifacts.protocol.ArtifactContext`, so the package graph stays acyclic
with type-only imports counted.

The built-in providers are listed here, explicitly, in :data:`BUILTIN`; the run context
registers them when it is imported, so which kinds exist never depends on which module
happened to be imported first. Plugins add kinds with
:func:`spurious.context.register_artifact`.

Examples
--------
>>> sorted(BUILTIN)  # doctest: +NORMALIZE_WHITESPACE
['cv_folds', 'features', 'fitted_featurizer', 'fitted_option_featurizer', 'heuristics',
 'hidden_states', 'lexical_counts', 'option_blocks', 'trained_model', 'training_dynamics']
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["BUILTIN", "builtin_provider"]

#: kind -> ``"module:function"`` of its provider (imported on first use, so listing
#: the kinds imports neither torch nor transformers).
BUILTIN: dict[str, str] = {
    "fitted_featurizer": "spurious.artifacts.features:fitted_featurizer",
    "features": "spurious.artifacts.features:features",
    "heuristics": "spurious.artifacts.heuristics:heuristics",
    "cv_folds": "spurious.artifacts.folds:cv_folds",
    "lexical_counts": "spurious.artifacts.folds:lexical_counts",
    "trained_model": "spurious.artifacts.finetune:trained_model",
    "hidden_states": "spurious.artifacts.finetune:hidden_states",
    "training_dynamics": "spurious.artifacts.dynamics:training_dynamics",
    "fitted_option_featurizer": "spurious.artifacts.mcq:fitted_option_featurizer",
    "option_blocks": "spurious.artifacts.mcq:option_blocks",
}


def builtin_provider(kind: str) -> Callable[..., Any]:
    """The provider of a built-in ``kind``, as a callable that imports it on first call.

    Examples
    --------
    >>> builtin_provider("features").__name__
    'features'
    """
    target = BUILTIN[kind]

    def provider(ctx: Any, **config: Any) -> Any:
        return _load(target)(ctx, **config)

    provider.__name__ = target.rsplit(":", 1)[1]
    provider.__qualname__ = provider.__name__
    provider.__doc__ = f"Built-in provider of {kind!r} artifacts ({target})."
    return provider


@functools.cache
def _load(target: str) -> Callable[..., Any]:
    module, _, name = target.partition(":")
    provider: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return provider
