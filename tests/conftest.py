"""Shared fixtures: small planted-artifact datasets and the location of ../shared/data."""

from __future__ import annotations

from pathlib import Path

import pytest

from spurious.data.synthetic import make_nli_artifacts

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


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
