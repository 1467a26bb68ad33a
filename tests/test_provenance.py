"""What every result records about the machine and the installation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from spurious import provenance
from spurious.provenance import Provenance, cpu_model, dependency_versions


def test_versions_name_the_cpu_and_its_core_count():
    versions = dependency_versions()
    assert versions["cpu"] == cpu_model()
    assert versions["cpus"] == str(os.cpu_count())
    # Values stay strings: the report renders them as one key-value table.
    assert all(isinstance(v, str) for v in versions.values())


@pytest.mark.skipif(not Path("/proc/cpuinfo").exists(), reason="Linux only")
def test_cpu_model_is_the_first_model_name_in_proc_cpuinfo():
    names = [
        line.split(":", 1)[1].strip()
        for line in Path("/proc/cpuinfo").read_text().splitlines()
        if line.startswith("model name")
    ]
    if not names:
        pytest.skip("this kernel's cpuinfo has no model name")
    assert cpu_model() == names[0]


def test_cpu_model_falls_back_to_platform_without_proc(monkeypatch):
    def missing(*args, **kwargs):
        raise FileNotFoundError("/proc/cpuinfo")

    monkeypatch.setattr("builtins.open", missing)
    monkeypatch.setattr(provenance.platform, "processor", lambda: "arm64")
    provenance.cpu_model.cache_clear()
    try:
        assert cpu_model() == "arm64"
    finally:
        provenance.cpu_model.cache_clear()


def test_old_results_load_without_the_readers_machine():
    # A result saved before the CPU was recorded must not claim the reader's CPU.
    prov = Provenance.from_dict({"seed": 3, "fingerprints": {}})
    assert prov.versions == {} and prov.seed == 3
