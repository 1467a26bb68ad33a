"""The analyses' catalog: what ``spurious analyses`` lists, without importing them.

Listing the analyses from the registry imports every analysis module, and with them
scikit-learn, SciPy and pandas (about 2-3 s on a 2-core machine). The catalog is the same
listing written once into the package (``analyses.json``: name, kind, description,
requirements, optional dependencies); ``spurious analyses`` reads it when no plugin is
installed, and the test suite checks that it is what the registry gives
(``python -m spurious.catalog`` rewrites it after an analysis changes).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from spurious._version import __version__

__all__ = ["CATALOG_PATH", "build_catalog", "extra_missing", "read_catalog", "write_catalog"]

#: The catalog shipped in the package.
CATALOG_PATH = Path(__file__).with_name("analyses.json")


def build_catalog() -> dict[str, Any]:
    """The catalog from the live registry (imports every analysis module).

    Examples
    --------
    >>> "mc_leakage" in {a["name"] for a in build_catalog()["analyses"]}
    True
    """
    from spurious.analysis import load_analyses

    return {
        "version": __version__,
        "analyses": [
            {
                "name": name,
                "kind": cls.kind,
                "description": cls.description,
                "requires": cls.requires.needs(),
                "extras": [list(pair) for pair in cls.requires.extras],
            }
            for name, cls in load_analyses().items()
        ],
    }


def read_catalog() -> dict[str, Any] | None:
    """The shipped catalog, or ``None`` when it is missing or from another version."""
    try:
        catalog = json.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return catalog if catalog.get("version") == __version__ else None


def extra_missing(extras: list[list[str]]) -> list[str]:
    """``pip install`` hints for the ``(module, extra)`` pairs not installed (as
    :meth:`spurious.analysis.Requirements.missing_extras`, without importing it)."""
    return [
        f"{module} is not installed (pip install 'spurious[{extra}]')"
        for module, extra in extras
        if importlib.util.find_spec(module) is None
    ]


def write_catalog(path: str | Path = CATALOG_PATH) -> Path:
    """Write the catalog (atomically) to ``path``."""
    from spurious.utils.io import atomic_write_json

    return atomic_write_json(Path(path), build_catalog())


if __name__ == "__main__":  # pragma: no cover - python -m spurious.catalog
    print(write_catalog(*sys.argv[1:2]))
