"""Option-level features of multiple-choice items: one block of columns per option.

A multiple-choice model scores every option of an item and takes a softmax over the
item's options (:class:`~spurious.models.conditional_logit.ConditionalLogit`, one weight
vector shared by the options). Its input is a matrix of shape ``(n_items, K * d)``: ``K``
blocks of ``d`` columns, the first column of a block saying whether the option exists
(1) or is padding (0). What a block holds depends on the **view** — which parts of the
item the model may see (paper 003's partial inputs, in their multiple-choice form):

``choices_only``
    The options alone, in their order (Balepur et al., ACL 2024): the option's letter
    (position one-hot), its length (characters, words; z-scored within the item; is it
    the longest / shortest), "all / none of the above", numeric extremes, how much it
    shares with the other options (word Jaccard and embedding cosine: the odd one out)
    and, with an encoder, the option embedding (PCA-reduced).
``full``
    The choices-only block plus the question: word overlap and embedding cosine of
    question (and context) with the option, z-scored within the item, and the
    PCA-reduced product ``e_question * e_option``.
``question_only``
    The question without the options: only the letter can be chosen, so a block is the
    position one-hot and its products with the (PCA-reduced) question embedding and the
    option count — whether the question predicts the gold letter.

Columns that are constant over an item's options cannot move its softmax, which is
why the within-item contrasts (z-scores, ranks, "is the longest") carry the cues.
Embeddings come from the sentence encoder's per-text cache (:class:`EncoderFeaturizer`),
so an option shared by many items is encoded once.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spurious.data.dataset import Dataset
from spurious.data.mcq import MAX_OPTIONS
from spurious.exceptions import ParameterError, SchemaError

__all__ = ["MC_VIEWS", "OptionBlocks", "OptionFeaturizer", "mc_views"]

#: The views of a multiple-choice item, in the order the leakage analysis reports them.
MC_VIEWS = ("full", "choices_only", "question_only")

_WORD = re.compile(r"[a-z0-9]+")
_ABOVE = re.compile(r"\b(all|none|both|neither)\s+(of\s+)?(the\s+)?(above|these|of them)\b", re.I)
_NUMBER = re.compile(r"^\s*[-+$€£]?\s*(\d+(?:[.,]\d+)*)\s*(%|[a-z]{0,3}\.?)\s*$", re.I)
_STOP = frozenset(
    {"a", "an", "the", "of", "to", "in", "on", "for", "and", "or", "is", "are", "was", "were",
     "be", "by", "with", "as", "at", "from", "that", "this", "it", "which", "what", "who",
     "whom", "whose", "when", "where", "why", "how", "not", "no", "do", "does", "did"}
)  # fmt: skip


def mc_views(dataset: Dataset) -> tuple[str, ...]:
    """The views of ``dataset``'s items (``MC_VIEWS``); raises for other tasks."""
    if not dataset.task.multiple_choice:
        raise ParameterError(
            f"Option features need a multiple-choice dataset (task 'mcq'); {dataset.name!r} "
            f"has task {dataset.task.name!r}."
        )
    return MC_VIEWS


@dataclass
class OptionBlocks:
    """``X`` of shape ``(n, K * d)``: ``K`` option blocks of ``d`` columns each.

    Attributes
    ----------
    X : ndarray of float64
        Column 0 of each block is 1 for a real option, 0 for padding.
    n_features : int
        ``d``, the indicator column included.
    n_blocks : int
        ``K``.
    columns : list of str
        The names of a block's ``d`` columns.
    view : str
    n_options : ndarray of int64
        Options per item.
    """

    X: np.ndarray
    n_features: int
    n_blocks: int
    columns: list[str]
    view: str
    n_options: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, np.int64))

    def block_view(self) -> np.ndarray:
        """``X`` as ``(n, K, d)`` (a view, not a copy)."""
        return self.X.reshape(len(self.X), self.n_blocks, self.n_features)


