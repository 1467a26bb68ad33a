"""Question-only and passage-only baselines of extractive QA (Kaushik & Lipton 2018).

Extractive QA as answer-sentence selection (:mod:`spurious.features.qa_sentences`): a
conditional-logit probe picks the sentence holding the answer from partial views of the
item (:mod:`spurious.features.qa_views`), and each view's accuracy is judged against
chance with the model, folds and statistics of ``mc_leakage``.

- :mod:`~spurious.detectors.qa_partial_input.inputs`: candidates, view blocks, labels and
  article-grouped folds;
- :mod:`~spurious.detectors.qa_partial_input.analysis`: the registered ``qa_partial_input``.
"""

from spurious.detectors.qa_partial_input.analysis import QAPartialInput

__all__ = ["QAPartialInput"]
