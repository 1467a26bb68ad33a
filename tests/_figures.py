"""Reading committed benchmark results and the documents that quote them.

Shared by ``test_docs_figures.py`` and ``test_docs_figures_readme*.py`` (the README) and
``test_docs_figures_methods.py`` (the method pages): a result file is read once, a value
is found by its key path, and a document is compared with whitespace normalised, since
prose wraps anywhere. ``runs``, ``fmt`` and ``assert_quoted`` build and check the texts a
document must hold, leaving out figures that sit exactly halfway at the printed precision.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


@cache
def result(name: str) -> Any:
    """The parsed JSON of ``bench/results/<name>``."""
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def value(name: str, path: tuple[Any, ...]) -> Any:
    """The value at ``path`` (dict keys and list indices) in the result file ``name``."""
    doc = result(name)
    for key in path:
        doc = doc[key]
    return doc


def normalised(path: Path) -> str:
    """The text of ``path`` with every run of whitespace (line breaks too) one space."""
    return " ".join(path.read_text(encoding="utf-8").split())


def runs(*pieces: str | None) -> list[str]:
    """The texts a document must hold, from pieces of one sentence or table row.

    ``None`` pieces (see :func:`fmt`) cut the sentence: what stands between two cuts
    must appear as written, what was cut is not checked.
    """
    out, current = [], ""
    for piece in pieces:
        if piece is None:
            out.append(current)
            current = ""
        else:
            current += piece
    out.append(current)
    return [text for text in out if any(c.isalnum() for c in text)]


def fmt(x: float, spec: str) -> str | None:
    """``format(x, spec)``, or ``None`` when ``x`` sits exactly halfway at the printed
    precision: a result file that stores 0.5635 cannot say whether 0.563 or 0.564 is
    the right rounding, so that figure is not checked."""
    decimals = re.search(r"\.(\d+)[f%]", spec)
    scaled = abs(x) * (100 if spec.endswith("%") else 1) * 10 ** int(decimals[1] if decimals else 0)
    if abs(scaled - int(scaled) - 0.5) < 1e-6:
        return None
    return format(x, spec)


def assert_quoted(path: Path, texts: list[str], one_line: bool, source: str) -> None:
    """Fail unless ``path`` (bold markup dropped) holds every text, on one of its lines
    when ``one_line``; the message names what is missing (and the closest line)."""
    assert texts, f"nothing left to check ({source})"
    if not one_line:
        prose = normalised(path).replace("**", "")
        absent = [t for t in texts if t not in prose]
        assert not absent, f"{path.name} should say {absent} ({source})"
        return
    lines = path.read_text(encoding="utf-8").replace("**", "").splitlines()
    if not any(all(t in line for t in texts) for line in lines):
        closest = max(lines, key=lambda line: sum(t in line for t in texts))
        absent = [t for t in texts if t not in closest]
        raise AssertionError(
            f"no line of {path.name} holds {texts} ({source}); the closest lacks {absent}"
        )


#: (what, result file, texts, on one line)
Check = tuple[str, str, list[str], bool]


def say(name: str, what: str, *pieces: str | None) -> Check:
    """A sentence of the document: ``pieces`` joined (``None`` cuts), wherever the prose wraps."""
    return (what, name, runs(*pieces), False)


def row(name: str, what: str, *pieces: str | None) -> Check:
    """A table row of the document: ``pieces`` joined (``None`` cuts), on one line."""
    return (what, name, runs(*pieces), True)


def parametrize_checks(sections: dict[str, Callable[[], list[Check]]]) -> pytest.MarkDecorator:
    """Parametrize ``(section, what, name, texts, one_line)`` over the checks each section's
    builder returns, with ``section: what`` as ids. A builder that fails (a result file
    re-run with another layout) becomes one failing check naming the error instead of
    stopping the collection; a check whose figures all sat halfway (no digit left) is
    left out."""
    checks = []
    for section, build in sections.items():
        try:
            built = [c for c in build() if any(map(str.isdigit, "".join(c[2])))]
        except (KeyError, IndexError, StopIteration, TypeError, ValueError) as error:
            built = [("builder", "its result file", [f"<no checks built: {error!r}>"], False)]
        checks += [(section, *c) for c in built]
    return pytest.mark.parametrize(
        ("section", "what", "name", "texts", "one_line"),
        checks,
        ids=[f"{c[0]}: {c[1]}" for c in checks],
    )
