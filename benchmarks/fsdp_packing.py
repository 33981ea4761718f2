"""Useful tokens per second, packing vs padding, on the text-to-SQL length distribution at sequence length 512.

Same model, same samples, same trainer step; only --packing differs. Steps of the two modes are
interleaved in blocks so machine load hits both alike. Useful tokens exclude padding.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from fsdp_common import bench_config, job_for, say

from workloads.fsdp.batching import padding_fraction


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--blocks", type=int, default=4, help="interleaved blocks per mode")
    parser.add_argument("--steps-per-block", type=int, default=3)
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="fsdp-packing-"))
    jobs = {mode: job_for(bench_config(out / mode, packing=str(mode == "packing").lower()))
            for mode in ("padding", "packing")}
    for mode, job in jobs.items():
        planner = job.trainer.train_batches
        rows = planner.rows_for_epoch(0)
        say(f"{mode}: {len(planner.samples)} samples, mean {sum(planner.lengths) / len(planner.lengths):.1f} tokens, "
            f"{len(rows)} rows of 512, padding {padding_fraction(rows, planner.lengths, 512):.1%}")
        job.trainer.train_step()  # warm-up, not measured
    fill = {mode: 1 - padding_fraction(job.trainer.train_batches.rows_for_epoch(0), job.trainer.train_batches.lengths,
                                       512) for mode, job in jobs.items()}
    say(f"row fill ratio packing / padding: {fill['packing'] / fill['padding']:.2f}x (the ceiling when a row costs "
        f"the same either way)")
    totals = {mode: [0, 0.0] for mode in jobs}
    for _ in range(args.blocks):
        for mode, job in jobs.items():
            for _ in range(args.steps_per_block):
                record = job.trainer.train_step()
                totals[mode][0] += record.useful_tokens
                totals[mode][1] += record.seconds
    rates = {mode: tokens / seconds for mode, (tokens, seconds) in totals.items()}
    for mode, rate in rates.items():
        say(f"{mode}: {rate:,.0f} useful tokens/s over {totals[mode][1]:.1f} s")
    say(f"packing / padding useful tokens per second: {rates['packing'] / rates['padding']:.2f}x")


if __name__ == "__main__":
    main()
