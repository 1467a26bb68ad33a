"""On-disk cache of float32 feature matrices (encoder embeddings, precomputed arrays).

A :class:`~spurious.utils.cache.ArrayCache` fixed to float32 in the package's cache
folder (``$SPURIOUS_CACHE_DIR`` or ``~/.cache/spurious/features``); the entry layout,
verification and atomic writes are documented there.
"""

from __future__ import annotations

import os

import numpy as np

from spurious.utils.cache import ArrayCache


class FeatureCache(ArrayCache):
    """A folder of cached float32 arrays keyed by dicts.

    Parameters
    ----------
    root : path, None or False
        Cache folder. ``None`` (or ``True``) uses
        :func:`spurious.utils.cache.default_cache_dir`; ``False`` disables caching
        (``get`` always misses, ``put`` does nothing).

    Examples
    --------
    >>> import tempfile
    >>> cache = FeatureCache(tempfile.mkdtemp())
    >>> key = {"dataset": "abc", "field": "premise", "featurizer": {"name": "minilm"}}
    >>> cache.get(key) is None
    True
    >>> cache.put(key, np.ones((2, 3))).dtype
    dtype('float32')
    >>> cache.get(key).shape
    (2, 3)
    >>> FeatureCache(False).get(key) is None
    True
    """

    label = "feature"

    def __init__(self, root: str | os.PathLike[str] | bool | None = None) -> None:
        super().__init__(root, dtype=np.float32)
