"""The protocols that keep the import graph acyclic are satisfied by the classes they stand for.

mypy checks each call statically (``make lint``); these tests check the same at run
time, so a member renamed on one side and not the other fails here too, and that the
one new public method the protocol needed, ``RunContext.registered_featurizer``, does
what the ``fitted_featurizer`` provider relies on.
"""

from __future__ import annotations

import typing

import numpy as np
import pytest

from spurious.artifacts.protocol import ArtifactContext
from spurious.context import RunContext
from spurious.data.synthetic import make_nli_artifacts
from spurious.detectors.aflite.detector import AFLite
from spurious.detectors.aflite.settings import AFLiteSettings
from spurious.detectors.cartography.analysis import Cartography
from spurious.detectors.cartography.settings import CartographySettings
from spurious.detectors.partial_input.detector import PartialInput
from spurious.detectors.partial_input.settings import PartialInputSettings
from spurious.features import PrecomputedFeaturizer


@pytest.fixture(scope="module")
def ctx() -> RunContext:
    return RunContext(make_nli_artifacts(n=60, random_state=0).dataset, progress=False)


def test_the_run_context_is_an_artifact_context(ctx):
    assert isinstance(ctx, ArtifactContext)


@pytest.mark.parametrize(
    ("protocol", "analysis"),
    [
        (AFLiteSettings, AFLite()),
        (CartographySettings, Cartography()),
        (PartialInputSettings, PartialInput()),
    ],
    ids=["aflite", "cartography", "partial_input"],
)
def test_each_analysis_has_every_member_its_protocol_names(protocol, analysis):
    members = set(typing.get_type_hints(protocol)) | {
        name for name, v in vars(protocol).items() if callable(v) and not name.startswith("_")
    }
    missing = sorted(m for m in members if not hasattr(analysis, m))
    assert not missing, f"{type(analysis).__name__} lacks {missing}"


def test_a_registered_featurizer_is_the_callers_object(ctx):
    X = np.arange(len(ctx.train) * 2, dtype=np.float64).reshape(-1, 2)
    featurizer = PrecomputedFeaturizer({"full": X})
    assert ctx.registered_featurizer("tfidf") is None
    ctx.features(featurizer, "full")
    keys = list(ctx._featurizers)
    assert len(keys) == 1
    assert ctx.registered_featurizer(keys[0]) is featurizer
    # The provider serves the caller's matrix, not a featurizer it made itself.
    np.testing.assert_array_equal(ctx.features(featurizer, "full"), X)
