"""Heuristic base class, registry, word tokenizer and the cached :func:`compute_heuristics`.

A *heuristic* is a function h: X -> R computed for every example of a dataset (paper
001, "Think Twice", Sec. 3, step (i)): the attribute A_h of a feature suspected to be a
shortcut. Thresholding it splits the data into two groups whose performance gap is the
model's *prediction bias* (Algorithm 1). Heuristics here only compute A_h; choosing the
threshold and splitting belong to the prediction-bias code.

Every heuristic is a class registered by :func:`register_heuristic` in
:data:`HEURISTICS` (a :class:`~spurious.utils.registry.Registry`). Its ``__init__`` only
stores keyword arguments (scikit-learn convention); the public :meth:`Heuristic.compute`
validates parameters and inputs and calls the private ``_compute``, which returns one
float64 per row, NaN where the value is undefined (the reasons are counted and logged).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from spurious.data.dataset import Dataset
from spurious.exceptions import ParameterError
from spurious.utils.cache import ArrayCache
from spurious.utils.cache import default_cache_dir as _cache_root
from spurious.utils.io import to_jsonable
from spurious.utils.registry import Registry
from spurious.utils.validation import check_params

if TYPE_CHECKING:  # pragma: no cover
    from spacy.language import Language

logger = logging.getLogger(__name__)

#: name -> heuristic class. Filled by :func:`register_heuristic`.
HEURISTICS: Registry[type[Heuristic]] = Registry("heuristic")

H = TypeVar("H", bound="type[Heuristic]")

# -- words -------------------------------------------------------------------------------

# Words are runs of letters/digits/underscore (\w+), with the clitic "n't" split off
# Penn-Treebank style ("didn't" -> "did", "n't"; "can't" -> "ca", "n't") so negations stay
# visible; other apostrophes split ("Dame's" -> "dame", "s"). Punctuation is dropped.
_WORD_RE = re.compile(r"n['’]t\b|\w+?(?=n['’]t\b)|\w+", re.IGNORECASE)

#: English stopwords: NLTK's list (the one the paper's reference code filters with),
#: minus the forms with an apostrophe, which the tokenizer never produces.
STOPWORDS: frozenset[str] = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which
    who whom this that these those am is are was were be been being have has had having do
    does did doing a an the and but if or because as until while of at by for with about
    against between into through during before after above below to from up down in out on
    off over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very s t can will
    just don should now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma
    mightn mustn needn shan shouldn wasn weren won wouldn
    """.split()  # noqa: SIM905  (a word list reads best as one string)
)


def word_spans(text: str) -> list[tuple[str, int, int]]:
    """Lower-cased words of ``text`` with their character offsets ``(word, start, end)``.

    Examples
    --------
    >>> word_spans("He didn't go.")
    [('he', 0, 2), ('did', 3, 6), ("n't", 6, 9), ('go', 10, 12)]
    """
    return [
        (m.group().lower().replace("’", "'"), m.start(), m.end()) for m in _WORD_RE.finditer(text)
    ]


