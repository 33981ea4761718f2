"""Useful tokens per second, packing vs padding, on the text-to-SQL length distribution at sequence length 512.

Same model, same samples, same trainer step; only --packing differs. Each mode trains through one epoch
(less its warm-up step), so the figure covers every sample once instead of whichever samples a short window
happens to draw (padding's tokens per step vary by a third from step to step). The two epochs run
interleaved in 100 proportional blocks (about 3 padding steps, then 1 packing step), so the machine's drift
over minutes hits both alike: with 10 blocks it put 2-3% between two modes whose steps cost the same.
Useful tokens exclude padding.

``--fill-only --dataset-id ID --tokenizer-id ID`` prints just the row fill of both modes for any dataset and
tokenizer the trainer can load (e.g. the seed's gretel set and Llama 3.1 where the hub is reachable): the
trainer's own chat formatting, length filter and packing, no model.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
from pathlib import Path

from fsdp_common import bench_config, job_for, say

from workloads.fsdp.batching import padding_fraction
from workloads.fsdp.builder import planners
from workloads.fsdp.data import load_tokenizer, prepare_splits
from workloads.fsdp.distributed import init_distributed
from workloads.fsdp.packing import fewest_rows_bound

MODES = ("padding", "packing")


def row_fill(mode: str, lengths: list[int], rows: list[list[int]]) -> float:
    fill = 1 - padding_fraction(rows, lengths, 512)
    say(
        f"{mode}: {len(lengths)} samples, mean {statistics.mean(lengths):.1f} tokens (max {max(lengths)}), "
        f"{len(rows)} rows of 512 (no packing fits them in fewer than {fewest_rows_bound(lengths, 512)}), "
        f"padding {1 - fill:.1%}"
    )
    return fill


def say_fill_ratio(fill: dict[str, float]) -> None:
    say(
        f"row fill, packing / padding: {fill['packing'] / fill['padding']:.2f}x (what packing gains if a row costs "
        f"the same either way)"
    )


def fill_only(dataset_id: str, tokenizer_id: str) -> None:
    config = bench_config(Path(tempfile.mkdtemp(prefix="fsdp-fill-")), dataset_id=dataset_id, tokenizer_id=tokenizer_id)
    tokenizer, info = load_tokenizer(config), init_distributed(config.dist_timeout_s)
    splits = prepare_splits(config, tokenizer, info)
    fill = {}
    for mode in MODES:
        train, _ = planners(dataclasses.replace(config, packing=mode == "packing"), info, tokenizer, splits)
        fill[mode] = row_fill(mode, train.lengths, train.rows_for_epoch(0))
    say_fill_ratio(fill)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--blocks", type=int, default=100, help="interleaved blocks the two epochs are cut into")
    parser.add_argument("--epoch-fraction", type=float, default=1.0, help="train this share of each epoch")
    parser.add_argument("--fill-only", action="store_true", help="only the row fill of --dataset-id/--tokenizer-id")
    parser.add_argument("--dataset-id", default="", help="with --fill-only: dataset id or directory")
    parser.add_argument("--tokenizer-id", default="", help="with --fill-only: tokenizer id or directory")
    args = parser.parse_args()
    if args.fill_only:
        fill_only(args.dataset_id, args.tokenizer_id)
        return
    out = Path(tempfile.mkdtemp(prefix="fsdp-packing-"))
    jobs = {mode: job_for(bench_config(out / mode, packing=str(mode == "packing").lower())) for mode in MODES}
    fill, steps = {}, {}
    for mode, job in jobs.items():
        planner = job.trainer.train_batches
        fill[mode] = row_fill(mode, planner.lengths, planner.rows_for_epoch(0))
        steps[mode] = int((planner.steps_per_epoch(1) - 1) * args.epoch_fraction)
        job.trainer.train_step()  # warm-up, not measured
    say_fill_ratio(fill)
    totals = {mode: {"tokens": 0, "seconds": 0.0, "steps": 0} for mode in MODES}
    for block in range(args.blocks):
        for mode, job in jobs.items():
            for _ in range(steps[mode] * (block + 1) // args.blocks - steps[mode] * block // args.blocks):
                record = job.trainer.train_step()
                totals[mode]["tokens"] += record.useful_tokens
                totals[mode]["seconds"] += record.seconds
                totals[mode]["steps"] += 1
    for mode, total in totals.items():
        say(
            f"{mode}: {total['steps']} steps, {total['seconds'] / total['steps']:.3f} s per step of "
            f"{jobs[mode].config.per_device_train_batch_size} rows, {total['tokens'] / total['seconds']:,.0f} "
            f"useful tokens/s"
        )
    rates = {mode: total["tokens"] / total["seconds"] for mode, total in totals.items()}
    say(f"packing / padding useful tokens per second: {rates['packing'] / rates['padding']:.2f}x")


if __name__ == "__main__":
    main()
