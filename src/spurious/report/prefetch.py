"""Report sections rendered in a helper process while the run's analyses go on.

An audit leaves one of two cores idle much of the time: AFLite, minority and partial
input fit on one thread each, and a quick audit of SNLI dev kept 1.26 cores busy on
average. Its report then took 5-6 s of one core after the last analysis, most of it
in the plots of the sections. :class:`SectionPrefetch` renders each result's section in
one helper process as soon as the result is saved, so after the run only the last
sections and the page itself remain: a quick audit of SNLI dev spent about 4 s less
outside its analyses (``bench/bench_audit_scale.py``, the README's goal-2 row).

The helper renders from the saved folder (:meth:`Result.load`), which is what
:func:`~spurious.report.html.render_report` reads, so the page is the same byte for byte
(``tests/test_report_prefetch.py``). Whatever the helper cannot vouch for is rendered in
this process as before: a helper that fails or is slow, a renderer that logged a
warning or raised a Python warning, and a result whose renderer here is not the one the
helper used (one registered or replaced at run time, in a notebook, which a fresh
process does not see).

The helper is a plain ``python -I`` subprocess of the same interpreter, given this
process' ``sys.path``, so it imports the same ``spurious`` package (not
:mod:`multiprocessing`, whose ``spawn`` would re-run the caller's script in the helper
when it lacks an ``if __name__ == "__main__"`` guard). It reads one JSON line per
result on its stdin and answers one JSON line each (no pickle); it ignores Ctrl-C (the
run stops it), runs one BLAS thread, and ends when its stdin closes, which also happens
when the run's process dies, however it dies.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from spurious.report.sections import Section
    from spurious.results import Result

logger = logging.getLogger(__name__)

__all__ = ["ENV_VAR", "MIN_ROWS", "SectionPrefetch", "prefetch_wanted"]

#: ``1`` renders sections ahead on any run with a report, ``0`` never; unset: by
#: :func:`prefetch_wanted`'s rule.
ENV_VAR = "SPURIOUS_REPORT_PREFETCH"

#: Below this many training rows a run is too short for the helper to pay for itself:
#: starting it (an interpreter that imports matplotlib, pandas and the report) costs 2-3
#: CPU-s, which on a short run only competes with the analyses.
MIN_ROWS = 5_000

#: How long the page waits for the helper's sections before rendering the rest here.
WAIT_S = 600.0

_SERVE = "from spurious.report.prefetch import _serve; _serve()"


def prefetch_wanted(n_rows: int, n_analyses: int, *, setting: str | None = None) -> bool:
    """Whether a run of ``n_analyses`` runnable analyses on ``n_rows`` training rows
    renders its sections ahead.

    ``setting`` (default: ``$SPURIOUS_REPORT_PREFETCH``) ``"1"`` or ``"0"`` decides;
    otherwise runs of two analyses or more on :data:`MIN_ROWS` rows or more do.

    Examples
    --------
    >>> prefetch_wanted(9842, 9, setting=""), prefetch_wanted(9842, 1, setting="")
    (True, False)
    >>> prefetch_wanted(300, 9, setting=""), prefetch_wanted(300, 9, setting="1")
    (False, True)
    """
    forced = (os.environ.get(ENV_VAR, "") if setting is None else setting).strip()
    if forced in ("0", "1"):
        return forced == "1"
    return n_analyses >= 2 and n_rows >= MIN_ROWS


def _renderer_id(name: str) -> str:
    """Which function renders ``name``'s section in this process."""
    from spurious.report.sections import get_section_renderer

    fn = get_section_renderer(name)
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


class _Count(logging.Handler):
    """Counts the warnings logged while a section renders (and keeps them off stderr)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.n = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.n += 1


def _render(folder: str) -> dict[str, str] | None:
    """In the helper: the section of the result saved in ``folder``, as plain strings,
    or ``None`` when rendering it logged a warning or raised a Python warning (which the
    helper logs): the run renders it itself, so the warning shows there as before."""
    from spurious.report.sections import build_section
    from spurious.results import Result

    counter = next(h for h in logging.getLogger().handlers if isinstance(h, _Count))
    before = counter.n
    result = Result.load(folder)
    section = build_section(result)
    if counter.n != before:
        return None
    return {
        "renderer": _renderer_id(result.name),
        "title": section.title,
        "html_body": str(section.html_body),
        "status": section.status,
        "summary": section.summary,
    }


def _serve() -> None:
    """The helper's loop: one JSON request per stdin line, one JSON answer per stdout
    line, until stdin closes."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run stops the helper
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever a renderer prints goes to stderr, not into the answers
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)  # the plots' numpy work is small; the run has the cores
    import spurious.report  # noqa: F401  (matplotlib, pandas, every section module)

    root = logging.getLogger()
    root.handlers[:] = [_Count()]
    root.setLevel(logging.WARNING)
    logging.captureWarnings(True)  # a Python warning counts as a logged one
    for line in sys.stdin:
        request = json.loads(line)
        try:
            section = _render(request["folder"])
        except Exception:  # the run renders this one itself
            section = None
        answers.write(json.dumps({"name": request["name"], "section": section}) + "\n")
        answers.flush()


