"""Honest throughput: the FLOPs of useful tokens (workloads.fsdp.flops), per device and against its peak (MFU)."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

PEAK_BF16_FLOPS = {"B200": 2.25e15, "H200": 989e12, "H100": 989e12}


def detect_peak_flops(device: torch.device, override: float = 0.0) -> float | None:
    """bf16 dense peak per device; None where no honest figure exists (CPUs, unknown GPUs)."""
    if override:
        return override
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((peak for key, peak in PEAK_BF16_FLOPS.items() if key in name), None)


@dataclass
class StepRecord:
    step: int
    seconds: float
    loss: float
    useful_tokens: int  # across all devices
    flops: float  # across all devices
    world_size: int
    lr: float
    grad_norm: float | None

    def tflops_per_device(self) -> float:
        return self.flops / self.world_size / self.seconds / 1e12

    def tokens_per_device(self) -> float:
        return self.useful_tokens / self.world_size / self.seconds

    def mfu(self, peak: float | None) -> float | None:
        return None if not peak else self.flops / self.world_size / self.seconds / peak


def format_step_line(record: StepRecord, peak: float | None) -> str:
    """MaxText's line (same fields, same order) plus MFU, grad norm and learning rate."""
    mfu = record.mfu(peak)
    norm = "n/a" if record.grad_norm is None else f"{record.grad_norm:.3f}"
    return (
        f"completed step: {record.step}, seconds: {record.seconds:.3f}, "
        f"TFLOP/s/device: {record.tflops_per_device():.3f}, Tokens/s/device: {record.tokens_per_device():.3f}, "
        f"loss: {record.loss:.3f}, MFU: {'n/a' if mfu is None else f'{mfu:.2%}'}, "
        f"grad_norm: {norm}, lr: {record.lr:.3e}"
    )


class MetricsLogger:
    """Rank 0's voice: step and eval lines on stdout, a JSONL record of each, a progress bar on a terminal."""

    def __init__(
        self,
        is_main: bool,
        total_steps: int,
        start_step: int,
        peak: float | None,
        jsonl_path: str,
        progress: str,
        log_every: int,
    ):
        self.is_main, self.peak, self.log_every = is_main, peak, log_every
        self.jsonl = Path(jsonl_path) if jsonl_path and is_main else None
        if self.jsonl:
            self.jsonl.parent.mkdir(parents=True, exist_ok=True)
        show_bar = progress == "on" or (progress == "auto" and sys.stdout.isatty())
        self.bar = None
        self.records: list[StepRecord] = []
        if is_main and show_bar:
            from tqdm import tqdm

            self.bar = tqdm(total=total_steps, initial=start_step, unit="step", dynamic_ncols=True)

    def say(self, line: str) -> None:
        if not self.is_main:
            return
        if self.bar is not None:
            self.bar.write(line)
        else:
            print(line, flush=True)

    def _append(self, record: dict) -> None:
        if self.jsonl:
            with self.jsonl.open("a") as handle:
                handle.write(json.dumps({"time": time.time(), **record}) + "\n")

    def step(self, record: StepRecord) -> None:
        if not self.is_main:
            return
        self.records.append(record)
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(loss=f"{record.loss:.3f}", tok_s=f"{record.tokens_per_device():.0f}")
        if record.step % self.log_every == 0:
            self.say(format_step_line(record, self.peak))
        self._append(
            {
                "kind": "train",
                "step": record.step,
                "seconds": record.seconds,
                "loss": record.loss,
                "tflops_per_device": record.tflops_per_device(),
                "tokens_per_device": record.tokens_per_device(),
                "mfu": record.mfu(self.peak),
                "useful_tokens": record.useful_tokens,
                "flops": record.flops,
                "lr": record.lr,
                "grad_norm": record.grad_norm,
            }
        )

    def eval(self, step: int, loss: float, tokens: int, seconds: float) -> None:
        if not self.is_main:
            return
        perplexity = float(torch.exp(torch.tensor(loss))) if loss < 50 else float("inf")
        self.say(
            f"eval at step: {step}, loss: {loss:.4f}, perplexity: {perplexity:.3f}, tokens: {tokens}, "
            f"seconds: {seconds:.3f}"
        )
        self._append(
            {"kind": "eval", "step": step, "loss": loss, "perplexity": perplexity, "tokens": tokens, "seconds": seconds}
        )

    def event(self, kind: str, **fields) -> None:
        self._append({"kind": kind, **fields})

    def summary(self) -> None:
        """Throughput over the run without its first step (which pays compilation and warm-up)."""
        steady = self.records[1:]
        if not steady:
            return
        seconds = sum(record.seconds for record in steady)
        world = steady[0].world_size
        flops = sum(record.flops for record in steady) / world / seconds
        tokens = sum(record.useful_tokens for record in steady) / world / seconds
        mfu = "n/a" if not self.peak else f"{flops / self.peak:.2%}"
        self.say(
            f"summary of steps {steady[0].step}-{steady[-1].step}: seconds/step: {seconds / len(steady):.3f}, "
            f"TFLOP/s/device: {flops / 1e12:.3f}, Tokens/s/device: {tokens:.3f}, MFU: {mfu}"
        )
        self._append(
            {
                "kind": "summary",
                "first_step": steady[0].step,
                "last_step": steady[-1].step,
                "seconds_per_step": seconds / len(steady),
                "tflops_per_device": flops / 1e12,
                "tokens_per_device": tokens,
            }
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
