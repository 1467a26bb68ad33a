"""The README's picture of the report: the first screen of the demo run, in headless Chromium.

Runs ``spurious demo`` into a temporary folder (or takes a run directory with ``--run``),
opens its report.html in headless Chromium at 1366 x 900 CSS pixels, device scale 1, and
saves what the window shows: the header, the overall answer with its next steps and the
finding cards. The PNG is reduced to a 256-colour palette when it would exceed
``--max-kb`` (flat report colours survive that unchanged; it keeps the repository small).

Usage::

    HF_HUB_OFFLINE=1 python bench/report_screenshot.py
    python bench/report_screenshot.py --run runs/audit --out /tmp/first_screen.png

Needs ``chromium`` (or ``chromium-browser`` / ``google-chrome``) on the PATH; the demo
needs the MiniLM encoder (cached, or downloaded once without ``HF_HUB_OFFLINE``).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "docs" / "img" / "report_first_screen.png"
SMOKE_SKIP = (
    "needs headless Chromium (a browser, not a Python package) and writes a PNG screenshot, "
    "no JSON result"
)


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("report_screenshot: no chromium, chromium-browser or google-chrome on the PATH")


def demo_run(where: Path) -> Path:
    """``spurious demo --out where/demo``; the run directory."""
    run_dir = where / "demo"
    spurious = Path(sys.executable).with_name("spurious")
    cmd = [str(spurious)] if spurious.exists() else [sys.executable, "-m", "spurious"]
    subprocess.run([*cmd, "demo", "--out", str(run_dir)], check=True, timeout=1800)
    return run_dir


def screenshot(page: Path, out: Path, *, width: int, height: int, profile: Path) -> None:
    """What a ``width`` x ``height`` window shows of ``page`` from its top."""
    subprocess.run(
        [
            chromium(),
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--force-device-scale-factor=1",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            f"--screenshot={out}",
            page.resolve().as_uri(),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=300,
    )


def shrink(path: Path, max_kb: int) -> None:
    """Re-save ``path`` as a 256-colour PNG when it is larger than ``max_kb``."""
    if path.stat().st_size <= max_kb * 1024:
        return
    with Image.open(path) as im:
        small = im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, help="a run directory (default: a fresh demo run)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--width", type=int, default=1366)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--max-kb", type=int, default=300)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="spurious-shot-") as tmp:
        run_dir = args.run if args.run is not None else demo_run(Path(tmp))
        page = run_dir / "report.html"
        if not page.is_file():
            sys.exit(f"report_screenshot: {page} does not exist (render it: spurious report)")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        shot = Path(tmp) / "shot.png"
        screenshot(page, shot, width=args.width, height=args.height, profile=Path(tmp) / "p")
        shrink(shot, args.max_kb)
        shutil.copyfile(shot, args.out)
    size = args.out.stat().st_size / 1024
    print(f"wrote {args.out} ({args.width} x {args.height}, {size:.0f} kB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
