"""How much each optional extra of `spurious` adds to an install, measured on disk.

For each extra in ``pyproject.toml`` the script resolves the extra's requirements
transitively through the installed distributions' own metadata (``importlib.metadata``),
removes what the core install already brings, and sums the sizes of the files each
remaining distribution's ``RECORD`` lists. No network, no new venv: it measures the
environment it runs in (``make install`` puts every extra in ``.venv``), so a package the
extra needs but this venv lacks is listed under ``missing``.

Run::

    .venv/bin/python bench/extras_size.py      # -> bench/results/extras_size.json

``--metadata`` reads the extras from the installed ``spurious`` distribution's metadata
(``Requires-Dist``) instead of ``pyproject.toml``, for a copy of ``bench/`` without the
checkout beside it.

Sizes overlap between extras (``encoder`` and ``bench`` both bring torch): each extra is
measured on top of the core install alone, and ``all_extras_mib`` counts every
distribution once.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
from importlib import metadata
from pathlib import Path

import tomllib
from packaging.markers import default_environment
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "extras_size.json"
#: The extras as the installed package declares them (the smoke copy has no pyproject.toml).
SMOKE_ARGS = ["--metadata"]


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _dist_size(dist: metadata.Distribution) -> int:
    total = 0
    for f in dist.files or ():
        if f.size is not None:
            total += int(f.size)
            continue
        with contextlib.suppress(OSError):
            total += Path(str(dist.locate_file(f))).stat().st_size
    return total


def _closure(reqs: list[str], extra: str | None = None) -> tuple[set[str], set[str]]:
    """Distributions (canonical names) that ``reqs`` pull in, and those not installed."""
    seen: set[str] = set()
    missing: set[str] = set()
    stack = [(r, extra) for r in reqs]
    while stack:
        text, from_extra = stack.pop()
        req = Requirement(text)
        env = {**default_environment(), "extra": from_extra or ""}
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        name = _canon(req.name)
        if name in seen or name in missing:
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            missing.add(name)
            continue
        seen.add(name)
        for sub in dist.requires or ():
            sub_req = Requirement(sub)
            for wanted in req.extras or {""}:
                if sub_req.marker is None or sub_req.marker.evaluate(
                    {**default_environment(), "extra": wanted}
                ):
                    stack.append((sub.split(";")[0], None))
                    break
    return seen, missing


def _installed_project() -> dict[str, object]:
    """``dependencies`` and ``optional-dependencies`` of the installed ``spurious``."""
    dist = metadata.distribution("spurious")
    deps: list[str] = []
    extras: dict[str, list[str]] = {e: [] for e in dist.metadata.get_all("Provides-Extra") or ()}
    for text in dist.requires or ():
        req = Requirement(text)
        marker, req.marker = req.marker, None  # evaluated here, per extra
        if marker is None or marker.evaluate({**default_environment(), "extra": ""}):
            deps.append(text)
            continue
        for extra, reqs in extras.items():
            if marker.evaluate({**default_environment(), "extra": extra}):
                reqs.append(str(req))
    return {"dependencies": deps, "optional-dependencies": extras}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--metadata",
        action="store_true",
        help="read the extras from the installed spurious distribution, not pyproject.toml",
    )
    args = ap.parse_args()
    if args.metadata:
        project = _installed_project()
    else:
        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    sizes = {}
    for dist in metadata.distributions():
        sizes.setdefault(_canon(dist.metadata["Name"]), _dist_size(dist))
    core, core_missing = _closure(list(project["dependencies"]))
    core_mib = sum(sizes[n] for n in core) / 2**20
    extras: dict[str, dict[str, object]] = {}
    everything = set(core)
    for extra, reqs in project["optional-dependencies"].items():
        if extra == "all":
            continue
        reqs = [r for r in reqs if not r.startswith("spurious[")]
        names, missing = _closure(reqs)
        added = sorted(names - core)
        everything |= names
        biggest = sorted(added, key=lambda n: -sizes[n])[:4]
        extras[extra] = {
            "requirements": reqs,
            "adds_mib": round(sum(sizes[n] for n in added) / 2**20, 1),
            "n_distributions": len(added),
            "largest": {n: round(sizes[n] / 2**20, 1) for n in biggest},
            "missing": sorted(missing),
        }
    result = {
        "command": "python bench/extras_size.py" + (" --metadata" if args.metadata else ""),
        "python": sys.version.split()[0],
        "measured": "installed files (RECORD) of the distributions each extra pulls in "
        "beyond the core install, in this environment",
        "core_mib": round(core_mib, 1),
        "core_missing": sorted(core_missing),
        "extras": extras,
        "all_extras_mib": round(sum(sizes[n] for n in everything) / 2**20, 1),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tmp = OUT.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(OUT)
    print(f"core {result['core_mib']} MiB")
    for name, e in extras.items():
        print(f"[{name}] +{e['adds_mib']} MiB ({e['n_distributions']} dists) {e['largest']}")
    print(f"everything {result['all_extras_mib']} MiB")


if __name__ == "__main__":
    main()
