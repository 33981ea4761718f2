"""Fit-check figures for the seeds' MaxText jobs on 2 x v6e-16: HBM needed per chip over available, compile
wall time and the compiler's peak RSS, each job compiled alone (libtpu's compiler, on this CPU).

    .venv-maxtext/bin/python benchmarks/maxtext_fit.py [--jobs 8b,70b]

Each job takes minutes and several GB of RAM; they run one after another, never together.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
TWO_V6E_16 = ["--accelerator-type", "TPU-V6E", "--topology", "4x4", "--slices", "2"]
TWO_V6E_16 += ["--hosts-per-slice", "4", "--chips-per-host", "4"]
# The seeds' ray-maxtext-multislice-gke jobs, as submitted there.
SEED_JOBS: dict[str, list[str]] = {
    "8b": [
        "model_name=llama3-8b",
        "dataset_type=synthetic",
        "steps=100",
        "per_device_batch_size=4",
        "max_target_length=4096",
        "ici_fsdp_parallelism=4",
        "ici_tensor_parallelism=4",
    ],
    "70b": [
        "model_name=llama3-70b",
        "dataset_type=synthetic",
        "steps=100",
        "per_device_batch_size=2",
        "max_target_length=4096",
        "ici_tensor_parallelism=4",
        "ici_fsdp_parallelism=4",
        "dcn_fsdp_parallelism=2",
        "dcn_data_parallelism=1",
        "remat_policy=full",
    ],
}


def measure(job: str) -> dict:
    command = [sys.executable, "-m", "tools.maxtext_fit.fit", *TWO_V6E_16, "--name", f"seed-{job}", "--json"]
    started = time.monotonic()
    process = subprocess.Popen(
        [*command, "--", *SEED_JOBS[job]], cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    verdict = json.loads(next(line for line in output.splitlines() if line.startswith("{")))
    return {
        **verdict,
        "exit_code": os.waitstatus_to_exitcode(status),
        "wall_seconds": time.monotonic() - started,
        "peak_rss_gb": usage.ru_maxrss * 1024 / 1e9,
    }


def report(result: dict) -> str:
    available = result["available_bytes"] / 1e9
    if result["needed_bytes"] is None:
        need = f"compiler out of HBM ({result['compiler_error'].split(': ', 2)[-1]})"
    else:
        needed = result["needed_bytes"] / 1e9
        need = f"needs {needed:.1f} GB of {available:.1f} GB per chip = {needed / available:.2f}"
    return (
        f"{result['name']}: {need}; fits={result['fits']}; compile {result['compile_seconds']:.0f} s, "
        f"wall {result['wall_seconds']:.0f} s, peak RSS {result['peak_rss_gb']:.2f} GB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", default="8b,70b", help=f"comma-separated, from {', '.join(SEED_JOBS)}")
    for job in parser.parse_args().jobs.split(","):
        print(report(measure(job.strip())), flush=True)


if __name__ == "__main__":
    main()