class OptionFeaturizer:
    """Option blocks of multiple-choice items for the views in :data:`MC_VIEWS`.

    Parameters
    ----------
    features : {"minilm", "lexical"} or a model folder, default="minilm"
        ``lexical``: the length, overlap, numeric and position cues only (no torch);
        otherwise a sentence encoder (see :class:`~spurious.features.EncoderFeaturizer`)
        adds option and question embeddings, PCA-reduced.
    n_components : int, default=32
        PCA dimensions of each embedding block (option; question x option).
    random_state : int, default=0
        Seed of the PCA's randomized solver.
    cache_dir : path, None or False
        The encoder's embedding cache (``None``: the default one).

    Examples
    --------
    >>> from spurious.data.synthetic_mcq import make_mcq_artifacts
    >>> ds = make_mcq_artifacts(n=40, random_state=0).dataset
    >>> blocks = OptionFeaturizer("lexical").fit(ds).transform(ds, "choices_only")
    >>> blocks.X.shape == (40, 4 * blocks.n_features), blocks.columns[0]
    (True, 'is_option')
    """

    def __init__(
        self,
        features: str = "minilm",
        n_components: int = 32,
        random_state: int = 0,
        cache_dir: Any = None,
    ) -> None:
        self.features = features
        self.n_components = n_components
        self.random_state = random_state
        self.cache_dir = cache_dir

    # -- public ------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        """JSON description (provenance, cache keys)."""
        return {
            "kind": "mcq_options",
            "features": self.features,
            "n_components": int(self.n_components),
            "random_state": int(self.random_state),
        }

    @property
    def uses_encoder(self) -> bool:
        return self.features != "lexical"

    def fit(self, dataset: Dataset) -> OptionFeaturizer:
        """Fit the PCA of the embedding blocks on ``dataset``'s options (unsupervised)."""
        mc_views(dataset)
        self._pcas: dict[str, Any] = {}
        if self.uses_encoder:
            q, o, _ = self._embeddings(dataset)
            self._pcas["option"] = self._pca(o)
            self._pcas["product"] = self._pca(q[_owner(dataset)] * o)
            self._pcas["question"] = self._pca(q, min(8, self.n_components))
        return self

    def transform(
        self, dataset: Dataset, view: str, *, n_blocks: int | None = None, progress: bool = False
    ) -> OptionBlocks:
        """The option blocks of ``dataset`` seen through ``view``.

        Parameters
        ----------
        dataset : Dataset
            Multiple-choice items.
        view : {"full", "choices_only", "question_only"}
        n_blocks : int, optional
            ``K`` (default: the most options of an item here); several splits fed to
            one model need the same ``K``.
        """
        if view not in mc_views(dataset):
            raise ParameterError(
                f"The 'view' parameter must be one of {list(MC_VIEWS)} for multiple-choice "
                f"items. Got {view!r} instead."
            )
        if not hasattr(self, "_pcas"):
            raise SchemaError("OptionFeaturizer.transform was called before fit.")
        k = dataset.frame["options"].map(len).to_numpy(dtype=np.int64)
        K = int(n_blocks or k.max())
        if k.max() > K or K > MAX_OPTIONS:
            raise ParameterError(
                f"The 'n_blocks' parameter must be between the most options of an item "
                f"({int(k.max())}) and {MAX_OPTIONS}. Got {n_blocks!r}."
            )
        emb = self._embeddings(dataset, progress=progress) if self.uses_encoder else None
        cols, names = self._columns(dataset, view, emb)
        owner, pos = _owner(dataset), _positions(dataset)
        d = cols.shape[1] + 1
        Z = np.zeros((len(dataset), K, d))
        Z[owner, pos, 0] = 1.0
        Z[owner, pos, 1:] = cols
        return OptionBlocks(Z.reshape(len(dataset), K * d), d, K, ["is_option", *names], view, k)

    # -- internals ---------------------------------------------------------------------
    def _embeddings(self, dataset: Dataset, progress: bool = False) -> tuple[Any, ...]:
        from spurious.features import make_featurizer

        enc = make_featurizer(self.features, cache_dir=self.cache_dir)
        questions = _question_texts(dataset)
        options = [o for opts in dataset.frame["options"] for o in opts]
        q = enc.embed_texts(questions, progress=progress, what="questions")
        o = enc.embed_texts(options, progress=progress, what="options")
        return _unit(q), _unit(o), None

    def _pca(self, X: np.ndarray, n: int | None = None) -> Any:
        from sklearn.decomposition import PCA

        n = min(n or self.n_components, X.shape[1], max(len(X) - 1, 1))
        return PCA(n, svd_solver="randomized", random_state=self.random_state).fit(X)

    def _columns(
        self, dataset: Dataset, view: str, emb: tuple[np.ndarray, ...] | None
    ) -> tuple[np.ndarray, list[str]]:
        owner, pos = _owner(dataset), _positions(dataset)
        k = dataset.frame["options"].map(len).to_numpy(dtype=np.int64)
        onehot = np.zeros((len(owner), MAX_OPTIONS))
        onehot[np.arange(len(owner)), pos] = 1.0
        pos_names = [f"position_{chr(65 + j)}" for j in range(MAX_OPTIONS)]
        if view == "question_only":
            qlen = np.log1p([len(q.split()) for q in _question_texts(dataset)])
            item = [np.ones(len(dataset)), k / MAX_OPTIONS, qlen / 5]
            item_names = ["1", "n_options", "log_question_words"]
            if emb is not None:
                qp = self._pcas["question"].transform(emb[0])
                item += list(qp.T)
                item_names += [f"question_pc{j}" for j in range(qp.shape[1])]
            items = np.column_stack(item)[owner]  # (n_cand, m)
            cross = (onehot[:, :, None] * items[:, None, :]).reshape(len(owner), -1)
            names = [f"{p}*{m}" for p in pos_names for m in item_names]
            return cross, names
        opts = [o for opts in dataset.frame["options"] for o in opts]
        feats, names = _option_cues(opts, owner, k)
        feats, names = [onehot, *feats], [*pos_names, *names]
        if emb is not None:
            q, o, _ = emb
            feats += [_odd_one_out(o, owner, k)]
            names += ["option_cosine_to_others"]
            feats += [_within_z(feats[-1][:, 0], owner)[:, None]]
            names += ["option_cosine_to_others_z"]
            po = self._pcas["option"].transform(o)
            feats += [po]
            names += [f"option_pc{j}" for j in range(po.shape[1])]
        if view == "full":
            qwords = [_words(t) for t in _question_texts(dataset)]
            overlap = np.array(
                [_jaccard(qwords[i], _words(t)) for i, t in zip(owner, opts, strict=True)]
            )
            feats += [overlap[:, None], _within_z(overlap, owner)[:, None]]
            names += ["question_overlap", "question_overlap_z"]
            if emb is not None:
                q, o, _ = emb
                cos = (q[owner] * o).sum(axis=1)
                pp = self._pcas["product"].transform(q[owner] * o)
                feats += [cos[:, None], _within_z(cos, owner)[:, None], pp]
                names += ["question_cosine", "question_cosine_z"]
                names += [f"question_x_option_pc{j}" for j in range(pp.shape[1])]
        return np.column_stack(feats), names


