"""Checkpoint directory rules: only marked steps count; pruning keeps the newest complete ones."""

from __future__ import annotations

from workloads.fsdp.checkpoint import MARKER, Checkpointer, complete_steps, step_dir_name


def _make_step(root, step: int, complete: bool) -> None:
    directory = root / step_dir_name(step)
    directory.mkdir(parents=True)
    (directory / "__0_0.distcp").write_bytes(b"shard")
    if complete:
        (directory / MARKER).write_text("{}")


def test_a_step_without_its_marker_does_not_count(tmp_path):
    for step, complete in ((5, True), (10, True), (15, False)):
        _make_step(tmp_path, step, complete)
    (tmp_path / "notes").mkdir()
    assert complete_steps(tmp_path) == [5, 10]
    assert complete_steps(tmp_path / "missing") == []


def test_pruning_keeps_the_newest_complete_steps_and_leaves_partial_ones(tmp_path):
    for step, complete in ((5, True), (10, True), (15, True), (20, False)):
        _make_step(tmp_path, step, complete)
    Checkpointer(tmp_path, is_main=True, keep=2)._prune()
    assert complete_steps(tmp_path) == [10, 15]
    assert (tmp_path / step_dir_name(20)).is_dir()