def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` (punctuation dropped, "n't" split off).

    Examples
    --------
    >>> words("Who founded Notre Dame's university?")
    ['who', 'founded', 'notre', 'dame', 's', 'university']
    """
    return [m.group().lower().replace("’", "'") for m in _WORD_RE.finditer(text)]


#: Distinct text -> its words, while :func:`shared_words` is active (None otherwise).
_WORDS_MEMO: ContextVar[dict[str, tuple[str, ...]] | None] = ContextVar("_WORDS_MEMO", default=None)


@contextlib.contextmanager
def shared_words() -> Iterator[None]:
    """Within the block, :func:`words_of` tokenises each distinct text once for every
    caller (several heuristics over the same fields); the memo is dropped on exit.

    Examples
    --------
    >>> with shared_words():
    ...     a, b = words_of(["A dog.", "A dog."])
    >>> a is b, a
    (True, ('a', 'dog'))
    """
    if _WORDS_MEMO.get() is not None:  # nested: the outer block's memo serves
        yield
        return
    token = _WORDS_MEMO.set({})
    try:
        yield
    finally:
        _WORDS_MEMO.reset(token)


def words_of(texts: Iterable[str]) -> list[tuple[str, ...]]:
    """:func:`words` of every text, each distinct text tokenised once (once per
    :func:`shared_words` block when one is active). Words are interned, so repeated
    words cost one pointer each.

    Examples
    --------
    >>> words_of(["He didn't go.", "Go!"])
    [('he', 'did', "n't", 'go'), ('go',)]
    """
    active = _WORDS_MEMO.get()
    memo = {} if active is None else active
    out = []
    for text in texts:
        found = memo.get(text)
        if found is None:
            found = memo[text] = tuple(sys.intern(w) for w in words(text))
        out.append(found)
    return out


# -- registry ----------------------------------------------------------------------------


def register_heuristic(cls: H) -> H:
    """Class decorator adding a heuristic to :data:`HEURISTICS`; refuses duplicate names."""
    name = getattr(cls, "name", None)
    if not name:
        raise TypeError(f"{cls.__name__} must set the ClassVar 'name' to be registered.")
    return HEURISTICS.register(name, cls)


def get_heuristic(name: str, task: str | None = None) -> type[Heuristic]:
    """The registered heuristic class called ``name``.

    Parameters
    ----------
    name : str
        A registry name.
    task : str, optional
        The task of the data at hand: an unknown ``name`` then lists only the
        heuristics of that task.

    Raises
    ------
    ParameterError
        If no heuristic is called ``name``.

    Examples
    --------
    >>> get_heuristic("answer_length").tasks
    ('qa',)
    >>> get_heuristic("overlap", task="qa")
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: Unknown heuristic 'overlap'; known: ['answer_length', 'answer_sentence_rank', 'entity_count', 'qa_tfidf_similarity', 'shared_words', 'subject_position', 'word_distance'].
    """
    return HEURISTICS.get(name, None if task is None else list_heuristics(task))


def list_heuristics(task: str | None = None) -> list[str]:
    """Names of the registered heuristics (for one task when ``task`` is given).

    Examples
    --------
    >>> list_heuristics("qa")[:3]
    ['answer_length', 'answer_sentence_rank', 'entity_count']
    """
    return [n for n, c in HEURISTICS.items() if task is None or task in c.tasks]


# -- base class --------------------------------------------------------------------------


class Heuristic(BaseEstimator):
    """Base class of all heuristics h: example -> float.

    Subclasses store keyword arguments in ``__init__`` (no logic there), declare
    ``_parameter_constraints`` and implement :meth:`_compute`.

    Class attributes
    ----------------
    name : str
        Registry name; also the column name in :func:`compute_heuristics`.
    tasks : tuple of str
        Tasks the heuristic applies to (``"qa"``, ``"nli"``, ``"pair"``).
    description : str
        One sentence: what the value measures, its range and unit.
    source : str
        Where the definition comes from (paper + section).
    requires_spacy : bool
        Needs a spaCy pipeline (``nlp``; loaded lazily when not given).
    needs_train : bool
        Needs a training split (``train=``); :meth:`compute` raises without one.
    uses_train : bool
        Reads ``train`` when given (so it is part of the cache key).
    version : int
        Bumped whenever the computed values change; part of the cache key.
    """

    name: ClassVar[str] = ""
    tasks: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""
    source: ClassVar[str] = ""
    requires_spacy: ClassVar[bool] = False
    needs_train: ClassVar[bool] = False
    uses_train: ClassVar[bool] = False
    version: ClassVar[int] = 1
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {}

    def compute(
        self,
        dataset: Dataset,
        *,
        train: Dataset | None = None,
        nlp: Language | None = None,
        progress: bool = False,
    ) -> np.ndarray:
        """One float64 value per row of ``dataset``; NaN where undefined.

        Parameters
        ----------
        dataset : Dataset
            The examples to compute h(x) for.
        train : Dataset, optional
            A training split, for heuristics that estimate statistics (``needs_train``).
        nlp : spacy.language.Language, optional
            A loaded spaCy pipeline for ``requires_spacy`` heuristics; by default
            :func:`spurious.heuristics.nlp.load_spacy` loads one once per process.
        progress : bool
            Show progress bars (spaCy parsing).

        Returns
        -------
        numpy.ndarray of float64, shape (len(dataset),)
        """
        check_params(self._parameter_constraints, self.get_params(), self.name)
        self._check_inputs(dataset, train)
        if self.requires_spacy and nlp is None:
            from spurious.heuristics.nlp import load_spacy

            nlp = load_spacy()
        start = time.perf_counter()
        values, reasons = self._compute(dataset, train=train, nlp=nlp, progress=progress)
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (len(dataset),):
            raise RuntimeError(  # pragma: no cover  (a bug in a heuristic)
                f"Heuristic {self.name!r} returned shape {values.shape}; "
                f"expected ({len(dataset)},)."
            )
        n_nan = int(np.isnan(values).sum())
        if n_nan:
            detail = "; ".join(f"{k}: {v}" for k, v in Counter(reasons).most_common())
            logger.info(
                "%s: %d of %d row(s) of %r are undefined (NaN): %s",
                self.name,
                n_nan,
                len(dataset),
                dataset.name,
                detail or "no reason recorded",
            )
        logger.debug("%s computed in %.2fs", self.name, time.perf_counter() - start)
        return values

    def config(self) -> dict[str, Any]:
        """JSON-serialisable identity: name, version and parameters (cache keys, manifests).

        Examples
        --------
        >>> get_heuristic("answer_length")().config()
        {'heuristic': 'answer_length', 'version': 1, 'params': {'aggregate': 'first'}}
        """
        return {
            "heuristic": self.name,
            "version": self.version,
            "params": to_jsonable(self.get_params(deep=False)),
        }

    def _check_inputs(self, dataset: Dataset, train: Dataset | None) -> None:
        if not isinstance(dataset, Dataset):
            raise ParameterError(
                f"The 'dataset' parameter of {self.name} must be a spurious Dataset. "
                f"Got {type(dataset).__name__} instead. Load data with spurious.load_dataset()."
            )
        if dataset.task.name not in self.tasks:
            raise ParameterError(
                f"Heuristic {self.name!r} applies to task(s) {list(self.tasks)}; dataset "
                f"{dataset.name!r} has task {dataset.task.name!r}."
            )
        if train is not None:
            if not isinstance(train, Dataset):
                raise ParameterError(
                    f"The 'train' parameter of {self.name} must be a spurious Dataset or "
                    f"None. Got {type(train).__name__} instead."
                )
            if train.task.name != dataset.task.name:
                raise ParameterError(
                    f"The 'train' parameter of {self.name} must have the task of 'dataset' "
                    f"({dataset.task.name!r}). Got task {train.task.name!r} instead."
                )
        elif self.needs_train:
            raise ParameterError(
                f"The 'train' parameter of {self.name} must be a training Dataset: the "
                "heuristic estimates its statistics on a training split. Got None instead. "
                f"Call {type(self).__name__}().compute(dataset, train=train_dataset)."
            )

    def _compute(
        self,
        dataset: Dataset,
        *,
        train: Dataset | None,
        nlp: Language | None,
        progress: bool,
    ) -> tuple[np.ndarray, list[str]]:
        """Return ``(values, reasons)``: a reason string for every NaN row."""
        raise NotImplementedError  # pragma: no cover  (abstract)


# -- cache -------------------------------------------------------------------------------


def default_cache_dir() -> Path:
    """``heuristics/`` inside the package's cache folder (``$SPURIOUS_CACHE_DIR`` or
    ``~/.cache/spurious/features``).

    Examples
    --------
    >>> default_cache_dir().name
    'heuristics'
    """
    return _cache_root() / "heuristics"


class HeuristicCache(ArrayCache):
    """A folder of float64 value vectors keyed by JSON-able dicts (``.npy`` + ``.json``).

    A :class:`~spurious.utils.cache.ArrayCache` fixed to float64 (heuristic values are
    exact counts and ratios; float32 would round them).

    Parameters
    ----------
    root : path, None or False
        Folder; ``None`` uses :func:`default_cache_dir`, ``False`` disables caching.

    Examples
    --------
    >>> import tempfile
    >>> cache = HeuristicCache(tempfile.mkdtemp())
    >>> cache.get({"k": 1}) is None
    True
    >>> _ = cache.put({"k": 1}, np.array([0.5, np.nan]))
    >>> cache.get({"k": 1})
    array([0.5, nan])
    """

    label = "heuristic"

    def __init__(self, root: str | os.PathLike[str] | bool | None = None) -> None:
        super().__init__(root, dtype=np.float64)

    @staticmethod
    def default_root() -> Path:
        """:func:`default_cache_dir`."""
        return default_cache_dir()


# -- the public entry point --------------------------------------------------------------


def _resolve(
    names: Iterable[str | Heuristic] | str | Heuristic | None,
    dataset: Dataset,
    train: Dataset | None,
) -> list[Heuristic]:
    if names is None:
        chosen: list[Heuristic] = []
        for n in list_heuristics(dataset.task.name):
            cls = HEURISTICS[n]
            if cls.needs_train and train is None:
                logger.info("Skipping heuristic %r: it needs a training split (train=).", n)
                continue
            chosen.append(cls())
        return chosen
    if isinstance(names, str | Heuristic):
        names = [names]
    out = []
    for n in names:
        if isinstance(n, Heuristic):
            out.append(n)
        elif isinstance(n, str):
            out.append(get_heuristic(n, dataset.task.name)())
        else:
            raise ParameterError(
                "The 'names' parameter must hold heuristic names or Heuristic instances. "
                f"Got an element of type {type(n).__name__} instead."
            )
    seen = [h.name for h in out]
    dup = sorted({n for n in seen if seen.count(n) > 1})
    if dup:
        raise ParameterError(
            f"The 'names' parameter must not repeat a heuristic (one column each). Got {dup} "
            "more than once."
        )
    return out


def cache_key(
    heuristic: Heuristic,
    dataset: Dataset,
    train: Dataset | None = None,
    nlp_id: str | None = None,
) -> dict[str, Any]:
    """The cache key of ``heuristic`` on ``dataset``: fingerprint + config (+ train, spaCy).

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["Who?"], "context": ["Ann."],
    ...     "answers": [["Ann"]]}), "qa")
    >>> sorted(cache_key(get_heuristic("answer_length")(), ds))
    ['dataset', 'heuristic']
    """
    key: dict[str, Any] = {"dataset": dataset.fingerprint, "heuristic": heuristic.config()}
    if heuristic.uses_train and train is not None:
        key["train"] = train.fingerprint
    if heuristic.requires_spacy:
        key["spacy"] = nlp_id
    return key


def compute_heuristics(
    dataset: Dataset,
    names: Sequence[str | Heuristic] | str | Heuristic | None = None,
    *,
    train: Dataset | None = None,
    cache_dir: str | os.PathLike[str] | bool | None = None,
    progress: bool = False,
    nlp: Language | None = None,
) -> pd.DataFrame:
    """Compute several heuristics; cached per (dataset fingerprint, heuristic config).

    Parameters
    ----------
    dataset : Dataset
    names : str, Heuristic or a sequence of them, optional
        Heuristic names (default parameters) or configured instances. ``None``: every
        heuristic registered for the dataset's task (those that need ``train`` are
        skipped, with a log line, when ``train`` is not given).
    train : Dataset, optional
        Training split for heuristics that estimate statistics (PMI, TF-IDF fit).
    cache_dir : path, None or False
        Cache folder for the values; ``None``: :func:`default_cache_dir`; ``False``:
        no caching. spaCy-derived values are cached too (the key names the model).
    progress : bool
        Progress bars for spaCy parsing.
    nlp : spacy.language.Language, optional
        The spaCy pipeline for heuristics that need one (default: loaded once, lazily).

    Returns
    -------
    pandas.DataFrame
        ``id`` (str) and one float64 column per heuristic, in row order of ``dataset``.

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"premise": ["a dog runs", "a cat"],
    ...     "hypothesis": ["a dog", "no cat sleeps"], "label": [0, 2]}), "nli")
    >>> df = compute_heuristics(ds, ["overlap_rate", "negation_in_hypothesis"], cache_dir=False)
    >>> df.drop(columns="id").round(3)
       overlap_rate  negation_in_hypothesis
    0         1.000                     0.0
    1         0.333                     1.0
    """
    if not isinstance(dataset, Dataset):
        raise ParameterError(
            "The 'dataset' parameter of compute_heuristics must be a spurious Dataset. "
            f"Got {type(dataset).__name__} instead."
        )
    heuristics = _resolve(names, dataset, train)
    cache = HeuristicCache(cache_dir)
    from spurious.heuristics import nlp as nlp_mod

    # The spaCy model is part of the key of spaCy-derived values. Read its id from the
    # installed package so that cached values are found without loading the model.
    nlp_id = nlp_mod.model_id(nlp) if nlp is not None else nlp_mod.installed_model_id()
    out = pd.DataFrame({"id": dataset.ids})
    # Heuristics over the same fields tokenise each distinct text once between them
    # (100k SNLI-like rows: 17.1 s -> 2.0 s, bench/bench_heuristics.py).
    with shared_words():
        for h in heuristics:
            key = cache_key(h, dataset, train, nlp_id)
            values = cache.get(key)
            if values is not None and len(values) == len(dataset):
                logger.debug("heuristic cache hit: %s on %r", h.name, dataset.name)
            else:
                if h.requires_spacy and nlp is None:
                    nlp = nlp_mod.load_spacy()
                    if nlp_mod.model_id(nlp) != nlp_id:  # e.g. a model without a meta.json
                        nlp_id = nlp_mod.model_id(nlp)
                        key = cache_key(h, dataset, train, nlp_id)
                start = time.perf_counter()
                values = h.compute(dataset, train=train, nlp=nlp, progress=progress)
                logger.info(
                    "heuristic %s on %r (%d rows): %.2fs",
                    h.name,
                    dataset.name,
                    len(dataset),
                    time.perf_counter() - start,
                )
                cache.put(key, values)
            out[h.name] = values
    return out
