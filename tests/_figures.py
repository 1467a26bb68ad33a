"""Reading committed benchmark results and the documents that quote them.

Shared by ``test_docs_figures.py`` (the README) and ``test_docs_figures_methods.py`` (the
method pages): a result file is read once, a value is found by its key path, and a
document is compared with whitespace normalised, since prose wraps anywhere.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

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
