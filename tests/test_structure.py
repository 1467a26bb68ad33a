"""The house stays as built: small rooms, providers in one layer, optional stays optional.

The layering itself (no upward import, no circle) is checked by `lint-imports` in
`make lint`; these tests keep the other findings of issue 21 from coming back.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "spurious"
MAX_MODULE_LINES = 600
MAX_FUNCTION_BODY = 110  # lines after the docstring


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_no_module_over_the_limit():
    long = {
        str(p.relative_to(SRC)): n
        for p in _modules()
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_body_over_the_limit():
    long = {}
    for p in _modules():
        for node in ast.walk(ast.parse(p.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            body = node.body
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                body = body[1:]  # the docstring does not count
            if body and (n := node.end_lineno - body[0].lineno + 1) > MAX_FUNCTION_BODY:
                long[f"{p.relative_to(SRC)}::{node.name}"] = n
    assert not long, f"function bodies over {MAX_FUNCTION_BODY} lines: {long}"


def _python(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    return out.stdout.strip()


def test_artifact_kinds_do_not_depend_on_import_order():
    before = _python("import spurious.context as c; print(sorted(c.ARTIFACTS.names()))")
    after = _python(
        "import spurious.context as c, spurious.analysis as a; a.load_analyses(); "
        "print(sorted(c.ARTIFACTS.names()))"
    )
    assert before == after
    assert "training_dynamics" in before and "cv_folds" in before


@pytest.mark.parametrize("module", ["torch", "transformers", "spacy", "ray", "datasets"])
def test_listing_analyses_imports_no_optional_dependency(module):
    loaded = _python(
        "import sys, spurious, spurious.analysis as a, spurious.cli; a.load_analyses(); "
        f"print({module!r} in sys.modules)"
    )
    assert loaded == "False", f"listing the analyses imported {module}"


def test_strict_skips_fails_on_an_unexpected_skip_only(tmp_path):
    """CI's --strict-skips: an expected skip passes, any other skip fails the run."""
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_addoption, pytest_sessionfinish, "
        "pytest_terminal_summary  # noqa: F401\n"
    )
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "def test_gpu():\n    pytest.skip('needs CUDA')\n"
        "def test_data():\n    pytest.skip('real data not available')\n"
    )
    root = Path(__file__).resolve().parents[1]

    def run(selected: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--strict-skips",
             str(tmp_path / "test_x.py"), "-k", selected, "--rootdir", str(tmp_path)],
            capture_output=True, text=True, cwd=tmp_path, timeout=300,
            env={**os.environ, "PYTHONPATH": str(root)},
        )  # fmt: skip

    assert run("gpu").returncode == 0
    failed = run("data")
    assert failed.returncode == 1, failed.stdout
    assert "unexpected skips" in failed.stdout and "real data not available" in failed.stdout


def test_the_shipped_catalog_is_what_the_registry_gives():
    """``spurious analyses`` reads src/spurious/analyses.json; rewrite it after changing an
    analysis' name, description or requirements: ``python -m spurious.catalog``."""
    from spurious.catalog import build_catalog, read_catalog

    assert read_catalog() == build_catalog()


def test_listing_analyses_imports_no_analysis_module():
    loaded = _python(
        "import sys; from click.testing import CliRunner; from spurious.cli import main; "
        "out = CliRunner().invoke(main, ['analyses']).output; "
        "print('mc_leakage' in out, 'sklearn' in sys.modules, 'spurious.analysis' in sys.modules)"
    )
    assert loaded == "True False False"


def test_the_architecture_page_names_every_module():
    """docs/architecture.md is the map of the package: a module it does not name is one a
    reader cannot find from it. Exempt: the modules of ``cli/`` (one per command group)
    and ``report/sections/`` (one per analysis, discovered), which the page describes as
    such; every package folder must still be named."""
    page = (SRC.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    unnamed = [
        str(p.relative_to(SRC))
        for p in _modules()
        if p.name != "__init__.py"
        and p.parent.name not in ("cli", "sections")
        and p.name not in page
    ]
    folders = sorted(
        str(d.relative_to(SRC))
        for d in SRC.rglob("*")
        if (d / "__init__.py").exists() and f"{d.name}/" not in page
    )
    assert not unnamed and not folders, (
        f"docs/architecture.md does not name {unnamed + folders}; add a line on what each does"
    )
