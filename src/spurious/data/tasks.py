"""Tasks and their canonical fields.

A task fixes which text fields a row has and what its label is. Loaders map the
columns of a source file onto these names (see :data:`FIELD_ALIASES`).
"""

from __future__ import annotations

from dataclasses import dataclass

from spurious.exceptions import ParameterError
from spurious.utils.registry import Registry


@dataclass(frozen=True)
class Task:
    """A supervised task: its text fields, and its default label names (if fixed)."""

    name: str
    text_fields: tuple[str, ...]
    default_labels: tuple[str, ...] | None = None
    #: Which text field was written by annotators given the label (the "elicited" one).
    elicited_field: str | None = None
    has_labels: bool = True
    #: Items choose one of their own ``options`` (a list column); the label is the gold
    #: option's letter and position (see :mod:`spurious.data.mcq`).
    multiple_choice: bool = False


#: name -> :class:`Task`.
TASKS: Registry[Task] = Registry("task")
for _task in (
    Task(
        "nli",
        ("premise", "hypothesis"),
        # GLUE / HF order, so integer labels 0/1/2 from HF datasets map correctly.
        ("entailment", "neutral", "contradiction"),
        elicited_field="hypothesis",
    ),
    Task("pair", ("text_a", "text_b")),
    Task("text", ("text",)),
    # QA rows are labelled by answer spans, not by a class.
    Task("qa", ("question", "context"), has_labels=False),
    # Multiple choice: a question, 2-10 options (a list column, not a text field: models
    # score each option) and the gold option's letter (label) and position (label_id).
    Task("mcq", ("question",), multiple_choice=True),
):
    TASKS.register(_task.name, _task)
del _task

#: Column names recognised automatically when the canonical name is absent
#: (SNLI/MNLI originals, CAD TSVs, GLUE TSVs, QQP/MRPC).
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "premise": ("sentence1", "s1", "premise_text"),
    "hypothesis": ("sentence2", "s2", "hypothesis_text"),
    "text_a": ("sentence1", "question1", "text1", "#1 String"),
    "text_b": ("sentence2", "question2", "text2", "#2 String"),
    "text": ("sentence", "review", "document"),
    "label": ("gold_label", "labels", "is_duplicate", "Quality"),
    "id": ("pairID", "idx", "uid", "guid"),
    "annotator_labels": ("annotator_labels",),
    "group": ("captionID", "promptID"),
}

#: Label values that mean "no gold label" (SNLI writes "-" where annotators disagreed).
NO_GOLD_LABELS: frozenset[str] = frozenset({"-", ""})


def get_task(name: str) -> Task:
    """Return the :class:`Task` called ``name``.

    Examples
    --------
    >>> get_task("nli").text_fields
    ('premise', 'hypothesis')
    """
    if not isinstance(name, str) or name not in TASKS:
        # The parameter's name in the message: users reach this through task=/--task.
        raise ParameterError(
            f"The 'task' parameter must be one of {TASKS.names()}. Got {name!r} instead."
        )
    return TASKS[name]
