"""Lexical features: bag of words / tf-idf per text field, from scikit-learn.

Each field of a view gets its own vocabulary (a word in the premise and the same word
in the hypothesis are different features), and the blocks are stacked side by side.
A linear model on per-field blocks cannot relate the two texts, so two-field views also
get a *cross* block by default: the words of the second text that do not occur in the
first (the classic "unmatched words" NLI baseline feature).
Fitted on the training split only, so the evaluation split's vocabulary cannot leak.

Cross-fitting refits the featurizer on every fold's training rows. Instead of tokenising
every text once per fold, :meth:`LexicalFeaturizer.count_block` counts the n-grams of a
block once for all rows (:class:`BlockCounts`), and :meth:`LexicalFeaturizer.block_features`
then builds any fold's vocabulary, idf and matrix from the training rows' counts alone,
equal to fitting on those rows and transforming (see :meth:`~LexicalFeaturizer.fit_rows`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from numbers import Integral
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer, TfidfVectorizer

from spurious.data.dataset import Dataset
from spurious.exceptions import FeatureError
from spurious.features.base import Featurizer, Matrix
from spurious.utils.validation import Interval, StrOptions, check_params
from spurious.views import View, get_view


class LexicalFeaturizer(Featurizer):
    """Bag-of-words or tf-idf n-gram features of each field in the view.

    Parameters
    ----------
    weighting : {"tfidf", "binary", "count"}, default="tfidf"
    ngram_max : int, default=2
        Use n-grams from 1 to ``ngram_max``.
    min_df : int, default=2
        Ignore n-grams seen in fewer training examples.
    max_features : int, default=50000
        Largest vocabulary per field.
    lowercase : bool, default=True
    cross_features : bool, default=True
        For two-field views, add a block of second-field words absent from the first.

    Examples
    --------
    >>> import pandas as pd
    >>> from spurious.data import Dataset
    >>> ds = Dataset.from_frame(pd.DataFrame({
    ...     "premise": ["a dog runs", "a cat sits"], "hypothesis": ["nobody runs", "a cat"],
    ...     "label": ["contradiction", "entailment"]}), "nli")
    >>> X = LexicalFeaturizer(min_df=1, ngram_max=1).fit_transform(ds, "hypothesis_only")
    >>> X.shape
    (2, 4)
    """

    name: ClassVar[str] = "lexical"
    stateless: ClassVar[bool] = False
    _parameter_constraints: ClassVar[dict] = {
        "weighting": [StrOptions({"tfidf", "binary", "count"})],
        "ngram_max": [Interval(Integral, 1, 5, closed="both")],
        "min_df": [Interval(Integral, 1, None, closed="left")],
        "max_features": [Interval(Integral, 1, None, closed="left")],
        "lowercase": ["boolean"],
        "cross_features": ["boolean"],
    }

    def __init__(
        self,
        weighting: str = "tfidf",
        ngram_max: int = 2,
        min_df: int = 2,
        max_features: int = 50000,
        lowercase: bool = True,
        cross_features: bool = True,
    ) -> None:
        self.weighting = weighting
        self.ngram_max = ngram_max
        self.min_df = min_df
        self.max_features = max_features
        self.lowercase = lowercase
        self.cross_features = cross_features

    def _vectorizer(self):
        kwargs = dict(
            ngram_range=(1, self.ngram_max),
            min_df=self.min_df,
            max_features=self.max_features,
            lowercase=self.lowercase,
            # Keep one-character tokens and punctuation-free words ("a", "I"): short
            # function words are exactly the artifacts we look for.
            token_pattern=r"(?u)\b\w+\b",
            dtype=np.float32,
        )
        if self.weighting == "tfidf":
            return TfidfVectorizer(sublinear_tf=True, **kwargs)
        return CountVectorizer(binary=self.weighting == "binary", **kwargs)

    def fit(self, dataset: Dataset, view: str | View) -> LexicalFeaturizer:
        """Learn one vocabulary per field of ``view`` from ``dataset``."""
        check_params(self._parameter_constraints, self.get_params(), type(self).__name__)
        v = get_view(dataset.task, view)
        if not hasattr(self, "vectorizers_"):
            self.vectorizers_: dict[str, object] = {}
        for f, texts in self._blocks(dataset, v):
            vec = self._vectorizer()
            try:
                vec.fit(texts)
            except ValueError as e:  # e.g. "empty vocabulary" when min_df is too high
                raise FeatureError(
                    f"Cannot build a vocabulary for field {f!r} of {dataset.name!r} "
                    f"(min_df={self.min_df}): {e}"
                ) from None
            self.vectorizers_[f] = vec
        return self

    def _transform(self, dataset: Dataset, view: View, *, progress: bool) -> Matrix:
        missing = [f for f in view.fields if f not in getattr(self, "vectorizers_", {})]
        if self.cross_features and len(view.fields) == 2:
            cross = f"{view.fields[1]}-not-in-{view.fields[0]}"
            missing += [cross] if cross not in getattr(self, "vectorizers_", {}) else []
        if missing:
            raise FeatureError(
                f"LexicalFeaturizer was not fitted on field(s) {missing}; call "
                f"fit(train_dataset, {view.name!r}) first."
            )
        blocks = [self.vectorizers_[f].transform(t) for f, t in self._blocks(dataset, view)]
        return sp.hstack(blocks, format="csr", dtype=np.float32)

    def _blocks(self, dataset: Dataset, view: View) -> list[tuple[str, list[str]]]:
        """(block name, texts) for every feature block of ``view``."""
        return [(b, self._block_texts(dataset, b)) for b in self.block_names(view)]

    def block_names(self, view: View) -> list[str]:
        """Names of the feature blocks of ``view``, in column order.

        One per field, plus ``"<second>-not-in-<first>"`` for two-field views with
        ``cross_features``. A block depends on its texts only, so two views sharing a
        field (``full`` and ``premise_only``) share that block.
        """
        names = list(view.fields)
        if self.cross_features and len(view.fields) == 2:
            a, b = view.fields
            names.append(f"{b}-not-in-{a}")
        return names

    def _block_texts(self, dataset: Dataset, block: str) -> list[str]:
        if "-not-in-" not in block:
            return dataset.texts(block)
        b, a = block.split("-not-in-")
        return [
            _unmatched(ta, tb, self.lowercase)
            for ta, tb in zip(dataset.texts(a), dataset.texts(b), strict=True)
        ]

    # -- cross-fitting: tokenise once, fit per row subset ------------------------------
    def count_block(self, dataset: Dataset, block: str) -> BlockCounts:
        """Count every n-gram of one block in every row of ``dataset`` (one tokenisation).

        Parameters
        ----------
        dataset : Dataset
        block : str
            A name from :meth:`block_names`.

        Returns
        -------
        BlockCounts
            Counts over the vocabulary of *all* rows; :meth:`block_features` restricts
            them to what a given set of training rows would have learned.
        """
        check_params(self._parameter_constraints, self.get_params(), type(self).__name__)
        # The fitted vectorizer's tokenisation, with nothing pruned: pruning depends on
        # the training rows and happens per fold in block_features.
        vec = CountVectorizer(
            ngram_range=(1, self.ngram_max),
            lowercase=self.lowercase,
            token_pattern=r"(?u)\b\w+\b",
            dtype=np.float32,
        )
        try:
            counts = vec.fit_transform(self._block_texts(dataset, block))
        except ValueError as e:  # "empty vocabulary"
            raise FeatureError(
                f"Cannot build a vocabulary for field {block!r} of {dataset.name!r} "
                f"(min_df={self.min_df}): {e}"
            ) from None
        # Columns in sorted n-gram order, as the fitted vectorizers have them, so that a
        # subset of columns is a fitted vocabulary in its own column order; sorted within
        # each row too, as transform() leaves them (row norms then sum in the same order).
        counts = sp.csr_matrix(counts)
        counts.sort_indices()
        return BlockCounts(block, counts, dataset.name)

    def block_features(self, counts: BlockCounts, train_rows: np.ndarray) -> sp.csr_matrix:
        """Features of every row of one block, as fitted on ``train_rows`` only.

        Equal (to the bit) to fitting this featurizer's vectorizer on the texts of
        ``train_rows`` and transforming every row: the vocabulary (``min_df``,
        ``max_features`` with the vectorizer's own tie order) and the idf come from the
        training rows' counts; other rows only contribute their counts of that
        vocabulary.

        Parameters
        ----------
        counts : BlockCounts
            From :meth:`count_block` on the dataset the rows index.
        train_rows : ndarray of int
            Row indices the vocabulary and the idf are learned from.

        Returns
        -------
        scipy.sparse.csr_matrix
            ``(n_rows, vocabulary)`` float32.
        """
        C = counts.counts
        train = C[np.asarray(train_rows, dtype=np.int64)]
        if self.min_df > train.shape[0]:  # the vectorizer's own check (max_df = all rows)
            raise FeatureError(
                f"Cannot build a vocabulary for field {counts.block!r} of "
                f"{counts.dataset_name!r} (min_df={self.min_df}): max_df corresponds to < "
                "documents than min_df"
            )
        if self.weighting == "binary":
            train.data.fill(1)
        df = np.bincount(train.indices, minlength=C.shape[1])
        mask = df >= self.min_df  # min_df >= 1: drops n-grams absent from the rows too
        if mask.sum() > self.max_features:
            # The vectorizer's own rule: most frequent first, ties in its sort order; the
            # float32 sums and the sorted column order make the input to argsort identical.
            tfs = np.asarray(train.sum(axis=0), dtype=np.float32).ravel()
            keep = (-tfs[mask]).argsort()[: self.max_features]
            new_mask = np.zeros(len(mask), dtype=bool)
            new_mask[np.flatnonzero(mask)[keep]] = True
            mask = new_mask
        kept = np.flatnonzero(mask)
        if len(kept) == 0:
            raise FeatureError(
                f"Cannot build a vocabulary for field {counts.block!r} of "
                f"{counts.dataset_name!r} (min_df={self.min_df}): After pruning, no terms "
                "remain. Try a lower min_df or a higher max_df."
            )
        X = _select_columns(C, kept)
        if self.weighting == "binary":
            X.data.fill(1)
        if self.weighting == "tfidf":
            tfidf = TfidfTransformer(sublinear_tf=True).fit(X[np.asarray(train_rows)])
            X = sp.csr_matrix(tfidf.transform(X, copy=False))
        return X

    def fit_rows(
        self, blocks: dict[str, BlockCounts], view: View, train_rows: np.ndarray
    ) -> sp.csr_matrix:
        """Features of every row for ``view``, fitted on ``train_rows`` (see
        :meth:`block_features`): ``clone(self).fit(data.subset(train_rows), view)
        .transform(data, view)`` without tokenising again.

        Parameters
        ----------
        blocks : dict
            ``{block name: BlockCounts}`` covering :meth:`block_names` of ``view``.
        view : View
        train_rows : ndarray of int
        """
        mats = [self.block_features(blocks[b], train_rows) for b in self.block_names(view)]
        return sp.hstack(mats, format="csr", dtype=np.float32)


@dataclass(frozen=True, eq=False)
class BlockCounts:
    """N-gram counts of one feature block for every row of a dataset.

    Attributes
    ----------
    block : str
        The block name (a field, or ``"<second>-not-in-<first>"``).
    counts : scipy.sparse.csr_matrix
        ``(n_rows, n_grams)`` float32 counts, columns in sorted n-gram order, over every
        n-gram of the block (nothing pruned).
    dataset_name : str
        For error messages.
    """

    block: str
    counts: sp.csr_matrix
    dataset_name: str = "dataset"

    @property
    def nbytes(self) -> int:
        """Memory held by the counts."""
        c = self.counts
        return int(c.data.nbytes + c.indices.nbytes + c.indptr.nbytes)


def _select_columns(C: sp.csr_matrix, kept: np.ndarray) -> sp.csr_matrix:
    """``C[:, kept]`` for sorted ``kept``, renumbered, in two vectorised passes.

    Rows keep their sorted column order, as the vectorizer's own output does (row norms
    then sum in the same order).
    """
    new_index = np.full(C.shape[1], -1, dtype=np.int32)
    new_index[kept] = np.arange(len(kept), dtype=np.int32)
    mapped = new_index[C.indices]
    keep = mapped >= 0
    # Kept entries before each row start = the new row pointers.
    indptr = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])[C.indptr]
    return sp.csr_matrix(
        (C.data[keep], mapped[keep], indptr.astype(np.int32 if indptr[-1] < 2**31 else np.int64)),
        shape=(C.shape[0], len(kept)),
    )


_TOKEN = re.compile(r"(?u)\b\w+\b")


def _unmatched(first: str, second: str, lowercase: bool) -> str:
    """Words of ``second`` that do not occur in ``first`` (``__none__`` if there are none)."""
    if lowercase:
        first, second = first.lower(), second.lower()
    seen = set(_TOKEN.findall(first))
    return " ".join(w for w in _TOKEN.findall(second) if w not in seen) or "__none__"
