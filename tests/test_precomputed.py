"""PrecomputedFeaturizer: positional rows, id lookup, validation errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from spurious.data import Dataset
from spurious.exceptions import FeatureError, ParameterError
from spurious.features.precomputed import PrecomputedFeaturizer


def _nli(ids: list[str]) -> Dataset:
    n = len(ids)
    labels = ["entailment", "neutral", "contradiction"]
    return Dataset.from_frame(
        pd.DataFrame(
            {
                "id": ids,
                "premise": [f"premise {i}" for i in ids],
                "hypothesis": [f"hypothesis {i}" for i in ids],
                "label": [labels[k % 3] for k in range(n)],
            }
        ),
        "nli",
        name="toy",
    )


@pytest.fixture
def ds() -> Dataset:
    return _nli(["a", "b", "c"])


def test_positional_rows(ds: Dataset) -> None:
    X = np.arange(6, dtype=np.float64).reshape(3, 2)
    out = PrecomputedFeaturizer({"full": X}).transform(ds, "full")
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, X)


def test_id_lookup_one_array_covers_two_splits(tmp_path: Path) -> None:
    train, test = _nli(["t1", "t2", "t3"]), _nli(["e1", "e2"])
    all_ids = ["e2", "t3", "t1", "e1", "t2", "unused"]
    X = np.array([[float(i), -float(i)] for i in range(len(all_ids))])
    feat = PrecomputedFeaturizer({"hypothesis_only": X}, ids=all_ids)
    np.testing.assert_array_equal(feat.fit_transform(train, "hypothesis_only")[:, 0], [2, 4, 1])
    np.testing.assert_array_equal(feat.transform(test, "hypothesis_only")[:, 0], [3, 0])

    # The same from files: .npy array and a text file with one id per line.
    np.save(tmp_path / "hyp.npy", X)
    (tmp_path / "ids.txt").write_text("\n".join(all_ids) + "\n")
    from_files = PrecomputedFeaturizer(
        {"hypothesis_only": tmp_path / "hyp.npy"}, ids=str(tmp_path / "ids.txt")
    )
    np.testing.assert_array_equal(
        from_files.transform(train, "hypothesis_only"), feat.transform(train, "hypothesis_only")
    )


def test_field_name_and_field_list_keys(ds: Dataset) -> None:
    X = np.ones((3, 2))
    feat = PrecomputedFeaturizer({"hypothesis": X, "premise": 2 * X})
    assert feat.transform(ds, "hypothesis_only")[0, 0] == 1
    assert feat.transform(ds, ["premise"])[0, 0] == 2


def test_missing_ids_are_counted_and_named(ds: Dataset) -> None:
    feat = PrecomputedFeaturizer({"full": np.ones((2, 2))}, ids=["a", "zz"])
    with pytest.raises(FeatureError, match=r"2 of 3 example id\(s\).*'b', 'c'"):
        feat.transform(ds, "full")


def test_nan_in_used_rows_is_an_error_but_unused_rows_are_ignored(ds: Dataset) -> None:
    X = np.ones((4, 2))
    X[3, 1] = np.nan
    ok = PrecomputedFeaturizer({"full": X}, ids=["a", "b", "c", "other"])
    assert np.isfinite(ok.transform(ds, "full")).all()
    X[1, 0] = np.inf
    with pytest.raises(FeatureError, match=r"view 'full'.*NaN/inf.*row 1"):
        ok.transform(ds, "full")


def test_nan_without_ids(ds: Dataset) -> None:
    X = np.ones((3, 2))
    X[2, 0] = np.nan
    with pytest.raises(FeatureError, match="NaN/inf"):
        PrecomputedFeaturizer({"full": X}).transform(ds, "full")


def test_1d_array_names_view_and_file(ds: Dataset, tmp_path: Path) -> None:
    np.save(tmp_path / "flat.npy", np.ones(3))
    feat = PrecomputedFeaturizer({"full": tmp_path / "flat.npy"})
    with pytest.raises(FeatureError, match=r"view 'full' \(file .*flat\.npy\).*2-D.*\(3,\)"):
        feat.transform(ds, "full")


def test_3d_array(ds: Dataset) -> None:
    with pytest.raises(FeatureError, match=r"2-D.*\(3, 2, 2\)"):
        PrecomputedFeaturizer({"full": np.ones((3, 2, 2))}).transform(ds, "full")


def test_wrong_row_count_without_ids(ds: Dataset) -> None:
    feat = PrecomputedFeaturizer({"full": np.ones((5, 2))})
    with pytest.raises(FeatureError, match=r"5 rows but dataset 'toy' has 3 examples.*ids="):
        feat.transform(ds, "full")


def test_rows_must_match_ids(ds: Dataset) -> None:
    feat = PrecomputedFeaturizer({"full": np.ones((3, 2))}, ids=["a", "b", "c", "d"])
    with pytest.raises(FeatureError, match="3 rows but 4 ids"):
        feat.transform(ds, "full")


def test_duplicate_ids(ds: Dataset) -> None:
    feat = PrecomputedFeaturizer({"full": np.ones((4, 2))}, ids=["a", "b", "c", "a"])
    with pytest.raises(FeatureError, match=r"1 duplicated id.*'a'"):
        feat.transform(ds, "full")


def test_empty_line_in_ids_file(ds: Dataset, tmp_path: Path) -> None:
    (tmp_path / "ids.txt").write_text("a\n\nb\nc\n")
    feat = PrecomputedFeaturizer({"full": np.ones((4, 2))}, ids=tmp_path / "ids.txt")
    with pytest.raises(FeatureError, match=r"empty line.*line 2"):
        feat.transform(ds, "full")


def test_unknown_view_lists_available(ds: Dataset) -> None:
    feat = PrecomputedFeaturizer({"full": np.ones((3, 2)), "hypothesis_only": np.ones((3, 2))})
    with pytest.raises(FeatureError, match=r"'premise_only'.*\['full', 'hypothesis_only'\]"):
        feat.transform(ds, "premise_only")


def test_missing_file(ds: Dataset, tmp_path: Path) -> None:
    feat = PrecomputedFeaturizer({"full": tmp_path / "nope.npy"})
    with pytest.raises(FeatureError, match=r"nope\.npy.*not found"):
        feat.transform(ds, "full")


def test_pickled_object_array_is_refused(ds: Dataset, tmp_path: Path) -> None:
    obj = np.empty(3, dtype=object)
    obj[:] = [[1.0], [2.0], [3.0]]
    np.save(tmp_path / "obj.npy", obj, allow_pickle=True)
    feat = PrecomputedFeaturizer({"full": tmp_path / "obj.npy"})
    with pytest.raises(FeatureError, match=r"obj\.npy.*could not be read"):
        feat.transform(ds, "full")


def test_non_numeric_array(ds: Dataset) -> None:
    with pytest.raises(FeatureError, match="numeric"):
        PrecomputedFeaturizer({"full": np.array([["x"], ["y"], ["z"]])}).transform(ds, "full")


def test_empty_arrays_param(ds: Dataset) -> None:
    with pytest.raises(ParameterError, match="'arrays'"):
        PrecomputedFeaturizer({}).transform(ds, "full")


def test_config_is_compact_and_stable(tmp_path: Path) -> None:
    X = np.ones((3, 2))
    a = PrecomputedFeaturizer({"full": X, "hyp": tmp_path / "h.npy"}, ids=["a", "b", "c"])
    b = PrecomputedFeaturizer({"hyp": tmp_path / "h.npy", "full": X.copy()}, ids=["a", "b", "c"])
    assert a.config() == b.config()
    assert a.config()["arrays"]["hyp"] == str(tmp_path / "h.npy")
    assert a.config()["arrays"]["full"].startswith("array[3, 2]:float64:")
    assert a.config() != PrecomputedFeaturizer({"full": X + 1, "hyp": "x"}).config()
    assert PrecomputedFeaturizer.stateless and PrecomputedFeaturizer.name == "precomputed"
