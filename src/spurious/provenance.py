"""What every result records about how it was made: versions, seed, fingerprints, timings."""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import os
import platform
import sys
from dataclasses import asdict, dataclass, field, fields
from importlib import metadata
from pathlib import Path
from typing import Any

from spurious._version import __version__

#: Dependencies whose versions are recorded with every result.
TRACKED_PACKAGES = (
    "numpy",
    "scipy",
    "fastcluster",
    "scikit-learn",
    "pandas",
    "pyarrow",
    "torch",
    "transformers",
    "datasets",
)


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU's model name with its family, model and stepping numbers
    (``/proc/cpuinfo``; else :func:`platform.processor`, empty where neither says).

    Timings only compare on one machine, and float results can differ between CPU
    families (BLAS kernels pick AVX-512 or AMX paths), so every result names its CPU.
    Virtual machines often report a bare "AMD EPYC": the numbers tell the generations
    apart (family 25, model 17 is Zen 4).

    Examples
    --------
    >>> isinstance(cpu_model(), str)
    True
    """
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip()
                if not key and fields:  # the first processor's block ends
                    break
                if key in ("model name", "cpu family", "model", "stepping"):
                    fields.setdefault(key, value.strip())
    except OSError:  # not Linux
        pass
    name = fields.get("model name") or platform.processor()
    numbers = [f"{k} {fields[k]}" for k in ("cpu family", "model", "stepping") if k in fields]
    return f"{name} ({', '.join(numbers)})" if name and numbers else name


def dependency_versions() -> dict[str, str]:
    """Installed versions of the tracked dependencies (missing ones are omitted), the
    machine's CPU model and core count (``"cpu"``, ``"cpus"``), and its GPU when the
    run's torch saw one (``"gpu"``): the model-based steps ran there unless the config
    pins ``"device"`` (results on a GPU differ from the CPU's at float rounding)."""
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    out["cpu"] = cpu_model()
    out["cpus"] = str(os.cpu_count() or "")
    for pkg in TRACKED_PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    torch = sys.modules.get("torch")  # never imported here: only when the run used it
    try:
        if torch is not None and torch.cuda.is_available():
            out["gpu"] = torch.cuda.get_device_name()
    except Exception:  # a torch without CUDA, a broken driver: no GPU to name
        pass
    return out


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of this installation's Python source (every ``.py`` file of the package).

    The version string names a release; between releases (a development checkout) the
    code changes under the same version, and a run continued after such a change must
    not keep results the old code computed (:func:`spurious.rundir.interrupted_run`).

    Examples
    --------
    >>> len(code_fingerprint())
    16
    """
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def now_iso() -> str:
    """Current UTC time, ISO 8601, second precision."""
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


@dataclass
class Provenance:
    """How a result was produced. Unknown keys are ignored on load (forward compatible)."""

    library_version: str = __version__
    seed: int | None = None
    fingerprints: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dependency_versions)
    created: str = field(default_factory=now_iso)
    #: The run warnings this analysis raised (a continued run that reuses the result
    #: reports them again; see :func:`spurious.rundir.saved_result`).
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Provenance:
        # Missing fields load as "unknown", never as the *reader's* environment.
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {
            "library_version": "unknown",
            "versions": {},
            "created": "unknown",
        }
        values.update({k: v for k, v in d.items() if k in known})
        return cls(**values)
