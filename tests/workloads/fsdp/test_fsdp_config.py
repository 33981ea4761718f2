"""Configuration: the seed's defaults and environment names, flags over environment, clear refusals."""

from __future__ import annotations

import pytest

from workloads.fsdp.batching import BatchPlanner
from workloads.fsdp.builder import make_schedule
from workloads.fsdp.config import ConfigError, parse_config
from workloads.fsdp.loop import Schedule

SEED_ENV = {
    "MODEL_ID": "meta-llama/Llama-3.1-8B",
    "DATASET_ID": "org/other-set",
    "TRAIN_SAMPLE_SIZE": "100",
    "TEST_SIZE": "0.2",
    "DATASET_SEED": "7",
    "NUM_TRAIN_EPOCHS": "3",
    "PER_DEVICE_TRAIN_BATCH_SIZE": "4",
    "GRADIENT_ACCUMULATION_STEPS": "2",
    "LEARNING_RATE": "1e-5",
    "MAX_GRAD_NORM": "1.0",
    "WARMUP_RATIO": "0.1",
    "MAX_SEQ_LENGTH": "1024",
    "PEFT": "true",
    "PEFT_R": "8",
    "PEFT_ALPHA": "32",
    "PEFT_DROPOUT": "0.1",
    "CHECKPOINT_EPOCHS": "1",
}


def test_defaults_are_the_seeds():
    config = parse_config([], environ={})
    assert (config.model_id, config.dataset_id) == (
        "meta-llama/Llama-3.1-70B",
        "philschmid/gretel-synthetic-text-to-sql",
    )
    assert (config.train_sample_size, config.test_size, config.dataset_seed, config.num_train_epochs) == (
        12500,
        0.1,
        42,
        12,
    )
    assert (config.per_device_train_batch_size, config.gradient_accumulation_steps) == (8, 8)
    assert (config.learning_rate, config.max_grad_norm, config.warmup_ratio, config.max_seq_length) == (
        2e-4,
        0.3,
        0.03,
        512,
    )
    assert (config.peft, config.peft_r, config.peft_alpha, config.peft_dropout) == (False, 16, 16, 0.05)
    assert config.target_modules == ["q_proj", "k_proj", "v_proj", "o_proj"] and config.checkpoint_epochs == 12
    assert (config.param_dtype, config.mixed_precision, config.activation_checkpointing) == ("bf16", "bf16", False)


def test_the_seeds_environment_variables_are_read():
    config = parse_config([], environ=SEED_ENV)
    assert config.model_id == "meta-llama/Llama-3.1-8B" and config.dataset_id == "org/other-set"
    assert (config.train_sample_size, config.test_size, config.dataset_seed, config.num_train_epochs) == (
        100,
        0.2,
        7,
        3,
    )
    assert (config.per_device_train_batch_size, config.gradient_accumulation_steps, config.learning_rate) == (
        4,
        2,
        1e-5,
    )
    assert (config.max_grad_norm, config.warmup_ratio, config.max_seq_length) == (1.0, 0.1, 1024)
    assert (config.peft, config.peft_r, config.peft_alpha, config.peft_dropout) == (True, 8, 32, 0.1)
    assert config.checkpoint_epochs == 1


def test_a_flag_beats_the_environment():
    config = parse_config(
        ["--max-seq-length", "256", "--lora", "off", "--output-dir=/data/run1"],
        environ={"MAX_SEQ_LENGTH": "1024", "PEFT": "1"},
    )
    assert config.max_seq_length == 256 and config.peft is False and config.output_dir == "/data/run1"
    assert config.prepared_dir == "/data/run1/prepared"


@pytest.mark.parametrize(
    ("argv", "environ", "message"),
    [
        ([], {"PACKING": "maybe"}, "PACKING='maybe' is not valid: expected true/false"),
        (["--max-seq-length", "long"], {}, "--max-seq-length='long' is not valid: expected a int"),
        (["--attn-implementation", "flash"], {}, "choose one of auto, flash_attention_2, sdpa, eager"),
        (
            ["--test-size", "1.5"],
            {},
            "--test-size / TEST_SIZE = 1.5 is not allowed: a fraction strictly between 0 and 1",
        ),
        (["--per-device-train-batch-size", "0"], {}, "PER_DEVICE_TRAIN_BATCH_SIZE = 0 is not allowed: must be > 0"),
        (["--peft", "true", "--peft-target-modules", " , "], {}, "PEFT_TARGET_MODULES"),
    ],
)
def test_bad_values_name_the_key_the_value_and_what_is_allowed(argv, environ, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_config(argv, environ=environ)


def test_max_steps_overrides_epochs_and_too_few_rows_is_refused():
    config = parse_config(
        ["--max-steps", "5", "--per-device-train-batch-size", "2", "--gradient-accumulation-steps", "1"], environ={}
    )
    planner = BatchPlanner([[1] * 10] * 40, 512, 2, 1, 0, 0, False, 0)
    schedule = make_schedule(config, planner)
    assert isinstance(schedule, Schedule) and schedule.total_steps == 5
    too_big = parse_config(["--per-device-train-batch-size", "64"], environ={})
    with pytest.raises(SystemExit, match="--per-device-train-batch-size 64"):
        make_schedule(too_big, BatchPlanner([[1] * 10] * 40, 512, 64, 1, 0, 0, False, 0))


def test_checkpoint_and_eval_schedule():
    schedule = Schedule(
        total_steps=25, steps_per_epoch=10, checkpoint_steps=4, checkpoint_epochs=2, eval_steps=10, eval_max_batches=0
    )
    assert [s for s in range(1, 26) if schedule.checkpoint_due(s)] == [4, 8, 12, 16, 20, 24, 25]
    assert [s for s in range(1, 26) if schedule.eval_due(s)] == [10, 20, 25]
    by_epoch = Schedule(30, 10, 0, 1, 0, 0)
    assert [s for s in range(1, 31) if by_epoch.checkpoint_due(s)] == [10, 20, 30]
