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
def test_cpu_model_is_the_first_processors_name_and_numbers():
    first = Path("/proc/cpuinfo").read_text().split("\n\n")[0]
    fields = {}
    for line in first.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    if "model name" not in fields:
        pytest.skip("this kernel's cpuinfo has no model name")
    assert cpu_model().startswith(fields["model name"])
    if "cpu family" in fields:
        assert f"cpu family {fields['cpu family']}" in cpu_model()


def test_cpu_model_reads_the_numbers_of_a_bare_name(monkeypatch, tmp_path):
    # A virtual machine's "AMD EPYC" alone does not tell Zen 3 from Zen 4.
    info = tmp_path / "cpuinfo"
    block = (
        "processor\t: {}\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\nstepping\t: 1\n"
    )
    info.write_text(block.format(0) + "\n" + block.format(1).replace("AMD EPYC", "Other"))
    real_open = open
    monkeypatch.setattr(
        "builtins.open",
        lambda path, *a, **k: real_open(info if path == "/proc/cpuinfo" else path, *a, **k),
    )
    provenance.cpu_model.cache_clear()
    try:
        assert cpu_model() == "AMD EPYC (cpu family 25, model 17, stepping 1)"
    finally:
        provenance.cpu_model.cache_clear()


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
