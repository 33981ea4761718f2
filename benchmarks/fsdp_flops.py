"""Reported FLOPs per step vs torch.utils.flop_counter, measured on the trainer's own step.

Eager attention (the counter has no formula for CPU SDPA kernels). Three cases:
  1. full rows, one sample each (no padding): reported must equal executed work;
  2. the same with LoRA: 4N + 6*N_lora + attention;
  3. a packed text-to-SQL step: the counter also counts padding and masked cross-sample attention,
     which the trainer deliberately does not report as work.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from fsdp_common import bench_config, job_for, say
from torch.utils.flop_counter import FlopCounterMode

from workloads.fsdp.batching import BatchPlanner


def full_rows_planner(job, count: int = 64) -> BatchPlanner:
    rng = random.Random(0)
    samples = [[rng.randrange(len(job.tokenizer)) for _ in range(512)] for _ in range(count)]
    planner = job.trainer.train_batches
    return BatchPlanner(samples, 512, planner.rows_per_device, planner.world_size, planner.rank, 0, True, 0)


def counted_step(job) -> tuple[float, float]:
    with FlopCounterMode(display=False) as counter:
        record = job.trainer.train_step()
    return record.flops, float(counter.get_total_flops()) * job.info.world_size


def main() -> None:
    out = Path(tempfile.mkdtemp(prefix="fsdp-flops-"))
    cases = {
        "full rows, full fine-tune": bench_config(out / "full", attn_implementation="eager"),
        "full rows, LoRA r=16": bench_config(out / "lora", attn_implementation="eager", peft="true", peft_dropout=0.0),
        "packed text-to-SQL": bench_config(out / "packed", attn_implementation="eager"),
    }
    for name, config in cases.items():
        job = job_for(config)
        if name.startswith("full rows"):
            job.trainer.train_batches = full_rows_planner(job)
        reported, counted = counted_step(job)
        say(
            f"{name}: reported {reported:.4e} FLOPs/step, flop_counter {counted:.4e}, "
            f"reported/counted {reported / counted:.4f}"
        )


if __name__ == "__main__":
    main()
