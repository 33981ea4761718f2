"""How big the FSDP image's Python layer is: `workloads/fsdp/requirements.txt` installed into a fresh venv.

The image (`workloads/fsdp/Dockerfile`) is Ubuntu 24.04 with Python 3.12 and a compiler, then one pip layer
with the trainer's pins, then the trainer's code. No Docker daemon or registry is reachable here, so the image
itself cannot be built or weighed; this builds that pip layer the way the Dockerfile does (pip, no cache, the
same pins) and prints what it installs, the wheels it downloads (a registry stores layers compressed, so the
wheels are the closer guide to what each node pulls) and the largest distributions.

    .venv/bin/python benchmarks/fsdp_image.py     # about 5 minutes and 12 GB of disk in /tmp
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from installs import run, tree_bytes

PROJECT_DIR = Path(__file__).resolve().parents[1]
REQUIREMENTS = PROJECT_DIR / "workloads/fsdp/requirements.txt"
LARGEST = 8


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="fsdp-image-") as scratch:
        root = Path(scratch)
        run(sys.executable, "-m", "venv", root / "venv")
        python = root / "venv/bin/python"
        site = next((root / "venv/lib").glob("python3*/site-packages"))
        before = tree_bytes(site)
        start = time.perf_counter()
        run(python, "-m", "pip", "install", "-q", "--no-cache-dir", "-r", REQUIREMENTS)
        seconds = time.perf_counter() - start
        installed = tree_bytes(site) - before
        pins = [line for line in run(python, "-m", "pip", "freeze").splitlines() if "==" in line]
        run(python, "-m", "pip", "download", "-q", "--no-deps", "-d", root / "wheels", *pins)
        wheels = sorted((root / "wheels").iterdir(), key=lambda wheel: wheel.stat().st_size, reverse=True)
        downloaded = sum(wheel.stat().st_size for wheel in wheels)
        print(f"distributions in the pip layer: {len(pins)} (from {REQUIREMENTS.relative_to(PROJECT_DIR)})")
        print(f"installed: {installed / 1e9:.2f} GB; wheels: {downloaded / 1e9:.2f} GB; pip install: {seconds:.0f} s")
        print(f"largest wheels ({downloaded / 1e9:.2f} GB in all):")
        for wheel in wheels[:LARGEST]:
            print(f"  {wheel.stat().st_size / 1e9:6.2f} GB  {wheel.name}")


if __name__ == "__main__":
    main()
