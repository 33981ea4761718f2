"""The training step, evaluation and the loop that schedules checkpoints, evals and metrics."""

from __future__ import annotations

import math
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.tensor import DTensor

from workloads.fsdp.batching import IGNORE_INDEX, BatchPlanner, DataPosition, MicroBatch
from workloads.fsdp.checkpoint import Checkpointer, ModelAndOptimizer, SchedulerState
from workloads.fsdp.flops import FlopModel
from workloads.fsdp.metrics import MetricsLogger, StepRecord


def build_optimizer(model: nn.Module, learning_rate: float, weight_decay: float, total_steps: int, warmup_ratio: float):
    from transformers import get_linear_schedule_with_warmup

    params = [param for param in model.parameters() if param.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=learning_rate, weight_decay=weight_decay, foreach=True)
    warmup = math.ceil(warmup_ratio * total_steps)
    return optimizer, get_linear_schedule_with_warmup(optimizer, warmup, total_steps)


def summed_token_loss(model: nn.Module, batch: MicroBatch, device: torch.device) -> torch.Tensor:
    logits = model(**batch.model_inputs(device)).logits
    return F.cross_entropy(
        logits.flatten(0, 1).float(), batch.targets.to(device).flatten(), ignore_index=IGNORE_INDEX, reduction="sum"
    )


def _as_float(value: torch.Tensor) -> float:
    return float(value.full_tensor() if isinstance(value, DTensor) else value)


@dataclass
class Progress:
    """Everything besides model and optimizer that a resume needs: the step and the data position."""

    step: int = 0
    data: DataPosition = field(default_factory=DataPosition)

    def state_dict(self) -> dict[str, int]:
        return {"step": self.step, **self.data.state_dict()}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.step = int(state["step"])
        self.data.load_state_dict(state)


@dataclass
class Trainer:
    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    train_batches: BatchPlanner
    eval_batches: BatchPlanner
    flop_model: FlopModel
    device: torch.device
    world_size: int
    accumulation: int
    max_grad_norm: float
    seed: int
    progress: Progress = field(default_factory=Progress)
    before_optimizer_step: Callable[[], None] = lambda: None  # e.g. wait for an async checkpoint's staging

    def checkpoint_state(self) -> dict:
        return {
            "app": ModelAndOptimizer(self.model, self.optimizer),
            "scheduler": SchedulerState(self.scheduler),
            "progress": self.progress,
        }

    def train_step(self) -> StepRecord:
        started = time.perf_counter()
        self.model.train()
        # Reseeded per step (not carried in the checkpoint), so dropout replays identically after a resume.
        torch.manual_seed(self.seed * 1_000_003 + self.progress.step * 1009 + dist.get_rank())
        micro_batches, global_targets = self.train_batches.step_batches(self.progress.data, self.accumulation)
        loss_sum, lengths = self._accumulate_gradients(micro_batches, global_targets)
        grad_norm = self._clip_gradients()
        learning_rate = self.optimizer.param_groups[0]["lr"]
        self.before_optimizer_step()
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        totals = torch.tensor([loss_sum, self.flop_model.training_flops(lengths), sum(lengths)], dtype=torch.float64)
        dist.all_reduce(totals)
        self.progress.step += 1
        self.train_batches.advance(self.progress.data, self.accumulation)
        return StepRecord(
            step=self.progress.step,
            seconds=time.perf_counter() - started,
            loss=totals[0].item() / max(global_targets, 1),
            useful_tokens=int(totals[2]),
            flops=totals[1].item(),
            world_size=self.world_size,
            lr=learning_rate,
            grad_norm=grad_norm,
        )

    def _accumulate_gradients(self, micro_batches: list[MicroBatch], global_targets: int) -> tuple[float, list[int]]:
        """Backward every micro-batch; returns this rank's summed token loss and its samples' lengths."""
        # Sum of token losses / the step's global token count, times world size as FSDP averages over ranks.
        scale = self.world_size / max(global_targets, 1)
        loss_sum = torch.zeros((), device=self.device)
        lengths: list[int] = []
        for batch in micro_batches:
            batch_loss = summed_token_loss(self.model, batch, self.device)
            (batch_loss * scale).backward()
            loss_sum += batch_loss.detach()
            lengths += batch.sample_lengths
        return loss_sum.item(), lengths

    def _clip_gradients(self) -> float | None:
        if not self.max_grad_norm:
            return None
        params = [param for param in self.model.parameters() if param.grad is not None]
        return _as_float(torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm, foreach=True))

    @torch.no_grad()
    def evaluate(self, max_batches: int) -> tuple[float, int]:
        """Mean next-token loss over the held-out rows, and how many target tokens that covered."""
        self.model.eval()
        totals = torch.zeros(2, dtype=torch.float64)
        for batch in self.eval_batches.eval_batches(max_batches):
            totals[0] += summed_token_loss(self.model, batch, self.device).item()
            totals[1] += batch.target_tokens
        dist.all_reduce(totals)
        return totals[0].item() / max(totals[1].item(), 1), int(totals[1])


