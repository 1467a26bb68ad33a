"""Lexical features: bag of words / tf-idf per text field, from scikit-learn.

Each field of a view gets its own vocabulary (a word in the premise and the same word
in the hypothesis are different features), and the blocks are stacked side by side.
A linear model on per-field blocks cannot relate the two texts, so two-field views also
get a *cross* block by default: the words of the second text that do not occur in the
first (the classic "unmatched words" NLI baseline feature).
Fitted on the training split only, so the evaluation split's vocabulary cannot leak.
"""

from __future__ import annotations

import re
from numbers import Integral
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

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
        blocks = [(f, dataset.texts(f)) for f in view.fields]
        if self.cross_features and len(view.fields) == 2:
            a, b = view.fields
            new_words = [
                _unmatched(ta, tb, self.lowercase)
                for ta, tb in zip(dataset.texts(a), dataset.texts(b), strict=True)
            ]
            blocks.append((f"{b}-not-in-{a}", new_words))
        return blocks


_TOKEN = re.compile(r"(?u)\b\w+\b")


def _unmatched(first: str, second: str, lowercase: bool) -> str:
    """Words of ``second`` that do not occur in ``first`` (``__none__`` if there are none)."""
    if lowercase:
        first, second = first.lower(), second.lower()
    seen = set(_TOKEN.findall(first))
    return " ".join(w for w in _TOKEN.findall(second) if w not in seen) or "__none__"
