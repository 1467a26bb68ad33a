"""The commands the README and ``docs/`` print still run as printed.

Every figure in the docs names the command that measured it, and every how-to shows a
``spurious`` command line. A renamed option or a removed benchmark leaves such a line
behind silently; these tests parse the documents and check each command against the CLI's
options and each benchmark script's own argument parser source, and each cited result
file against the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from spurious.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _commands(text: str) -> list[str]:
    """Command-like snippets: one per line in fenced blocks (a trailing backslash joins
    lines; ``#`` starts a comment), one per inline code span (line breaks are spaces)."""
    out = []
    for i, part in enumerate(re.split(r"^```.*$", text, flags=re.M)):
        if i % 2:  # inside a fence
            out += [line.split(" #", 1)[0] for line in part.replace("\\\n", " ").splitlines()]
        else:
            out += [span.replace("\n", " ") for span in re.findall(r"`([^`]+)`", part)]
    return [" ".join(snippet.split()) for snippet in out if snippet.strip()]


def _flags(args: str) -> list[str]:
    # Stop at the next shell separator or at " / " (prose listing several commands).
    args = re.split(r"[;&|)]| / ", args, maxsplit=1)[0]
    return re.findall(r"(?<!\S)(--[\w-]+)", args)


def _long_options(command: click.Command) -> set[str]:
    return {
        opt
        for param in command.params
        for opt in (*param.opts, *param.secondary_opts)
        if opt.startswith("--")
    }


def _doc_commands(pattern: str) -> list[tuple[str, re.Match[str]]]:
    found = []
    for doc in DOCS:
        for snippet in _commands(doc.read_text(encoding="utf-8")):
            found += [(doc.relative_to(ROOT).as_posix(), m) for m in re.finditer(pattern, snippet)]
    return found


def test_the_parser_reads_fences_spans_and_continuations():
    text = "Run `spurious audit a.jsonl\n--quick`.\n```bash\npython bench/x.py --a \\\n  --b  # c --d\n```\n"
    assert _commands(text) == ["spurious audit a.jsonl --quick", "python bench/x.py --a --b"]
    assert _flags("x --a y --b-c | z --d") == ["--a", "--b-c"]
    assert _flags("audit / leakage / run --config") == []


def test_every_documented_spurious_option_exists():
    group = _long_options(cli) | {"--help"}
    commands = _doc_commands(r"(?:^|[\s(])spurious((?:\s+-\w|\s+--[\w-]+)*)\s+([a-z][\w-]*)(.*)")
    checked, unknown = 0, []
    for doc, m in commands:
        command = cli.commands.get(m.group(2))
        if command is None:  # prose ("spurious finds ..."), not a command line
            continue
        # Group-level options may come before the command name ("spurious -v audit").
        unknown += [(doc, "spurious", f) for f in _flags(m.group(1)) if f not in group]
        if isinstance(command, click.Group):
            continue
        known = _long_options(command) | group
        checked += 1
        unknown += [(doc, m.group(2), f) for f in _flags(m.group(3)) if f not in known]
    assert checked > 50, "the docs' command lines were not found: has the parser broken?"
    assert not unknown, f"documented options the CLI does not have: {unknown}"


def test_every_documented_benchmark_command_names_a_script_and_its_options():
    commands = _doc_commands(r"python (bench/[\w/]+\.py)(.*)")
    assert len(commands) > 50, "the docs' benchmark commands were not found"
    problems = []
    for doc, m in commands:
        script = ROOT / m.group(1)
        if not script.is_file():
            problems.append((doc, m.group(1), "no such script"))
            continue
        source = script.read_text(encoding="utf-8")
        # argparse options are declared as string literals in the script itself.
        problems += [
            (doc, m.group(1), flag)
            for flag in _flags(m.group(2))
            if f'"{flag}"' not in source and f"'{flag}'" not in source
        ]
    assert not problems, f"documented benchmark commands that would not run: {problems}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_cited_result_file_exists(doc):
    cited = set(re.findall(r"bench/results/[\w./-]+?\.(?:json|png|svg|csv)", doc.read_text()))
    missing = sorted(c for c in cited if not (ROOT / c).is_file())
    assert not missing, f"{doc.name} cites result files that are not in the repository: {missing}"
