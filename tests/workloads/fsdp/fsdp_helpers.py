"""Helpers for the FSDP trainer tests: flags for tiny runs, a torchrun launcher that can kill, readers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "OMP_NUM_THREADS": "1",
    # torchrun restarts are flaky when workers share the rendezvous store (measured here).
    "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1",
}


@dataclass(frozen=True)
class TinyFixture:
    model_dir: Path
    dataset_dir: Path


def tiny_args(fixture: TinyFixture, output_dir: Path, **overrides) -> list[str]:
    """Flags for a fast CPU run; keyword overrides use the flag name with underscores."""
    flags = {
        "model_id": fixture.model_dir,
        "dataset_id": fixture.dataset_dir,
        "output_dir": output_dir,
        "max_seq_length": 512,
        "per_device_train_batch_size": 2,
        "gradient_accumulation_steps": 1,
        "learning_rate": 3e-3,
        "warmup_ratio": 0,
        "compile": "false",
        "mixed_precision": "fp32",
        "param_dtype": "fp32",
        "dist_timeout_s": 60,
        "progress": "off",
        "metrics_jsonl": output_dir / "metrics.jsonl",
        "checkpoint_epochs": 0,
    }
    flags.update(overrides)
    return [f"--{key.replace('_', '-')}={value}" for key, value in flags.items()]


@dataclass
class Run:
    returncode: int
    output: str

    def lines(self, prefix: str) -> list[str]:
        return [line for line in self.output.splitlines() if line.startswith(prefix)]

    def header(self) -> dict:
        return json.loads(next(line for line in self.output.splitlines() if line.startswith('{"config"')))


def torchrun_command(nproc: int, args: Sequence[str]) -> list[str]:
    torchrun = Path(sys.executable).with_name("torchrun")
    return [str(torchrun), "--standalone", f"--nproc_per_node={nproc}", "-m", "workloads.fsdp.train", *args]


def start_torchrun(nproc: int, args: Sequence[str], log_path: Path) -> subprocess.Popen:
    log = log_path.open("w")
    return subprocess.Popen(
        torchrun_command(nproc, args),
        cwd=REPO_ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, **OFFLINE_ENV},
    )


def kill_tree(process: subprocess.Popen) -> None:
    """SIGKILL torchrun and every worker, like a lost node. Killing torchrun alone leaves workers
    running, and torchrun starts each worker in a session of its own, so a process-group kill misses them."""
    import psutil

    try:
        workers = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        workers = []
    process.kill()
    for worker in workers:
        try:
            worker.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(workers, timeout=30)
    process.wait(timeout=30)  # reaped here, not by psutil, so Popen keeps the real exit status


def run_torchrun(
    nproc: int, args: Sequence[str], log_path: Path, timeout_s: float = 240, stop_when: Callable[[], bool] | None = None
) -> Run:
    """Run to completion (or until ``stop_when()`` holds, then SIGKILL the group, like a lost node)."""
    process = start_torchrun(nproc, args, log_path)
    deadline = time.monotonic() + timeout_s
    try:
        while process.poll() is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"torchrun did not finish in {timeout_s}s; log {log_path}")
            if stop_when is not None and stop_when():
                kill_tree(process)
                break
            time.sleep(0.02)
    finally:
        if process.poll() is None:
            kill_tree(process)
    return Run(process.returncode, log_path.read_text())


def read_jsonl(path: Path, kind: str) -> list[dict]:
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [record for record in records if record["kind"] == kind]


def load_checkpoint(step_dir: Path, tmp_path: Path) -> dict:
    """A DCP step directory as one flat dict, read in this (non-distributed) process."""
    import torch
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    target = tmp_path / f"{step_dir.parent.parent.name}-{step_dir.name}.pt"
    dcp_to_torch_save(str(step_dir), str(target))
    return torch.load(target, weights_only=False)
