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


def test_pruning_takes_the_marker_first_so_an_interrupted_prune_leaves_no_resumable_half(tmp_path, monkeypatch):
    for step in (5, 10, 15):
        _make_step(tmp_path, step, complete=True)
    monkeypatch.setattr("shutil.rmtree", lambda *args, **kwargs: None)  # the deletion dies right after the marker
    Checkpointer(tmp_path, is_main=True, keep=1)._prune()
    assert complete_steps(tmp_path) == [15]
    assert (tmp_path / step_dir_name(5) / "__0_0.distcp").exists()  # files left, but no resume picks them


def test_a_time_interval_makes_a_checkpoint_overdue():
    from workloads.fsdp.loop import Schedule

    every_half_hour = Schedule(100, 10, 0, 0, 0, 0, checkpoint_seconds=1800)
    assert not every_half_hour.checkpoint_overdue(1799.0) and every_half_hour.checkpoint_overdue(1800.0)
    assert not Schedule(100, 10, 0, 0, 0, 0).checkpoint_overdue(10**9)
