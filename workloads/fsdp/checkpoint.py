"""Step checkpoints with torch.distributed.checkpoint (DCP): sharded, atomic, optionally async, reshardable.

Layout: ``OUTPUT_DIR/checkpoints/step-00000040/`` holds DCP's files; it counts only once rank 0
has written ``COMPLETE`` into it, after DCP finished writing every rank's shards and the global
metadata. A run killed mid-save leaves a directory without the marker, which resume ignores.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.staging import DefaultStager, StagingOptions
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.checkpoint.stateful import Stateful

from workloads.fsdp.distributed import from_rank_zero

MARKER = "COMPLETE"
STEP_DIR = re.compile(r"^step-(\d+)$")


class ModelAndOptimizer(Stateful):
    """Sharded model and optimizer state under DCP's FQN-keyed layout (what lets world sizes differ)."""

    def __init__(self, model: nn.Module, optimizer):
        self.model, self.optimizer = model, optimizer

    def state_dict(self) -> dict[str, Any]:
        model_state, optimizer_state = get_state_dict(self.model, self.optimizer)
        return {"model": model_state, "optimizer": optimizer_state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        set_state_dict(self.model, self.optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])


class SchedulerState(Stateful):
    """LambdaLR's counters; its lambdas are code, rebuilt from the config, not data."""

    def __init__(self, scheduler):
        self.scheduler = scheduler

    def state_dict(self) -> dict[str, Any]:
        return {"last_epoch": self.scheduler.last_epoch, "step_count": self.scheduler._step_count}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.scheduler.last_epoch = int(state["last_epoch"])
        self.scheduler._step_count = int(state["step_count"])
        self.scheduler._last_lr = [group["lr"] for group in self.scheduler.optimizer.param_groups]


def step_dir_name(step: int) -> str:
    return f"step-{step:08d}"


def complete_steps(root: str | Path) -> list[int]:
    root = Path(root)
    if not root.is_dir():
        return []
    steps = []
    for child in root.iterdir():
        match = STEP_DIR.match(child.name)
        if match and (child / MARKER).is_file():
            steps.append(int(match.group(1)))
    return sorted(steps)


def _background_stager() -> DefaultStager:
    """Copies to host memory in a thread, into buffers kept from one save to the next (pinned on GPUs)."""
    on_gpu = torch.cuda.is_available()
    return DefaultStager(
        StagingOptions(
            use_pinned_memory=on_gpu, use_shared_memory=False, use_async_staging=True, use_non_blocking_copy=on_gpu
        )
    )


class Checkpointer:
    def __init__(self, root: str | Path, is_main: bool, async_save: bool = False, keep: int = 0):
        self.root, self.is_main, self.async_save, self.keep = Path(root), is_main, async_save, keep
        self._pending: tuple[int, Future] | None = None
        self._staging: Future | None = None
        self.staging_wait_seconds = 0.0  # time the loop spent waiting for staging before an optimizer step
        # Async saves run collectives from a background thread: give them a group of their own.
        self._async_group = dist.new_group(backend="gloo") if async_save else None
        self._stager = _background_stager() if async_save else None

    def latest_step(self) -> int | None:
        """The newest complete step as rank 0 sees it, shared with every rank: nodes with a stale view of a
        FUSE-mounted bucket must not disagree about where to resume."""
        return from_rank_zero(lambda: (complete_steps(self.root) or [None])[-1])

    def save(self, step: int, state: dict[str, Stateful]) -> float:
        """Start (async) or do (sync) a save; returns the seconds the training loop was blocked."""
        started = time.perf_counter()
        self.wait()  # at most one save in flight
        target = self.root / step_dir_name(step)
        if self.async_save:
            response = dcp.async_save(
                state, checkpoint_id=str(target), process_group=self._async_group, async_stager=self._stager
            )
            self._staging, self._pending = response.staging_completion, (step, response.upload_completion)
        else:
            dcp.save(state, checkpoint_id=str(target))
            self._finalize(step)
        return time.perf_counter() - started

    def wait_for_staging(self) -> None:
        """Call before the optimizer changes the weights: the staged copy must be taken first.

        Forward and backward of the next step overlap with staging; only the update waits."""
        if self._staging is not None:
            started = time.perf_counter()
            self._staging.result()
            self._staging = None
            self.staging_wait_seconds += time.perf_counter() - started

    def poll(self) -> None:
        """Mark a finished background save complete without waiting for one still running."""
        if self._pending and self._pending[1].done():
            self.wait()

    def wait(self) -> None:
        if self._pending is None:
            return
        step, future = self._pending
        self._pending = None
        self.wait_for_staging()
        future.result()
        self._finalize(step)

    def close(self) -> None:
        self.wait()
        if self._stager is not None:
            self._stager.close()

    def _finalize(self, step: int) -> None:
        # On rank 0, DCP returns only after gathering every rank's write results and writing the metadata.
        if not self.is_main:
            return
        marker = {"step": step, "world_size": dist.get_world_size(), "time": time.time()}
        target = self.root / step_dir_name(step)
        temporary = target / (MARKER + ".tmp")
        temporary.write_text(json.dumps(marker))
        os.replace(temporary, target / MARKER)
        self._prune()

    def _prune(self) -> None:
        if not self.keep:
            return
        for old_step in complete_steps(self.root)[: -self.keep]:
            # The marker goes first: a prune cut short leaves a step that no resume will pick.
            (self.root / step_dir_name(old_step) / MARKER).unlink(missing_ok=True)
            shutil.rmtree(self.root / step_dir_name(old_step), ignore_errors=True)

    def load(self, step: int, state: dict[str, Stateful]) -> None:
        dcp.load(state, checkpoint_id=str(self.root / step_dir_name(step)))
