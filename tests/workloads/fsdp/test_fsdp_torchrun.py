"""End to end under torchrun (gloo, CPU): training, kill + resume, resharding 2 -> 1 process."""

from __future__ import annotations

import shutil
import signal
import time
from pathlib import Path

import pytest
import torch
from fsdp_helpers import kill_tree, load_checkpoint, read_jsonl, run_torchrun, start_torchrun, tiny_args

from workloads.fsdp.checkpoint import complete_steps, step_dir_name

STEPS, EVERY = 20, 5


def _model_tensors(state: dict) -> dict[str, torch.Tensor]:
    return {key: value for key, value in state["app"]["model"].items() if isinstance(value, torch.Tensor)}


@pytest.fixture(scope="module")
def reference(tiny, tmp_path_factory) -> Path:
    """An uninterrupted 2-process run: 20 steps, a checkpoint every 5, evaluation every 10."""
    out = tmp_path_factory.mktemp("reference")
    run = run_torchrun(2, tiny_args(tiny, out, max_steps=STEPS, checkpoint_steps=EVERY, eval_steps=10), out / "log.txt")
    assert run.returncode == 0, run.output[-3000:]
    return out


def test_loss_falls_and_lines_follow_maxtext(reference: Path):
    log = (reference / "log.txt").read_text()
    steps = read_jsonl(reference / "metrics.jsonl", "train")
    assert [record["step"] for record in steps] == list(range(1, STEPS + 1))
    first, last = steps[0]["loss"], sum(record["loss"] for record in steps[-3:]) / 3
    assert last < first - 1.0, f"loss did not fall: {first:.3f} -> {last:.3f}"
    assert "completed step: 20, seconds: " in log and "TFLOP/s/device: " in log and "Tokens/s/device: " in log
    assert "MFU: n/a" in log  # no honest peak on a CPU
    evals = read_jsonl(reference / "metrics.jsonl", "eval")
    assert [record["step"] for record in evals] == [10, 20]
    assert evals[1]["loss"] < evals[0]["loss"]
    assert all(record["grad_norm"] is not None for record in steps)  # clipping ran every step


def test_checkpoints_are_complete_and_cover_the_data_position(reference: Path, tmp_path: Path):
    assert complete_steps(reference / "checkpoints") == [5, 10, 15, 20]
    state = load_checkpoint(reference / "checkpoints" / step_dir_name(10), tmp_path)
    assert state["progress"]["step"] == 10
    assert state["progress"]["rows_consumed"] == 10 * 2 * 2  # 2 ranks x 2 rows, one micro-batch per step
    assert state["scheduler"]["last_epoch"] == 10
    adam = state["app"]["optimizer"]["state"]["model.layers.0.self_attn.q_proj.weight"]
    assert float(adam["step"]) == 10 and adam["exp_avg"].abs().sum() > 0


def test_killed_run_resumes_at_its_checkpoint_bit_exact(tiny, reference: Path, tmp_path: Path):
    out = tmp_path / "killed"
    args = tiny_args(tiny, out, max_steps=STEPS, checkpoint_steps=EVERY, eval_steps=10, async_checkpoint="true")
    checkpoints = out / "checkpoints"
    killed = run_torchrun(
        2, args, tmp_path / "killed.txt", stop_when=lambda: (checkpoints / step_dir_name(10) / "COMPLETE").exists()
    )
    assert killed.returncode != 0, "the run finished before it could be killed"
    survivors = complete_steps(checkpoints)
    assert 10 in survivors and survivors[-1] < STEPS

    resumed = run_torchrun(2, args, tmp_path / "resumed.txt")
    assert resumed.returncode == 0, resumed.output[-3000:]
    assert resumed.header()["resumed_from_step"] == survivors[-1]
    assert resumed.lines(f"completed step: {survivors[-1] + 1},")
    assert not resumed.lines(f"completed step: {survivors[-1]},")

    final = _model_tensors(load_checkpoint(checkpoints / step_dir_name(STEPS), tmp_path))
    expected = _model_tensors(load_checkpoint(reference / "checkpoints" / step_dir_name(STEPS), tmp_path))
    assert final.keys() == expected.keys()
    for key in expected:
        assert torch.equal(final[key], expected[key]), f"{key} differs after resume"


