"""`preflight diff` against a single cold preflight on the dev stack, side by side in one run.

Run: .venv/bin/python benchmarks/preflight_diff.py [--runs N]
Target: the diff (planning the base and the working tree, comparing, rendering) takes at most 2x one cold
`python -m preflight --stack dev`. The base is HEAD, so both revisions plan the same code: the figure is the
diff's own cost, not a change's.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[1]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _seconds(command: list[str]) -> tuple[float, float]:
    """(wall, CPU of the command and its children): on shared cores the CPU seconds are the steadier figure."""
    start, cpu = time.perf_counter(), _cpu()
    subprocess.run(command, cwd=PROJECT_DIR, check=True, capture_output=True)
    return time.perf_counter() - start, _cpu() - cpu


def cold_preflight() -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        return _seconds([sys.executable, "-m", "preflight", "--stack", "dev", "--json", f"{tmp}/plan.json"])


def diff() -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "preflight", "diff", "--base", "HEAD", "--stack", "dev"]
        return _seconds([*command, "--format", "markdown", "--output", f"{tmp}/diff.md"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each, alternated (default: 3)")
    runs = parser.parse_args().runs
    singles, diffs = [], []
    for _ in range(runs):  # alternated, so both see the same load on the cores
        singles.append(cold_preflight())
        diffs.append(diff())
    print(f"{'':37} {'wall':>7} {'CPU':>7}  runs (wall/CPU s)")
    ratios = []
    for label, runs_of in (
        ("cold python -m preflight --stack dev", singles),
        ("python -m preflight diff --base HEAD", diffs),
    ):
        wall, cpu = statistics.median(w for w, _ in runs_of), statistics.median(c for _, c in runs_of)
        ratios.append((wall, cpu))
        detail = ", ".join(f"{w:.1f}/{c:.1f}" for w, c in runs_of)
        print(f"{label:37} {wall:6.2f}s {cpu:6.2f}s  {detail}")
    (single_wall, single_cpu), (diff_wall, diff_cpu) = ratios
    print(f"diff / cold preflight: wall {diff_wall / single_wall:.2f}, CPU {diff_cpu / single_cpu:.2f} (target <= 2)")
    return 0 if diff_wall <= 2 * single_wall else 1


if __name__ == "__main__":
    sys.exit(main())
