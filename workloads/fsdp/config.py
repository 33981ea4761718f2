"""Trainer configuration: one dataclass, filled from flags, then environment, then the seed's defaults.

Every field has a flag (``--max-seq-length``) and an environment variable (``MAX_SEQ_LENGTH``); the
environment names are the seed ``fsdp.py``'s, so its Helm values keep working. A flag wins over the
environment, which wins over the default. Bad values raise ``ConfigError`` naming flag, variable,
value and what is allowed. Standard library only: the Pulumi venv imports this module to check job flags.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}
ATTN_CHOICES = ("auto", "flash_attention_2", "sdpa", "eager")
PRECISION_CHOICES = ("bf16", "fp32")
PROGRESS_CHOICES = ("auto", "on", "off")


class ConfigError(ValueError):
    """A configuration value that cannot be used, with the key that carried it."""


def _opt(
    default: Any, help_text: str, env: str | None = None, choices: Sequence[str] = (), alias: str | None = None
) -> Any:
    metadata = {"help": help_text, "env": env, "choices": tuple(choices), "alias": alias}
    return field(default=default, metadata=metadata)


@dataclass
class TrainConfig:
    # What to train on.
    model_id: str = _opt("meta-llama/Llama-3.1-70B", "Hugging Face model id or local directory")
    tokenizer_id: str = _opt("", "tokenizer id or directory (default: the model's)")
    dataset_id: str = _opt("philschmid/gretel-synthetic-text-to-sql", "Hugging Face dataset id or local directory")
    dataset_split: str = _opt("train", "split of the dataset to sample from")
    train_sample_size: int = _opt(12500, "samples drawn from the dataset before the train/test split")
    test_size: float = _opt(0.1, "held-out fraction used for evaluation")
    dataset_seed: int = _opt(42, "seed for sampling, the split and the data order")
    output_dir: str = _opt("output/fsdp", "checkpoints, metrics and the final export go here")
    data_dir: str = _opt("", "cache of the preprocessed dataset (default: OUTPUT_DIR/prepared)")
    # How long and how hard.
    num_train_epochs: int = _opt(12, "epochs to train (ignored when --max-steps is set)")
    max_steps: int = _opt(0, "optimizer steps to train; 0 means NUM_TRAIN_EPOCHS epochs")
    per_device_train_batch_size: int = _opt(8, "rows per device per micro-batch")
    gradient_accumulation_steps: int = _opt(8, "micro-batches per optimizer step")
    learning_rate: float = _opt(2e-4, "peak AdamW learning rate")
    weight_decay: float = _opt(0.01, "AdamW weight decay")
    max_grad_norm: float = _opt(0.3, "clip the global gradient norm to this; 0 disables")
    warmup_ratio: float = _opt(0.03, "fraction of steps of linear warm-up, then linear decay")
    max_seq_length: int = _opt(512, "tokens per row; longer samples are dropped")
    packing: bool = _opt(True, "pack samples into full rows (attention never crosses samples); off pads each sample")
    seed: int = _opt(42, "seed for dropout and any random init")
    # Model and parallelism.
    attn_implementation: str = _opt(
        "auto", "attention kernel; auto = flash_attention_2 if installed, else sdpa", choices=ATTN_CHOICES
    )
    mixed_precision: str = _opt("bf16", "compute dtype of FSDP2's MixedPrecisionPolicy", choices=PRECISION_CHOICES)
    param_dtype: str = _opt(
        "bf16",
        "dtype of the sharded weights and optimizer state (the seed's bf16; fp32 costs 8 more bytes per parameter)",
        choices=PRECISION_CHOICES,
    )
    activation_checkpointing: bool = _opt(False, "recompute each decoder layer in backward: less memory, more compute")
    compile: bool = _opt(True, "torch.compile each decoder layer")
    compile_backend: str = _opt("inductor", "torch.compile backend (eager for smoke tests)")
    peft: bool = _opt(False, "train LoRA adapters only", alias="lora")
    peft_r: int = _opt(16, "LoRA rank")
    peft_alpha: int = _opt(16, "LoRA alpha")
    peft_dropout: float = _opt(0.05, "LoRA dropout")
    peft_target_modules: str = _opt("q_proj,k_proj,v_proj,o_proj", "comma-separated modules LoRA wraps")
    # Checkpoints, evaluation, metrics.
    checkpoint_steps: int = _opt(0, "save a checkpoint every N optimizer steps; 0 disables")
    checkpoint_epochs: int = _opt(12, "also save at the end of every N-th epoch; 0 disables")
    checkpoint_minutes: float = _opt(
        0.0, "also save when this many minutes passed since the last save (bounds what a lost node costs); 0 disables"
    )
    async_checkpoint: bool = _opt(False, "save checkpoints in the background (own gloo group)")
    keep_checkpoints: int = _opt(0, "complete checkpoints to keep; 0 keeps all")
    resume: bool = _opt(True, "resume from the newest complete checkpoint in OUTPUT_DIR")
    eval_steps: int = _opt(0, "evaluate on the held-out split every N steps; 0 = only at the end")
    eval_max_batches: int = _opt(0, "cap on evaluation batches; 0 = the whole held-out split")
    metrics_jsonl: str = _opt("", "append one JSON object per step/eval to this file (rank 0)")
    log_every: int = _opt(1, "print the step line every N steps")
    peak_flops: float = _opt(0.0, "peak FLOP/s per device for MFU; 0 = detect (B200, H100, H200)")
    progress: str = _opt("auto", "progress bar: auto = only when stdout is a terminal", choices=PROGRESS_CHOICES)
    dist_timeout_s: int = _opt(1800, "timeout of collectives and barriers in seconds")

    @property
    def prepared_dir(self) -> str:
        return self.data_dir or os.path.join(self.output_dir, "prepared")

    @property
    def target_modules(self) -> list[str]:
        return [name.strip() for name in self.peft_target_modules.split(",") if name.strip()]

    def describe(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def train_rows_at_most(self) -> int:
        """Rows the training split can hold: the samples drawn less the held-out ones (datasets' train_test_split
        holds out ceil(test_size x n)); a smaller dataset, the length filter or packing only lower it."""
        return self.train_sample_size - math.ceil(self.test_size * self.train_sample_size)

    def rows_per_step(self, world_size: int) -> int:
        """Rows one optimizer step consumes across the job (batching.BatchPlanner.rows_per_step)."""
        return self.per_device_train_batch_size * world_size * self.gradient_accumulation_steps


def env_name(config_field: dataclasses.Field) -> str:
    return config_field.metadata.get("env") or config_field.name.upper()


def flag_name(config_field: dataclasses.Field) -> str:
    return "--" + config_field.name.replace("_", "-")


def _convert(raw: Any, config_field: dataclasses.Field, source: str) -> Any:
    kind = type(config_field.default)
    text = str(raw).strip()
    try:
        if kind is bool:
            if text.lower() in TRUE_WORDS | FALSE_WORDS:
                return text.lower() in TRUE_WORDS
            raise ValueError
        value = kind(text)
    except ValueError:
        allowed = "true/false (or 1/0, yes/no, on/off)" if kind is bool else f"a {kind.__name__}"
        raise ConfigError(f"{source}={text!r} is not valid: expected {allowed}") from None
    choices = config_field.metadata.get("choices")
    if choices and value not in choices:
        raise ConfigError(f"{source}={text!r} is not valid: choose one of {', '.join(choices)}")
    return value


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m workloads.fsdp.train",
        description="FSDP2 fine-tuning. Every flag can also be set by the environment variable shown.",
    )
    for config_field in dataclasses.fields(TrainConfig):
        names = [flag_name(config_field)]
        if config_field.metadata.get("alias"):
            names.append("--" + config_field.metadata["alias"])
        help_text = f"{config_field.metadata['help']} [env {env_name(config_field)}, default {config_field.default!r}]"
        parser.add_argument(*names, dest=config_field.name, default=None, metavar="VALUE", help=help_text)
    return parser


def parse_config(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> TrainConfig:
    environ = os.environ if environ is None else environ
    flags = vars(_build_parser().parse_args(argv))
    values: dict[str, Any] = {}
    for config_field in dataclasses.fields(TrainConfig):
        if flags[config_field.name] is not None:
            values[config_field.name] = _convert(flags[config_field.name], config_field, flag_name(config_field))
        elif env_name(config_field) in environ:
            values[config_field.name] = _convert(environ[env_name(config_field)], config_field, env_name(config_field))
    config = TrainConfig(**values)
    validate(config)
    return config


def _require(condition: bool, key: str, value: Any, allowed: str) -> None:
    if not condition:
        flag = "--" + key.replace("_", "-")
        raise ConfigError(f"{flag} / {key.upper()} = {value!r} is not allowed: {allowed}")


def validate(config: TrainConfig) -> None:
    positive = (
        "train_sample_size",
        "per_device_train_batch_size",
        "gradient_accumulation_steps",
        "max_seq_length",
        "log_every",
        "dist_timeout_s",
        "peft_r",
        "peft_alpha",
    )
    for key in positive:
        _require(getattr(config, key) > 0, key, getattr(config, key), "must be > 0")
    non_negative = (
        "num_train_epochs",
        "max_steps",
        "max_grad_norm",
        "checkpoint_steps",
        "checkpoint_epochs",
        "checkpoint_minutes",
        "keep_checkpoints",
        "eval_steps",
        "eval_max_batches",
        "peak_flops",
        "weight_decay",
    )
    for key in non_negative:
        _require(getattr(config, key) >= 0, key, getattr(config, key), "must be >= 0")
    _require(0 < config.test_size < 1, "test_size", config.test_size, "a fraction strictly between 0 and 1")
    _require(0 <= config.warmup_ratio < 1, "warmup_ratio", config.warmup_ratio, "a fraction in [0, 1)")
    _require(0 <= config.peft_dropout < 1, "peft_dropout", config.peft_dropout, "a probability in [0, 1)")
    _require(config.learning_rate > 0, "learning_rate", config.learning_rate, "must be > 0")
    _require(
        config.max_steps > 0 or config.num_train_epochs > 0,
        "max_steps",
        config.max_steps,
        "set --max-steps or --num-train-epochs above 0",
    )
    _require(bool(config.model_id), "model_id", config.model_id, "a Hugging Face id or a local directory")
    _require(bool(config.dataset_id), "dataset_id", config.dataset_id, "a Hugging Face id or a local directory")
    _require(
        not config.peft or bool(config.target_modules),
        "peft_target_modules",
        config.peft_target_modules,
        "at least one module name when --peft is on",
    )
