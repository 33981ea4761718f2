"""Trainer step time vs a bare FSDP2 loop on the same model and data.

Two copies of the same sharded model (same seed, same rows). The bare loop is what a minimal FSDP2
script with the same maths does: build the micro-batches, forward, mean cross-entropy, backward,
clip the gradient norm, AdamW step, LR schedule step. The trainer adds loss normalisation over the
global token count, per-step RNG reseeding, FLOP accounting, the metrics all-reduce and its
checkpoint hook. Steps alternate one by one (ABBA) so machine load hits both alike.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from fsdp_common import bench_config, job_for, median, say

from workloads.fsdp.batching import IGNORE_INDEX


def bare_step(job, position) -> float:
    trainer = job.trainer
    started = time.perf_counter()
    micro_batches, _ = trainer.train_batches.step_batches(position, trainer.accumulation)
    for batch in micro_batches:
        logits = trainer.model(**batch.model_inputs(trainer.device)).logits
        loss = F.cross_entropy(
            logits.flatten(0, 1).float(), batch.targets.to(trainer.device).flatten(), ignore_index=IGNORE_INDEX
        )
        loss.backward()
    torch.nn.utils.clip_grad_norm_(trainer.model.parameters(), trainer.max_grad_norm, foreach=True)
    trainer.optimizer.step()
    trainer.scheduler.step()
    trainer.optimizer.zero_grad(set_to_none=True)
    trainer.train_batches.advance(position, trainer.accumulation)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--accumulation", type=int, default=2)
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="fsdp-overhead-"))
    trainer_job = job_for(bench_config(out / "trainer", gradient_accumulation_steps=args.accumulation))
    bare_job = job_for(bench_config(out / "bare", gradient_accumulation_steps=args.accumulation))
    bare_job.trainer.model.train()
    bare_position = type(trainer_job.trainer.progress.data)()
    for _ in range(2):  # warm-up
        trainer_job.trainer.train_step()
        bare_step(bare_job, bare_position)
    runs = {"trainer": trainer_job.trainer.train_step, "bare": lambda: bare_step(bare_job, bare_position)}
    wall: dict[str, list[float]] = {"trainer": [], "bare": []}
    cpu: dict[str, list[float]] = {"trainer": [], "bare": []}
    for step in range(args.steps):
        # ABBA order, so whichever runs second in a pair (warmer caches, or a neighbour's load) favours neither.
        for name in ("trainer", "bare") if step % 2 == 0 else ("bare", "trainer"):
            wall_started, cpu_started = time.perf_counter(), time.process_time()
            runs[name]()
            wall[name].append(time.perf_counter() - wall_started)
            cpu[name].append(time.process_time() - cpu_started)
    say(
        f"threads: {torch.get_num_threads()}, rows per micro-batch: 4 x 512 tokens, micro-batches per step: "
        f"{args.accumulation}, steps: {args.steps} each"
    )
    for label, times in (("wall-clock", wall), ("CPU time (this process; robust to neighbours' load)", cpu)):
        ratio = median(times["trainer"]) / median(times["bare"]) - 1
        say(
            f"{label}: bare FSDP2 loop median {median(times['bare']):.4f} s/step, "
            f"trainer {median(times['trainer']):.4f}"
            f" s/step, trainer overhead {ratio:+.2%} (means: {sum(times['trainer']) / sum(times['bare']) - 1:+.2%})"
        )


if __name__ == "__main__":
    main()