class SectionPrefetch:
    """Renders saved results' report sections in a helper process (see the module).

    Use it as a context manager around the run; :meth:`submit` each result once it is
    saved in ``run_dir/<name>/``, and :meth:`sections` for what the helper rendered.

    Parameters
    ----------
    run_dir : path or None
        The run directory the results are saved in; ``None``: nothing is rendered
        ahead (every method does nothing), so callers need no second code path.

    Examples
    --------
    >>> import tempfile
    >>> import pandas as pd
    >>> from spurious.results import Result
    >>> res = Result("plain", pd.DataFrame({"id": ["a"]}), {"auc": 0.7}, summary="fine")
    >>> run_dir = tempfile.mkdtemp()
    >>> _ = res.save(f"{run_dir}/plain")
    >>> with SectionPrefetch(run_dir) as ahead:
    ...     ahead.submit(res)
    ...     sections = ahead.sections()
    >>> list(sections), sections["plain"].status
    (['plain'], 'ok')
    """

    def __init__(self, run_dir: str | os.PathLike[str] | None) -> None:
        self.run_dir = None if run_dir is None else Path(run_dir)
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._answers: dict[str, dict[str, str] | None] = {}

    @classmethod
    def for_run(
        cls, run_dir: str | os.PathLike[str], n_rows: int, unmet: Mapping[str, list[str]]
    ) -> SectionPrefetch:
        """For a run of ``n_rows`` training rows whose analyses' unmet requirements are
        ``unmet``: enabled where :func:`prefetch_wanted` says so."""
        runnable = sum(1 for reasons in unmet.values() if not reasons)
        return cls(run_dir if prefetch_wanted(n_rows, runnable) else None)

    def __enter__(self) -> SectionPrefetch:
        if self.run_dir is None:
            return self
        # The helper resolves imports as this process does (its sys.path, its cwd, and
        # -I so that no PYTHON* variable or script folder changes that): the same
        # spurious package, however this one was found.
        code = f"import sys; sys.path[:] = {list(sys.path)!r}; " + _SERVE
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-c", code],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                encoding="utf-8",
            )
        except OSError as e:  # no processes here: render as before
            logger.info("report sections are rendered after the run: %s", e)
            return self
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is not None:  # a failed run: no report will ask for the sections
            self.close()

    def chain(self, on_result: Callable[[Result], None] | None) -> Callable[[Result], None]:
        """A result callback that queues the section, then calls ``on_result``."""

        def both(result: Result) -> None:
            self.submit(result)
            if on_result is not None:
                on_result(result)

        return both

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:  # until the helper ends
            try:
                answer = json.loads(line)
                self._answers[str(answer["name"])] = answer["section"]
            except (ValueError, KeyError, TypeError):  # not ours: ignore it
                continue

    def submit(self, result: Result) -> None:
        """Queue ``result``'s section (an ``ok`` result saved under ``run_dir``)."""
        if self._proc is None or self.run_dir is None or result.status != "ok":
            return
        folder = self.run_dir / result.name
        if not (folder / "result.json").is_file():
            return
        request = {"name": result.name, "folder": os.fspath(folder.resolve())}
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()
        except (OSError, ValueError) as e:  # the helper ended: render as before
            logger.info("report section of %s is rendered after the run: %s", result.name, e)

    def close(self) -> None:
        """Stop the helper at once (what it has not rendered is rendered here)."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            if self._reader is not None:
                self._reader.join(5.0)  # it reads to the end of the dead helper's output
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream is not None and not stream.closed:
                    with contextlib.suppress(OSError):  # requests it never read: dropped
                        stream.close()
            self._proc = None

    def sections(self, timeout: float = WAIT_S) -> dict[str, Section]:
        """The sections the helper rendered, by analysis name: waits until it has
        answered every request (up to ``timeout`` seconds), then stops it."""
        from markupsafe import Markup

        from spurious.report.sections import Section

        if self._proc is not None and self._reader is not None:
            assert self._proc.stdin is not None
            with contextlib.suppress(OSError):  # the helper answers what is queued, then ends
                self._proc.stdin.close()
            self._reader.join(timeout)
        self.close()
        out: dict[str, Section] = {}
        for name, got in list(self._answers.items()):
            if got is None or got.get("renderer") != _renderer_id(name):
                continue
            out[name] = Section(
                got["title"], Markup(got["html_body"]), got["status"], got["summary"]
            )
        return out
