"""What the MaxText image removes from every RayJob start: the runtime env's install of MaxText on each TPU host.

Before the stack built `workloads/maxtext/Dockerfile`, the RayJobs ran the stock Ray TPU image and their runtime
env (`uv: packages: [maxtext[tpu]==0.2.5]`) installed MaxText, JAX, libtpu and friends on every worker at
every start, while the slices were billed. This emulates one worker: a venv holding the pinned Ray (what the
Ray image carries), then times `uv pip install maxtext[tpu]==0.2.5` under the trainer's lock with an empty
cache, as a fresh node would. It prints the bytes downloaded (the wheels of every newly installed
distribution), the bytes installed, the seconds, and what that costs on the dev stack's 2 x v6e-16 (8 hosts).

    .venv/bin/python benchmarks/maxtext_startup.py        # about 5-10 minutes and 6 GB of disk in /tmp
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_DIR))

from installs import run, tree_bytes

from components.facts import topology
from components.facts.cost import load_prices

MAXTEXT = "maxtext[tpu]==0.2.5"
RAY = "ray[default,train]==2.60.0"
CONSTRAINTS = PROJECT_DIR / "workloads/maxtext/constraints.txt"
DEV_HOSTS = 8  # 2 slices x 4 VMs of v6e 4x4
DEV_MACHINE, DEV_REGION = "ct6e-standard-4t", "us-east5"


def frozen(python: Path) -> set[str]:
    return {line.strip() for line in run(python, "-m", "pip", "freeze").splitlines() if "==" in line}


def main() -> None:
    tpu = topology.tpu_generation_of_machine(DEV_MACHINE)
    host_hour, _ = load_prices().node_hour(DEV_MACHINE, DEV_REGION, "on-demand")
    with tempfile.TemporaryDirectory(prefix="maxtext-startup-") as scratch:
        root = Path(scratch)
        run(sys.executable, "-m", "venv", root / "worker")
        python, uv = root / "worker/bin/python", root / "worker/bin/uv"
        run(python, "-m", "pip", "install", "-q", "uv", RAY, "-c", CONSTRAINTS)
        site = next((root / "worker/lib").glob("python3*/site-packages"))
        before_bytes, before = tree_bytes(site), frozen(python)
        start = time.perf_counter()
        run(uv, "pip", "install", "--python", python, "--cache-dir", root / "uv-cache", "-c", CONSTRAINTS, MAXTEXT)
        seconds = time.perf_counter() - start
        added = sorted(frozen(python) - before)
        installed = tree_bytes(site) - before_bytes
        run(python, "-m", "pip", "download", "-q", "--no-deps", "-d", root / "wheels", *added)
        downloaded = tree_bytes(root / "wheels")
    host_hours = DEV_HOSTS * seconds / 3600
    print(f"distributions the runtime env installed on top of {RAY}: {len(added)}")
    print(f"downloaded per host: {downloaded / 1e9:.2f} GB; installed per host: {installed / 1e9:.2f} GB")
    print(f"install time per host (uv, empty cache, this machine): {seconds:.0f} s")
    print(
        f"dev stack ({DEV_HOSTS} x {DEV_MACHINE}, {tpu.chips_per_machine_type[DEV_MACHINE]} chips each) per start: "
        f"{host_hours:.2f} host-hours, {host_hours * tpu.chips_per_machine_type[DEV_MACHINE]:.2f} chip-hours, "
        f"${host_hours * host_hour:.2f} on demand"
    )


if __name__ == "__main__":
    main()
