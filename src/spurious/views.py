"""Views: which input fields a model may see (the full input or a partial input).

Partial-input models ("hypothesis-only", "question-only") measure how much of the
label leaks through part of the input (paper 003 Sec. 2, SSC vs PSC).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from spurious.data.tasks import Task, get_task
from spurious.exceptions import ParameterError


@dataclass(frozen=True)
class View:
    """A named, ordered subset of a task's text fields.

    Examples
    --------
    >>> v = get_view("nli", "hypothesis_only")
    >>> v.fields, v.is_partial
    (('hypothesis',), True)
    """

    name: str
    fields: tuple[str, ...]
    is_partial: bool

    def to_dict(self) -> dict[str, object]:
        """JSON form (used in cache keys and result params)."""
        return {"name": self.name, "fields": list(self.fields)}


def _single_name(field: str) -> str:
    return f"{field}_only"


def standard_views(task: str | Task) -> dict[str, View]:
    """The full view and one single-field view per text field of ``task``.

    Examples
    --------
    >>> list(standard_views("nli"))
    ['full', 'premise_only', 'hypothesis_only']
    """
    t = get_task(task) if isinstance(task, str) else task
    views = {"full": View("full", t.text_fields, is_partial=False)}
    if len(t.text_fields) > 1:
        for f in t.text_fields:
            views[_single_name(f)] = View(_single_name(f), (f,), is_partial=True)
    return views


def get_view(task: str | Task, view: str | View | Sequence[str]) -> View:
    """Resolve a view by name (``"hypothesis_only"``), by field list, or pass one through.

    Field lists name any subset of the task's text fields, e.g. ``["question"]``.
    """
    t = get_task(task) if isinstance(task, str) else task
    if isinstance(view, View):
        unknown = [f for f in view.fields if f not in t.text_fields]
        if unknown:
            raise ParameterError(
                f"View {view.name!r} uses field(s) {unknown} that task {t.name!r} lacks; "
                f"its fields are {list(t.text_fields)}."
            )
        return view
    views = standard_views(t)
    if isinstance(view, str):
        if view in views:
            return views[view]
        if view in t.text_fields:
            return views.get(_single_name(view), views["full"])
        raise ParameterError(
            f"The 'view' parameter must be one of {list(views)} (or a list of fields from "
            f"{list(t.text_fields)}) for task {t.name!r}. Got {view!r} instead."
        )
    fields = tuple(view)
    unknown = [f for f in fields if f not in t.text_fields]
    if not fields or unknown or len(set(fields)) != len(fields):
        raise ParameterError(
            f"The 'view' parameter must be a non-empty list of distinct fields from "
            f"{list(t.text_fields)} for task {t.name!r}. Got {list(fields)!r} instead."
        )
    ordered = tuple(f for f in t.text_fields if f in fields)
    if ordered == t.text_fields:
        return views["full"]
    name = _single_name(ordered[0]) if len(ordered) == 1 else "+".join(ordered)
    return View(name, ordered, is_partial=True)
