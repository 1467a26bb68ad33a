"""Report sections rendered ahead in a helper process (spurious.report.prefetch)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time

import pytest

from spurious.context import RunContext
from spurious.data.synthetic import make_nli_artifacts
from spurious.report import SECTION_REGISTRY, Section, build_report_html, prefetch, register_section
from spurious.report.prefetch import ENV_VAR, SectionPrefetch, prefetch_wanted
from spurious.report.sections import build_section
from spurious.results import Result
from spurious.runner import execute

CONFIG = {
    "inputs": {"data": "<in-memory>", "task": "nli"},
    "analyses": {"atlas": {}, "associations": {}, "partial_input": {"features": "bow"}},
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory):
    """A three-analysis run whose report was written with the sections rendered ahead."""
    mp = pytest.MonkeyPatch()
    mp.setenv(ENV_VAR, "1")  # 300 rows are below the size at which runs use it
    here: list[str] = []  # the sections this process rendered for the page

    def counted(result: Result) -> Section:
        here.append(result.name)
        return build_section(result)

    mp.setattr("spurious.report.html.build_section", counted)
    out = tmp_path_factory.mktemp("ahead") / "run"
    data = make_nli_artifacts(n=300, artifact_rate=0.9, random_state=0).dataset
    try:
        execute(CONFIG, out=out, context=RunContext(data), progress=False)
    finally:
        mp.undo()
    assert here == []  # all three came from the helper
    return out


def test_the_page_is_the_one_rendered_in_process(run_dir):
    written = (run_dir / "report.html").read_text(encoding="utf-8")
    assert written == build_report_html(run_dir)  # every section rendered here
    assert "partial_input" in written and "associations" in written


def test_the_helper_renders_what_build_section_renders(run_dir):
    names = ["atlas", "associations", "partial_input"]
    with SectionPrefetch(run_dir) as ahead:
        for name in names:
            ahead.submit(Result.load(run_dir / name))
        got = ahead.sections()
    assert sorted(got) == sorted(names)
    for name in names:
        assert got[name] == build_section(Result.load(run_dir / name))
    # the page from these sections is the page rendered without them
    assert build_report_html(run_dir, sections=got) == build_report_html(run_dir)


def test_a_renderer_replaced_here_is_not_taken_from_the_helper(run_dir):
    """A notebook that registers its own section for an analysis: the helper (a fresh
    process) renders the built-in one, so the page must use this process' renderer."""
    res = Result.load(run_dir / "atlas")
    original = SECTION_REGISTRY.get("atlas")
    try:
        register_section("atlas", replace=True)(lambda r: Section("mine", "my own view"))
        with SectionPrefetch(run_dir) as ahead:
            ahead.submit(res)
            got = ahead.sections()
        assert got == {}
        assert "my own view" in build_report_html(run_dir, sections=got)
    finally:
        register_section("atlas", replace=True)(original)


def test_a_section_that_logs_a_warning_is_left_to_the_run(run_dir):
    """What the helper does with a section whose rendering logs a warning (a renderer
    that raised, replaced by the generic view): it returns nothing, so this process
    renders the section and the warning shows here as before. Run in this process,
    with the handler the helper's loop installs."""
    counter, root = prefetch._Count(), logging.getLogger()
    original = SECTION_REGISTRY.get("atlas")
    root.addHandler(counter)
    try:
        got = prefetch._render(str(run_dir / "atlas"))
        expected = build_section(Result.load(run_dir / "atlas"))
        assert got is not None and got["html_body"] == str(expected.html_body)

        def warns(result: Result) -> Section:
            logging.getLogger("spurious.report").warning("a renderer's warning")
            return original(result)

        register_section("atlas", replace=True)(warns)
        assert prefetch._render(str(run_dir / "atlas")) is None
    finally:
        root.removeHandler(counter)
        register_section("atlas", replace=True)(original)


def test_disabled_starts_nothing(run_dir, monkeypatch):
    off = SectionPrefetch(None)
    with off:
        off.submit(Result.load(run_dir / "atlas"))
        assert off._proc is None
    assert off.sections() == {}
    monkeypatch.delenv(ENV_VAR, raising=False)
    both, one = {"a": [], "b": []}, {"a": [], "b": ["needs an evaluation split"]}
    assert SectionPrefetch.for_run(run_dir, 9842, both).run_dir == run_dir
    assert SectionPrefetch.for_run(run_dir, 300, both).run_dir is None  # a short run
    assert SectionPrefetch.for_run(run_dir, 9842, one).run_dir is None  # one analysis
    monkeypatch.setenv(ENV_VAR, "0")
    assert not prefetch_wanted(9842, 9)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_the_helper_ends_with_a_killed_run(tmp_path):
    """A run killed outright (SIGKILL: no cleanup runs) leaves no helper behind."""
    script = (
        "import os, signal\n"
        "from spurious.report.prefetch import SectionPrefetch\n"
        f"ahead = SectionPrefetch({str(tmp_path)!r}).__enter__()\n"
        "print(ahead._proc.pid, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.returncode == -signal.SIGKILL, run.stderr
    helper = int(run.stdout.split()[0])
    deadline = time.monotonic() + 60
    while _alive(helper) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(helper)


def test_the_helper_does_not_run_the_callers_script(tmp_path):
    """A script without an ``if __name__ == "__main__"`` guard runs once: the helper
    is a fresh interpreter that imports the package, never the caller's script."""
    marker = tmp_path / "ran.txt"
    script = tmp_path / "audit_script.py"
    script.write_text(
        "import pandas as pd\n"
        "from spurious.report.prefetch import SectionPrefetch\n"
        "from spurious.results import Result\n"
        f"with open({str(marker)!r}, 'a') as f:\n"
        "    f.write('x')\n"
        "res = Result('plain', pd.DataFrame({'id': ['a']}), {'auc': 0.7}, summary='fine')\n"
        f"res.save({str(tmp_path / 'plain')!r})\n"
        f"ahead = SectionPrefetch({str(tmp_path)!r}).__enter__()\n"
        "ahead.submit(res)\n"
        "print(sorted(ahead.sections()))\n"
    )
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "['plain']"  # the helper rendered it
    assert marker.read_text() == "x"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False
