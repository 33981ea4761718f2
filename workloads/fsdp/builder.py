"""Assembly: config -> tokenizer, data, model, optimizer, trainer, checkpointer (shared by train.py and benchmarks)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from workloads.fsdp.batching import BatchPlanner
from workloads.fsdp.checkpoint import Checkpointer
from workloads.fsdp.config import TrainConfig
from workloads.fsdp.data import TokenizedSplits, load_tokenizer, pad_token_id, prepare_splits
from workloads.fsdp.distributed import DistInfo
from workloads.fsdp.flops import FlopModel
from workloads.fsdp.loop import Schedule, Trainer, build_optimizer
from workloads.fsdp.model import build_model


@dataclass
class Job:
    config: TrainConfig
    info: DistInfo
    tokenizer: object
    trainer: Trainer
    schedule: Schedule
    checkpointer: Checkpointer


def quiet_other_ranks(info: DistInfo) -> None:
    """Only rank 0 draws the libraries' progress bars; eight copies per node are noise."""
    if not info.is_main:
        import datasets
        import transformers

        datasets.disable_progress_bars()
        transformers.utils.logging.disable_progress_bar()


def planners(
    config: TrainConfig, info: DistInfo, tokenizer, splits: TokenizedSplits
) -> tuple[BatchPlanner, BatchPlanner]:
    common = {
        "max_len": config.max_seq_length,
        "rows_per_device": config.per_device_train_batch_size,
        "world_size": info.world_size,
        "rank": info.rank,
        "pad_id": pad_token_id(tokenizer),
        "packing": config.packing,
        "seed": config.dataset_seed,
    }
    return BatchPlanner(splits.train, **common), BatchPlanner(splits.test, **common)


def make_schedule(config: TrainConfig, train: BatchPlanner) -> Schedule:
    steps_per_epoch = train.steps_per_epoch(config.gradient_accumulation_steps)
    if steps_per_epoch == 0:
        raise SystemExit(
            f"--per-device-train-batch-size {config.per_device_train_batch_size} x world size "
            f"{train.world_size} x --gradient-accumulation-steps {config.gradient_accumulation_steps}"
            f" needs {train.rows_per_step(config.gradient_accumulation_steps)} rows per step, but the "
            f"training split has only {len(train.rows_for_epoch(0))}: lower them or add samples"
        )
    total = config.max_steps or steps_per_epoch * config.num_train_epochs
    return Schedule(
        total,
        steps_per_epoch,
        config.checkpoint_steps,
        config.checkpoint_epochs,
        config.eval_steps,
        config.eval_max_batches,
        config.checkpoint_minutes * 60,
    )


def build_job(config: TrainConfig, info: DistInfo) -> Job:
    quiet_other_ranks(info)
    tokenizer = load_tokenizer(config)
    train_rows, eval_rows = planners(config, info, tokenizer, prepare_splits(config, tokenizer, info))
    schedule = make_schedule(config, train_rows)
    model = build_model(config, info)
    optimizer, scheduler = build_optimizer(
        model, config.learning_rate, config.weight_decay, schedule.total_steps, config.warmup_ratio
    )
    trainer = Trainer(
        model,
        optimizer,
        scheduler,
        train_rows,
        eval_rows,
        FlopModel.from_model(model, model.config),
        info.device,
        info.world_size,
        config.gradient_accumulation_steps,
        config.max_grad_norm,
        config.seed,
    )
    checkpointer = Checkpointer(
        os.path.join(config.output_dir, "checkpoints"), info.is_main, config.async_checkpoint, config.keep_checkpoints
    )
    return Job(config, info, tokenizer, trainer, schedule, checkpointer)
