"""Local mode, end to end: a local Ray cluster, 2 CPU workers running multi-process JAX, MaxText's real loop.

Each test runs the same entrypoint the RayJob runs (through `workloads.maxtext.local`) as a subprocess
and reads MaxText's own "completed step" lines that Ray forwards from the workers.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

STEP_LINE = re.compile(r"\(RayTrainWorker pid=(\d+)[^)]*\).*completed step: (\d+), .*?loss: ([\d.]+)")
STEPS, CHECKPOINT_PERIOD, FAIL_AT = 12, 5, 7
pytestmark = pytest.mark.slow


def _run_local(repo_root: Path, storage: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "workloads.maxtext.local",
            "--workers",
            "2",
            "--steps",
            str(STEPS),
            "--checkpoint-period",
            str(CHECKPOINT_PERIOD),
            "--storage-path",
            str(storage),
            *flags,
        ],
        check=False,
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _losses_by_worker(output: str) -> dict[int, dict[int, float]]:
    """pid -> {step: loss}, in the order the workers logged them."""
    losses: dict[int, dict[int, float]] = defaultdict(dict)
    for pid, step, loss in STEP_LINE.findall(output):
        losses[int(pid)][int(step)] = float(loss)
    return dict(losses)


def test_two_cpu_workers_train_and_the_loss_falls(repo_root, tmp_path):
    run = _run_local(repo_root, tmp_path)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    losses = _losses_by_worker(run.stdout + run.stderr)
    assert len(losses) == 2, "both JAX processes log MaxText's step lines"
    for steps in losses.values():
        assert sorted(steps) == list(range(STEPS))
        assert steps[STEPS - 1] < 0.5 * steps[0]
    first, second = losses.values()
    assert first == second, "one SPMD program: both processes see the same global loss"
    checkpoints = tmp_path / "tiny" / "checkpoints"
    assert {int(path.name) for path in checkpoints.iterdir()} >= {0, CHECKPOINT_PERIOD}
    output = run.stdout + run.stderr
    assert f"Saved a checkpoint at step {CHECKPOINT_PERIOD}" in output, "MaxText's own checkpoint lines stay"
    assert "Queuing deletion of steps" not in output, "orbax's INFO internals are filtered out"


def test_a_failed_worker_restarts_the_group_which_resumes_from_maxtexts_checkpoint(repo_root, tmp_path):
    run = _run_local(repo_root, tmp_path, "--fail-once-at-step", str(FAIL_AT), "--max-failures", "1")
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-6000:]
    assert "injected failure of this worker after step 7" in output
    assert f"restoring from this run's directory step {CHECKPOINT_PERIOD}" in output
    losses = _losses_by_worker(output)
    assert len(losses) == 4, "two workers before the failure, two new ones after the restart"
    before = [steps for steps in losses.values() if min(steps) == 0]
    after = [steps for steps in losses.values() if min(steps) > 0]
    assert len(before) == 2 and len(after) == 2
    for steps in after:
        assert sorted(steps) == list(range(CHECKPOINT_PERIOD + 1, STEPS))
        # Same loss as the first attempt at that step: the state came from the checkpoint, not a fresh start.
        assert steps[CHECKPOINT_PERIOD + 1] == before[0][CHECKPOINT_PERIOD + 1]
    assert (tmp_path / "tiny" / ".trainyard-injected-failure").exists()


def test_without_failure_budget_the_injected_failure_ends_the_run(repo_root, tmp_path):
    run = _run_local(repo_root, tmp_path, "--fail-once-at-step", "2", "--max-failures", "0")
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "injected failure of this worker after step 2" in output
    assert "restoring from this run's directory" not in output
