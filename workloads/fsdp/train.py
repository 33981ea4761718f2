"""FSDP2 fine-tuning entry point: ``torchrun ... -m workloads.fsdp.train [flags]`` (flags: ``--help``)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

from workloads.fsdp.batching import BatchPlanner
from workloads.fsdp.checkpoint import Checkpointer
from workloads.fsdp.config import TrainConfig, parse_config
from workloads.fsdp.data import load_tokenizer, pad_token_id, prepare_splits
from workloads.fsdp.distributed import DistInfo, init_distributed, shutdown
from workloads.fsdp.loop import Schedule, Trainer, build_optimizer, run
from workloads.fsdp.lora import export_adapter
from workloads.fsdp.metrics import FlopModel, MetricsLogger, detect_peak_flops
from workloads.fsdp.model import build_model


def planners(config: TrainConfig, info: DistInfo, tokenizer, splits) -> tuple[BatchPlanner, BatchPlanner]:
    common = {"max_len": config.max_seq_length, "rows_per_device": config.per_device_train_batch_size,
              "world_size": info.world_size, "rank": info.rank, "pad_id": pad_token_id(tokenizer),
              "packing": config.packing, "seed": config.dataset_seed}
    return BatchPlanner(splits.train, **common), BatchPlanner(splits.test, **common)


def make_schedule(config: TrainConfig, train: BatchPlanner) -> Schedule:
    steps_per_epoch = train.steps_per_epoch(config.gradient_accumulation_steps)
    if steps_per_epoch == 0:
        raise SystemExit(f"--per-device-train-batch-size {config.per_device_train_batch_size} x world size "
                         f"{train.world_size} x --gradient-accumulation-steps {config.gradient_accumulation_steps}"
                         f" needs {train.rows_per_step(config.gradient_accumulation_steps)} rows per step, but the "
                         f"training split has only {len(train.rows_for_epoch(0))}: lower them or add samples")
    total = config.max_steps or steps_per_epoch * config.num_train_epochs
    return Schedule(total, steps_per_epoch, config.checkpoint_steps, config.checkpoint_epochs, config.eval_steps,
                    config.eval_max_batches)


def quiet_other_ranks(info: DistInfo) -> None:
    """Only rank 0 draws the libraries' progress bars; eight copies per node are noise."""
    if not info.is_main:
        import datasets
        import transformers

        datasets.disable_progress_bars()
        transformers.utils.logging.disable_progress_bar()


def main(argv: Sequence[str] | None = None) -> None:
    config = parse_config(argv)
    info = init_distributed(config.dist_timeout_s)
    quiet_other_ranks(info)
    tokenizer = load_tokenizer(config)
    train_rows, eval_rows = planners(config, info, tokenizer, prepare_splits(config, tokenizer, info))
    schedule = make_schedule(config, train_rows)
    model = build_model(config, info)
    flop_model = FlopModel.from_model(model, model.config)
    optimizer, scheduler = build_optimizer(model, config.learning_rate, config.weight_decay, schedule.total_steps,
                                           config.warmup_ratio)
    trainer = Trainer(model, optimizer, scheduler, train_rows, eval_rows, flop_model, info.device, info.world_size,
                      config.gradient_accumulation_steps, config.max_grad_norm, config.seed)
    checkpointer = Checkpointer(os.path.join(config.output_dir, "checkpoints"), info.is_main,
                                config.async_checkpoint, config.keep_checkpoints)
    resume_step = checkpointer.latest_step() if config.resume else None
    if resume_step is not None:
        checkpointer.load(resume_step, trainer.checkpoint_state())
    logger = MetricsLogger(info.is_main, schedule.total_steps, trainer.progress.step,
                           detect_peak_flops(info.device, config.peak_flops), config.metrics_jsonl, config.progress,
                           config.log_every)
    logger.say(json.dumps({"config": config.describe(), "world_size": info.world_size, "device": str(info.device),
                           "attn": model.config._attn_implementation, "steps": schedule.total_steps,
                           "steps_per_epoch": schedule.steps_per_epoch, "resumed_from_step": resume_step,
                           "flops_model": vars(flop_model)}))
    run(trainer, schedule, checkpointer, logger)
    export_final(config, model, tokenizer, info)
    logger.say(f"training finished at step: {trainer.progress.step}")
    logger.close()
    shutdown()


def export_final(config: TrainConfig, model, tokenizer, info: DistInfo) -> None:
    """The LoRA adapter and the tokenizer, loadable with from_pretrained (full weights stay in the DCP step)."""
    final_dir = os.path.join(config.output_dir, "final")
    if config.peft:
        export_adapter(model, final_dir, info.is_main)
    if info.is_main:
        tokenizer.save_pretrained(final_dir)


if __name__ == "__main__":
    main(sys.argv[1:])
