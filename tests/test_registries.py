"""Every name -> object table users reach by name is a Registry: lookups, listings, duplicates."""

from __future__ import annotations

import pytest

from spurious.data.readers import READERS, read_jsonl
from spurious.data.tasks import TASKS, Task, get_task
from spurious.exceptions import ParameterError
from spurious.features import FEATURIZERS, make_featurizer
from spurious.heuristics import HEURISTICS
from spurious.utils.registry import Registry


@pytest.mark.parametrize(
    ("registry", "names"),
    [
        (TASKS, ["nli", "pair", "qa", "text"]),
        (READERS, ["csv", "json", "jsonl", "parquet", "squad", "tsv"]),
        (FEATURIZERS, ["bow", "minilm", "tfidf"]),
    ],
)
def test_tables_are_registries(registry: Registry, names: list[str]) -> None:
    assert isinstance(registry, Registry)
    assert set(names) <= set(registry.names()) and list(registry) == registry.names()
    assert all(n in registry for n in names) and "nope" not in registry
    with pytest.raises(ParameterError, match=r"Unknown .* 'nope'; known: \["):
        registry["nope"]


@pytest.mark.parametrize("registry", [TASKS, READERS, FEATURIZERS, HEURISTICS])
def test_a_second_object_under_a_taken_name_is_refused(registry: Registry) -> None:
    name = registry.names()[0]
    with pytest.raises(ValueError, match="already registered"):
        registry.register(name, object())
    registry.register(name, registry[name])  # the same object again is a no-op


def test_lookups_by_name_keep_their_parameter_messages() -> None:
    assert get_task("qa") is TASKS["qa"] and isinstance(TASKS["nli"], Task)
    with pytest.raises(ParameterError, match=r"^The 'task' parameter must be one of \["):
        get_task("nil")
    assert READERS["jsonl"] is read_jsonl
    assert make_featurizer("bow").weighting == "binary"
    with pytest.raises(ParameterError, match=r"^The 'features' parameter must be one of"):
        make_featurizer("tfdif")
