"""Training-loop stall per checkpoint save: async (DCP async_save, own gloo group) vs sync (DCP save).

One model, one trainer. Blocks of "save (or not), then K training steps" rotate through the three
modes, so machine load hits all alike. A block's time includes the save call and, for async, any
wait for the background write still running when the block ends. Reported: the time the loop
is blocked per save (the save call, plus for async the wait for staging before the next optimizer
step), and each mode's median block time minus that of blocks without a save.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from fsdp_common import bench_config, job_for, median, say, timed

from workloads.fsdp.checkpoint import Checkpointer
from workloads.fsdp.tiny import TinyModelShape

SHAPE = TinyModelShape(
    hidden_size=512, intermediate_size=1408, num_hidden_layers=8, num_attention_heads=8, num_key_value_heads=4
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps-per-block", type=int, default=4)
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="fsdp-ckpt-"))
    job = job_for(bench_config(out / "run", shape=SHAPE, per_device_train_batch_size=1))
    trainer, is_main = job.trainer, job.info.is_main
    checkpointers = {"sync": Checkpointer(out / "sync", is_main), "async": Checkpointer(out / "async", is_main, True)}
    params = sum(p.numel() for p in trainer.model.parameters())
    say(
        f"model: {params / 1e6:.1f}M parameters; a checkpoint holds weights + AdamW state (~{params * 12 / 1e6:.0f} MB)"
    )
    trainer.before_optimizer_step = checkpointers["async"].wait_for_staging
    trainer.train_step()  # warm-up
    blocks: dict[str, list[float]] = {"none": [], "sync": [], "async": []}
    blocked: dict[str, list[float]] = {"sync": [], "async": []}  # save call + wait for staging

    def block(mode: str) -> None:
        if mode != "none":
            checkpointer = checkpointers[mode]
            waited_before = checkpointer.staging_wait_seconds
            call = checkpointer.save(trainer.progress.step, trainer.checkpoint_state())
        for _ in range(args.steps_per_block):
            trainer.train_step()
        if mode != "none":
            checkpointer.wait()
            blocked[mode].append(call + checkpointer.staging_wait_seconds - waited_before)

    for _ in range(args.rounds):
        for mode, times in blocks.items():
            times.append(timed(lambda mode=mode: block(mode)))
    base = median(blocks["none"])
    stall = {mode: median(blocks[mode]) - base for mode in ("sync", "async")}
    say(f"block of {args.steps_per_block} steps without a save: {base:.2f} s (median of {args.rounds})")
    for mode in ("sync", "async"):
        say(
            f"{mode}: loop blocked {median(blocked[mode]):.3f} s per save; block time +{stall[mode]:.3f} s "
            f"({stall[mode] / base:+.1%})"
        )
    say(f"loop stall per save, async / sync: {median(blocked['async']) / median(blocked['sync']):.1%}")
    say(
        f"block slow-down, async / sync: {stall['async'] / stall['sync']:.1%} (the background write shares "
        f"this machine's {os.cpu_count()} cores with training)"
    )
    for checkpointer in checkpointers.values():
        checkpointer.close()
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