@dataclass
class Schedule:
    total_steps: int
    steps_per_epoch: int
    checkpoint_steps: int
    checkpoint_epochs: int
    eval_steps: int
    eval_max_batches: int
    checkpoint_seconds: float = 0.0  # also save when this long has passed since the last save; 0: never

    def checkpoint_overdue(self, seconds_since_save: float) -> bool:
        return bool(self.checkpoint_seconds) and seconds_since_save >= self.checkpoint_seconds

    def checkpoint_due(self, step: int) -> bool:
        at_epoch_end = step % self.steps_per_epoch == 0
        return bool(
            (self.checkpoint_steps and step % self.checkpoint_steps == 0)
            or (
                self.checkpoint_epochs and at_epoch_end and (step // self.steps_per_epoch) % self.checkpoint_epochs == 0
            )
            or step == self.total_steps
        )

    def eval_due(self, step: int) -> bool:
        return bool(self.eval_steps and step % self.eval_steps == 0) or step == self.total_steps


class StopRequest:
    """SIGTERM (a node drain, a preemption, a DWS reclaim, torchrun passing its own on) asks the loop to save
    and stop at the next step boundary; the pod's grace period is the time that save has."""

    def __init__(self) -> None:
        self.requested = False

    def install(self) -> StopRequest:
        signal.signal(signal.SIGTERM, self._on_signal)
        return self

    def _on_signal(self, signum: int, frame: object) -> None:
        self.requested = True


def agreed(device: torch.device, *flags: bool) -> list[bool]:
    """Each flag, true on every rank if it is true on any: one rank's SIGTERM or clock stops them all together
    (a checkpoint is a collective)."""
    values = torch.tensor([float(flag) for flag in flags], device=device)
    dist.all_reduce(values, op=dist.ReduceOp.MAX)
    return [bool(value) for value in values.tolist()]


def run(
    trainer: Trainer,
    schedule: Schedule,
    checkpointer: Checkpointer,
    logger: MetricsLogger,
    stop: StopRequest | None = None,
) -> bool:
    """Train to the last step (True), or until a stop request, after saving a checkpoint (False)."""
    trainer.before_optimizer_step = checkpointer.wait_for_staging
    stop = stop or StopRequest()
    last_save = time.monotonic()
    while trainer.progress.step < schedule.total_steps:
        record = trainer.train_step()
        logger.step(record)
        step = record.step
        checkpointer.poll()
        stopping, overdue = agreed(
            trainer.device, stop.requested, schedule.checkpoint_overdue(time.monotonic() - last_save)
        )
        if schedule.checkpoint_due(step) or overdue or stopping:
            blocked = checkpointer.save(step, trainer.checkpoint_state())
            last_save = time.monotonic()
            logger.say(f"checkpoint at step: {step}, blocked seconds: {blocked:.3f}, async: {checkpointer.async_save}")
            logger.event("checkpoint", step=step, blocked_seconds=blocked, async_save=checkpointer.async_save)
        if stopping:
            checkpointer.close()
            logger.say(f"stopped on request after the checkpoint at step: {step}; a restart resumes from it")
            return False
        if schedule.eval_due(step):
            started = time.perf_counter()
            loss, tokens = trainer.evaluate(schedule.eval_max_batches)
            logger.eval(step, loss, tokens, time.perf_counter() - started)
    checkpointer.close()
    return True
