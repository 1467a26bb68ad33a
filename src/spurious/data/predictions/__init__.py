"""A model's predictions on a dataset, read from a file and aligned to the dataset.

Supported files:

- SQuAD's official prediction JSON ``{question id: answer text}`` (also any JSON
  object ``{id: label}`` for classification);
- JSONL, a JSON array of objects, CSV or TSV with an id column (``id``, or the column
  named by ``id_field``) and a prediction column (:data:`VALUE_FIELDS`, or the column
  named by ``value_field``). Classification labels may be label names or integer ids.

Three kinds of prediction (``kind``):

- ``"labels"``: the predicted label (or answer text, for QA);
- ``"correctness"``: only whether the model was right, 0/1 or true/false per example
  (a column :data:`CORRECTNESS_FIELDS`, JSON booleans, or ``kind="correctness"``);
- ``"probabilities"``: one probability per label, as one column per label (named by
  the label, or ``prob_<label>`` / ``p_<label>``), a list column
  (:data:`PROBABILITY_FIELDS`, in the dataset's label order) or a JSON ``{id: [p, ...]}``
  / ``{id: {label: p}}``; the prediction is the most probable label.

The gold column (:data:`GOLD_FIELDS`: ``label``, ``gold_label`` ...) is never taken for
the prediction: a file that carries the gold label beside a prediction column with
another name is an error that names the columns searched for, until ``value_field``
names the prediction. Predictions that equal the gold label on more than 99.9% of the
rows (:data:`GOLD_LIKE_SHARE`; files of at least :data:`GOLD_LIKE_MIN_ROWS` rows) are
loaded with a warning.

**Alignment.** By default (``align="id"``) every prediction belongs to an example of
the dataset by id (an unknown id is an error that says how many, with a few examples);
ids are the file's ids when the data has an id column, else the 12-character content
hashes the loader gives every row (``spurious ids DATA --task ...`` lists them). A file
without ids can be aligned by row order instead (``align="rows"``): it must have as many
rows as the dataset, and a text column that the dataset also has (``premise``,
``hypothesis``, ``question`` ...) must match row by row; the first mismatch is an error
that names the row.

An example without a prediction is scored as wrong, as the official SQuAD v1.1
evaluator scores an unanswered question 0: a warning gives the count,
:attr:`PredictionSet.n_missing` records it, and ``on_missing="error"`` makes it an
error instead.

Modules: :mod:`~spurious.data.predictions.base` (the column names searched for and
:class:`PredictionSet`), :mod:`~spurious.data.predictions.files` (reading the files,
:func:`load_predictions`), :mod:`~spurious.data.predictions.align` (coverage and row
order, :func:`align_predictions`) and :mod:`~spurious.data.predictions.kinds` (labels,
correctness or probabilities to one value per row). Their public names are importable
from here.
"""

from __future__ import annotations

from spurious.data.predictions.align import align_predictions
from spurious.data.predictions.base import (
    CORRECTNESS_FIELDS,
    GOLD_FIELDS,
    GOLD_LIKE_MIN_ROWS,
    GOLD_LIKE_SHARE,
    KINDS,
    PROBABILITY_FIELDS,
    PROBABILITY_PREFIXES,
    VALUE_FIELDS,
    WRONG_ANSWER,
    PredictionSet,
)
from spurious.data.predictions.files import load_predictions

__all__ = [
    "CORRECTNESS_FIELDS",
    "GOLD_FIELDS",
    "GOLD_LIKE_MIN_ROWS",
    "GOLD_LIKE_SHARE",
    "KINDS",
    "PROBABILITY_FIELDS",
    "PROBABILITY_PREFIXES",
    "VALUE_FIELDS",
    "WRONG_ANSWER",
    "PredictionSet",
    "align_predictions",
    "load_predictions",
]