# -- per-option cues --------------------------------------------------------------------


def _option_cues(
    opts: list[str], owner: np.ndarray, k: np.ndarray
) -> tuple[list[np.ndarray], list[str]]:
    chars = np.array([len(o) for o in opts], dtype=np.float64)
    words = np.array([len(o.split()) for o in opts], dtype=np.float64)
    longest = _is_extreme(chars, owner, np.max)
    shortest = _is_extreme(chars, owner, np.min)
    rank = _within_rank(chars, owner, k)
    above = np.array([bool(_ABOVE.search(o)) for o in opts], dtype=np.float64)
    nums = np.array([_number(o) for o in opts])
    is_num = ~np.isnan(nums)
    n_num = np.bincount(owner, weights=is_num.astype(float), minlength=len(k))[owner] >= 2
    filled = np.where(is_num, nums, np.nan)
    num_max = (
        n_num & is_num & _is_extreme(np.nan_to_num(filled, nan=-np.inf), owner, np.max).astype(bool)
    )
    num_min = (
        n_num & is_num & _is_extreme(np.nan_to_num(filled, nan=np.inf), owner, np.min).astype(bool)
    )
    wsets = [_words(o) for o in opts]
    sim = _lexical_similarity_to_others(wsets, owner)
    feats = [
        np.log1p(chars)[:, None],
        _within_z(chars, owner)[:, None],
        longest[:, None],
        shortest[:, None],
        np.log1p(words)[:, None],
        rank[:, None],
        above[:, None],
        is_num[:, None].astype(float),
        num_max[:, None].astype(float),
        num_min[:, None].astype(float),
        sim[:, None],
        _within_z(sim, owner)[:, None],
    ]
    names = [
        "log_chars", "chars_z", "is_longest", "is_shortest", "log_words", "length_rank",
        "all_none_of_the_above", "is_number", "is_largest_number", "is_smallest_number",
        "word_overlap_with_others", "word_overlap_with_others_z",
    ]  # fmt: skip
    return feats, names