def test_a_drained_run_saves_on_sigterm_and_resumes_with_the_same_losses(tiny, reference: Path, tmp_path: Path):
    """SIGTERM to torchrun, as the kubelet sends a drained or reclaimed node's container: the workers save at the
    next step boundary (not one of the every-5 steps) and stop; a restart resumes there and trains the very same
    steps as the uninterrupted run."""
    out = tmp_path / "drained"
    args = tiny_args(tiny, out, max_steps=STEPS, checkpoint_steps=EVERY, eval_steps=10)
    process = start_torchrun(2, args, tmp_path / "drained.txt")
    metrics = out / "metrics.jsonl"
    try:
        deadline = time.monotonic() + 240
        while not (metrics.exists() and len(read_jsonl(metrics, "train")) >= 6):
            assert process.poll() is None and time.monotonic() < deadline, "the run ended before the drain"
            time.sleep(0.02)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            kill_tree(process)
    drained = (tmp_path / "drained.txt").read_text()
    assert process.returncode != 0, drained[-3000:]
    assert "Received 15 death signal, shutting down workers" in drained  # torchrun passed the SIGTERM on
    stopped_at = complete_steps(out / "checkpoints")[-1]
    assert stopped_at % EVERY != 0 and 6 <= stopped_at < STEPS
    assert f"stopped on request after the checkpoint at step: {stopped_at}" in drained

    resumed = run_torchrun(2, args, tmp_path / "resumed.txt")
    assert resumed.returncode == 0, resumed.output[-3000:]
    assert resumed.header()["resumed_from_step"] == stopped_at
    reference_losses = {r["step"]: r["loss"] for r in read_jsonl(reference / "metrics.jsonl", "train")}
    losses = {r["step"]: r["loss"] for r in read_jsonl(metrics, "train")}  # both runs appended here
    assert losses == reference_losses
    final = _model_tensors(load_checkpoint(out / "checkpoints" / step_dir_name(STEPS), tmp_path))
    expected = _model_tensors(load_checkpoint(reference / "checkpoints" / step_dir_name(STEPS), tmp_path))
    for key in expected:
        assert torch.equal(final[key], expected[key]), f"{key} differs after the drain and resume"


def test_two_process_checkpoint_resumes_in_one_process(tiny, reference: Path, tmp_path: Path):
    out = tmp_path / "one"
    shutil.copytree(reference / "checkpoints" / step_dir_name(10), out / "checkpoints" / step_dir_name(10))
    # Same global batch on one rank: twice the micro-batches per step.
    args = tiny_args(tiny, out, max_steps=STEPS, checkpoint_steps=EVERY, gradient_accumulation_steps=2)
    run = run_torchrun(1, args, tmp_path / "one.txt")
    assert run.returncode == 0, run.output[-3000:]
    assert run.header()["world_size"] == 1 and run.header()["resumed_from_step"] == 10

    reference_losses = {r["step"]: r["loss"] for r in read_jsonl(reference / "metrics.jsonl", "train")}
    for record in read_jsonl(out / "metrics.jsonl", "train"):
        assert record["loss"] == pytest.approx(reference_losses[record["step"]], abs=1e-4)
    final = _model_tensors(load_checkpoint(out / "checkpoints" / step_dir_name(STEPS), tmp_path))
    expected = _model_tensors(load_checkpoint(reference / "checkpoints" / step_dir_name(STEPS), tmp_path))
    for key in expected:
        torch.testing.assert_close(final[key], expected[key], rtol=1e-3, atol=1e-5)


def test_activation_checkpointing_changes_memory_not_the_maths(tiny, reference: Path, tmp_path: Path):
    out = tmp_path / "recompute"
    run = run_torchrun(
        2, tiny_args(tiny, out, max_steps=STEPS, activation_checkpointing="true"), tmp_path / "recompute.txt"
    )
    assert run.returncode == 0, run.output[-3000:]
    assert run.header()["activation_checkpointing"] is True
    expected = [record["loss"] for record in read_jsonl(reference / "metrics.jsonl", "train")]
    losses = [record["loss"] for record in read_jsonl(out / "metrics.jsonl", "train")]
    assert losses == pytest.approx(expected, abs=1e-5)
