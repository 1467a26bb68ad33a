"""Option blocks of multiple-choice items: layout, padding, and the cues each view sees."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import KFold

from spurious.data import load_dataset
from spurious.data.synthetic_mcq import make_mcq_artifacts
from spurious.exceptions import ParameterError
from spurious.features.mcq import OptionFeaturizer
from spurious.models.conditional_logit import ConditionalLogit


def _cv_accuracy(blocks, y: np.ndarray) -> float:
    model = ConditionalLogit(blocks.n_features)
    pred = np.zeros(len(y), dtype=int)
    for tr, te in KFold(5, shuffle=True, random_state=0).split(y):
        pred[te] = model.fit_predict(
            blocks.X[tr], y[tr], np.arange(len(tr))[None], 0, blocks.X[te]
        )[0]
    return float((pred == y).mean())


def test_blocks_lay_out_options_with_padding():
    frame = pd.DataFrame(
        {
            "question": ["Which is red?", "Pick one"],
            "options": [["apples", "sky", "grass"], ["x", "yy"]],
            "label": [0, 1],
        }
    )
    ds = load_dataset(frame, "mcq")
    b = OptionFeaturizer("lexical").fit(ds).transform(ds, "choices_only", n_blocks=4)
    Z = b.block_view()
    assert Z.shape == (2, 4, b.n_features)
    assert Z[:, :, 0].tolist() == [[1, 1, 1, 0], [1, 1, 0, 0]]  # indicator; padding is 0
    col = b.columns.index("is_longest")
    assert Z[0, :3, col].tolist() == [1, 0, 0] and Z[1, :2, col].tolist() == [0, 1]
    assert Z[1, 1, b.columns.index("position_B")] == 1
    with pytest.raises(ParameterError, match="'view' parameter must be one of"):
        OptionFeaturizer("lexical").fit(ds).transform(ds, "hypothesis_only")
    with pytest.raises(ParameterError, match="n_blocks"):
        OptionFeaturizer("lexical").fit(ds).transform(ds, "full", n_blocks=2)


@pytest.mark.parametrize(
    ("artifact", "sees"),
    [
        ("length", {"choices_only", "full"}),
        ("position", {"choices_only", "full", "question_only"}),
        ("none", set()),
    ],
)
def test_each_view_sees_the_cues_it_should(artifact, sees):
    ds = make_mcq_artifacts(n=500, artifact=artifact, artifact_rate=0.6, random_state=1).dataset
    feat = OptionFeaturizer("lexical").fit(ds)
    for view in ("full", "choices_only", "question_only"):
        acc = _cv_accuracy(feat.transform(ds, view), ds.labels)
        # Chance is 1/4; a cue in 60% of the items gives about 0.6 + 0.4 / 4 = 0.7.
        if view in sees:
            assert acc > 0.6, (view, acc)
        else:
            assert acc < 0.33, (view, acc)


def test_encoder_blocks_see_a_token_cue():
    ds = make_mcq_artifacts(n=300, artifact="token", cue="certainly", artifact_rate=0.8).dataset
    # Equal-length words make the token the only cue the length columns cannot carry alone.
    feat = OptionFeaturizer("minilm", n_components=16, cache_dir=False).fit(ds)
    blocks = feat.transform(ds, "choices_only")
    assert any(c.startswith("option_pc") for c in blocks.columns)
    assert _cv_accuracy(blocks, ds.labels) > 0.7