def _owner(dataset: Dataset) -> np.ndarray:
    k = dataset.frame["options"].map(len).to_numpy(dtype=np.int64)
    return np.repeat(np.arange(len(k)), k)


def _positions(dataset: Dataset) -> np.ndarray:
    k = dataset.frame["options"].map(len).to_numpy(dtype=np.int64)
    return np.concatenate([np.arange(j) for j in k])


def _question_texts(dataset: Dataset) -> list[str]:
    qs = dataset.frame["question"].tolist()
    if "context" in dataset.frame:
        return [f"{c} {q}".strip() for c, q in zip(dataset.frame["context"], qs, strict=True)]
    return qs


def _unit(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)


def _within_z(v: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """``v`` centred and scaled within each item (0 where an item's values are equal)."""
    n = owner.max() + 1
    cnt = np.bincount(owner, minlength=n)
    mean = np.bincount(owner, weights=v, minlength=n) / cnt
    var = np.bincount(owner, weights=(v - mean[owner]) ** 2, minlength=n) / cnt
    sd = np.sqrt(var)[owner]
    return np.where(sd > 1e-12, (v - mean[owner]) / np.where(sd > 1e-12, sd, 1.0), 0.0)


def _is_extreme(v: np.ndarray, owner: np.ndarray, fn: Any) -> np.ndarray:
    """1 for the item's unique max (``np.max``) or min (``np.min``) value, else 0."""
    n = owner.max() + 1
    ext = np.full(n, -np.inf if fn is np.max else np.inf)
    (np.maximum if fn is np.max else np.minimum).at(ext, owner, v)
    hit = v == ext[owner]
    ties = np.bincount(owner, weights=hit.astype(float), minlength=n)[owner]
    return (hit & (ties == 1)).astype(np.float64)


def _within_rank(v: np.ndarray, owner: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Rank of ``v`` within its item scaled to [0, 1] (ties share the lower rank)."""
    below = np.zeros(len(v))
    start = np.concatenate([[0], np.cumsum(k)[:-1]])
    for s, kk in zip(start, k, strict=True):
        seg = v[s : s + kk]
        below[s : s + kk] = (seg[:, None] > seg[None, :]).sum(axis=1) / max(kk - 1, 1)
    return below


def _odd_one_out(o: np.ndarray, owner: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Cosine of each option embedding with the mean of its item's other options."""
    n = owner.max() + 1
    total = np.zeros((n, o.shape[1]))
    np.add.at(total, owner, o)
    others = (total[owner] - o) / np.maximum(k[owner] - 1, 1)[:, None]
    norm = np.maximum(np.linalg.norm(others, axis=1), 1e-12)
    return ((o * others).sum(axis=1) / norm)[:, None]


def _lexical_similarity_to_others(wsets: list[frozenset[str]], owner: np.ndarray) -> np.ndarray:
    """Mean word Jaccard of each option with the other options of its item."""
    out = np.zeros(len(wsets))
    # owner is sorted (options are laid out item by item): one segment per item.
    bounds = np.flatnonzero(np.diff(np.concatenate([[-1], owner, [owner.max() + 1]])))
    for s, e in itertools.pairwise(bounds):
        for i in range(s, e):
            sims = [_jaccard(wsets[i], wsets[j]) for j in range(s, e) if j != i]
            out[i] = float(np.mean(sims)) if sims else 0.0
    return out


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def _number(text: str) -> float:
    m = _NUMBER.match(text)
    if not m:
        return np.nan
    try:
        return float(m.group(1).replace(",", ""))
    except ValueError:
        return np.nan
