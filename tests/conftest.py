"""Shared fixtures: small planted-artifact datasets and the location of ../shared/data."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spurious.data.synthetic import make_nli_artifacts

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


# -- unexpected skips fail the run (CI: --strict-skips) ----------------------------------
#: Skip reasons that are expected on CI's machine (one regex per line; '#' comments).
EXPECTED_SKIPS = Path(__file__).with_name("expected_skips.txt")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--strict-skips",
        action="store_true",
        help="Fail the run when a test is skipped for a reason not in tests/expected_skips.txt "
        "(a missing dependency or data file must not pass silently in CI).",
    )


def _expected_skip_patterns() -> list[re.Pattern[str]]:
    lines = EXPECTED_SKIPS.read_text().splitlines() if EXPECTED_SKIPS.exists() else []
    return [re.compile(x.strip()) for x in lines if x.strip() and not x.lstrip().startswith("#")]


def unexpected_skips(config: pytest.Config) -> list[str]:
    """``nodeid: reason`` of every skip whose reason no line of expected_skips.txt matches
    (empty without ``--strict-skips``)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if not config.getoption("--strict-skips") or reporter is None:
        return []
    patterns = _expected_skip_patterns()
    out = []
    for report in reporter.stats.get("skipped", []):
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report)
        if not any(p.search(reason) for p in patterns):
            out.append(f"{report.nodeid}: {reason}")
    return out


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Runs before the terminal summary; setting the status here sets the exit code.
    if unexpected_skips(session.config):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    unexpected = unexpected_skips(config)
    if unexpected:
        terminalreporter.write_sep("=", "unexpected skips (--strict-skips)", red=True)
        for line in unexpected:
            terminalreporter.write_line(line)


def shared_data(*parts: str) -> Path:
    """Path under ../shared/data, or skip the test with a clear reason."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path} (CI has ../shared/data beside the repo)")
    return path


@pytest.fixture(scope="session")
def nli_split():
    """(train, test) synthetic NLI with a strong planted cue in contradiction hypotheses."""
    synth = make_nli_artifacts(n=900, artifact_rate=0.9, random_state=0)
    return synth.dataset.split(0.3, random_state=0)


@pytest.fixture(scope="session")
def nli_jsonl(tmp_path_factory):
    """150 planted-artifact NLI pairs (half carry the cue) as a JSONL file, for CLI runs."""
    path = tmp_path_factory.mktemp("nli-jsonl") / "train.jsonl"
    ds = make_nli_artifacts(n=150, artifact_rate=0.5, random_state=0).dataset
    ds.frame[["id", "premise", "hypothesis", "label"]].to_json(path, orient="records", lines=True)
    return path


def make_tiny_bert(folder: Path, *, dropout: bool = True) -> str:
    """Save a 2-layer, 32-wide BERT classifier (3 labels) with the MiniLM tokenizer to
    ``folder``, randomly initialised with seed 0; ``dropout=False`` makes a training
    forward pass equal an evaluation one. Returns the folder as a string."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from spurious.features.encoder import default_model_path

    tok = AutoTokenizer.from_pretrained(default_model_path(), local_files_only=True)
    extra = {} if dropout else {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
    config = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=3,
        **extra,
    )
    with torch.random.fork_rng():
        torch.manual_seed(0)
        BertForSequenceClassification(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)
