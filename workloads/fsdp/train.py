"""FSDP2 fine-tuning entry point: ``torchrun ... -m workloads.fsdp.train [flags]`` (flags: ``--help``)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

from workloads.fsdp.builder import Job, build_job
from workloads.fsdp.config import parse_config
from workloads.fsdp.distributed import init_distributed, shutdown
from workloads.fsdp.loop import StopRequest, run
from workloads.fsdp.lora import export_adapter
from workloads.fsdp.metrics import MetricsLogger, detect_peak_flops


def resume(job: Job) -> int | None:
    """Load the newest complete checkpoint, whatever world size wrote it; None when starting fresh."""
    step = job.checkpointer.latest_step() if job.config.resume else None
    if step is not None:
        job.checkpointer.load(step, job.trainer.checkpoint_state())
    return step


def make_logger(job: Job) -> MetricsLogger:
    config = job.config
    return MetricsLogger(
        job.info.is_main,
        job.schedule.total_steps,
        job.trainer.progress.step,
        detect_peak_flops(job.info.device, config.peak_flops),
        config.metrics_jsonl,
        config.progress,
        config.log_every,
    )


def export_final(job: Job) -> None:
    """The LoRA adapter and the tokenizer, loadable with from_pretrained (full weights stay in the DCP step)."""
    final_dir = os.path.join(job.config.output_dir, "final")
    if job.config.peft:
        export_adapter(job.trainer.model, final_dir, job.info.is_main)
    if job.info.is_main:
        job.tokenizer.save_pretrained(final_dir)


# The exit status of a run that stopped on SIGTERM after saving (EX_TEMPFAIL): try again, it resumes.
STOPPED_EXIT_CODE = 75


def main(argv: Sequence[str] | None = None) -> None:
    config = parse_config(argv)
    stop = StopRequest().install()  # before the slow start: a drain during model loading still stops cleanly
    info = init_distributed(config.dist_timeout_s)
    job = build_job(config, info)
    resumed_from = resume(job)
    logger = make_logger(job)
    model = job.trainer.model
    logger.say(
        json.dumps(
            {
                "config": config.describe(),
                "world_size": info.world_size,
                "device": str(info.device),
                "attn": model.config._attn_implementation,
                "activation_checkpointing": model.is_activation_checkpointing,
                "steps": job.schedule.total_steps,
                "steps_per_epoch": job.schedule.steps_per_epoch,
                "resumed_from_step": resumed_from,
                "flops_model": vars(job.trainer.flop_model),
            }
        )
    )
    if not run(job.trainer, job.schedule, job.checkpointer, logger, stop):
        logger.close()
        shutdown()
        sys.exit(STOPPED_EXIT_CODE)
    export_final(job)
    logger.summary()
    logger.say(f"training finished at step: {job.trainer.progress.step}")
    logger.close()
    shutdown()


if __name__ == "__main__":
    main(sys.argv[1:])
