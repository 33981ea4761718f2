"""FLOPs per token against torch's own counter, the log line's fields, peak FLOP/s and MFU."""

from __future__ import annotations

import json

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoModelForCausalLM

from workloads.fsdp.batching import collate
from workloads.fsdp.config import TrainConfig
from workloads.fsdp.flops import FlopModel
from workloads.fsdp.loop import summed_token_loss
from workloads.fsdp.lora import apply_lora
from workloads.fsdp.metrics import MetricsLogger, StepRecord, detect_peak_flops, format_step_line


def _counted_training_flops(model, rows: list[list[list[int]]], row_len: int) -> float:
    batch = collate(rows, row_len, pad_id=0, packing=True)
    with FlopCounterMode(display=False) as counter:
        summed_token_loss(model, batch, torch.device("cpu")).backward()
    return counter.get_total_flops()


def _random_rows(count: int, length: int) -> list[list[list[int]]]:
    generator = torch.Generator().manual_seed(0)
    return [[torch.randint(10, 1000, (length,), generator=generator).tolist()] for _ in range(count)]


@pytest.fixture()
def eager_model(tiny):
    return AutoModelForCausalLM.from_pretrained(tiny.model_dir, attn_implementation="eager", dtype=torch.float32)


def test_full_finetune_flops_match_the_flop_counter_exactly(eager_model):
    flop_model = FlopModel.from_model(eager_model, eager_model.config)
    assert flop_model.matmul_params == flop_model.trainable_matmul_params
    reported = flop_model.training_flops([96, 96])
    assert reported == _counted_training_flops(eager_model, _random_rows(2, 96), 96)


def test_lora_flops_count_no_weight_gradients_for_frozen_weights(eager_model):
    model = apply_lora(eager_model, TrainConfig(peft=True, peft_r=8, peft_dropout=0.0))
    flop_model = FlopModel.from_model(model, model.config)
    assert 0 < flop_model.trainable_matmul_params < flop_model.matmul_params / 10
    reported = flop_model.training_flops([96, 96])
    counted = _counted_training_flops(model, _random_rows(2, 96), 96)
    # The counter is a little lower: layer 0's q/k/v see the frozen embeddings and need no input gradient.
    assert counted <= reported <= counted * 1.03


def test_padding_and_foreign_samples_are_not_counted_as_work(eager_model):
    flop_model = FlopModel.from_model(eager_model, eager_model.config)
    alone = flop_model.training_flops([40]) + flop_model.training_flops([50])
    assert flop_model.training_flops([40, 50]) == alone
    # The counter sees the whole 128-token row, padding and cross-sample attention included.
    rows = [[row[0][:40], row[0][40:90]] for row in _random_rows(1, 90)]
    assert _counted_training_flops(eager_model, rows, 128) > alone


def test_step_line_carries_maxtext_fields_and_mfu():
    record = StepRecord(
        step=7, seconds=2.0, loss=1.25, useful_tokens=8000, flops=4.5e15, world_size=2, lr=1e-4, grad_norm=0.5
    )
    line = format_step_line(record, peak=2.25e15)
    assert line.startswith(
        "completed step: 7, seconds: 2.000, TFLOP/s/device: 1125.000, "
        "Tokens/s/device: 2000.000, loss: 1.250, MFU: 50.00%"
    )
    assert "MFU: n/a" in format_step_line(record, peak=None)


def test_peak_flops_none_on_cpu_unless_given():
    assert detect_peak_flops(torch.device("cpu")) is None
    assert detect_peak_flops(torch.device("cpu"), override=1e12) == 1e12


def test_metrics_jsonl_gets_one_record_per_step_and_eval(tmp_path, capsys):
    path = tmp_path / "m" / "metrics.jsonl"
    logger = MetricsLogger(
        True, total_steps=2, start_step=0, peak=None, jsonl_path=str(path), progress="off", log_every=1
    )
    logger.step(StepRecord(1, 1.0, 2.0, 100, 1e9, 1, 1e-3, None))
    logger.eval(1, 1.5, 50, 0.1)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["kind"] for r in records] == ["train", "eval"]
    assert records[0]["tokens_per_device"] == 100 and records[0]["mfu"] is None
    assert "eval at step: 1, loss: 1.5000" in capsys.readouterr().out


def test_summary_leaves_out_the_first_step(tmp_path, capsys):
    path = tmp_path / "metrics.jsonl"
    logger = MetricsLogger(
        True, total_steps=3, start_step=0, peak=None, jsonl_path=str(path), progress="off", log_every=10
    )
    for step, seconds in ((1, 30.0), (2, 1.0), (3, 1.0)):  # step 1 pays compilation
        logger.step(StepRecord(step, seconds, 2.0, 1000, 2e12, 2, 1e-3, 1.0))
    logger.summary()
    summary = [json.loads(line) for line in path.read_text().splitlines()][-1]
    assert summary["kind"] == "summary" and (summary["first_step"], summary["last_step"]) == (2, 3)
    assert summary["tokens_per_device"] == 500.0 and summary["tflops_per_device"] == 1.0
    assert "summary of steps 2-3: seconds/step: 1.000" in capsys.readouterr().out


def test_the_forecasts_architecture_counts_what_the_trainer_counts_on_a_real_model(eager_model):
    """components/facts/models.py derives the weights from a config; the real model built from the same config
    must hold exactly that many (matmul weights as the trainer's FlopModel counts them, and all parameters)."""
    from components.facts.models import ModelArchitecture

    config = eager_model.config
    architecture = ModelArchitecture(
        config.hidden_size,
        config.intermediate_size,
        config.num_hidden_layers,
        config.num_attention_heads,
        config.num_key_value_heads,
        config.vocab_size,
    )
    assert architecture.matmul_params == FlopModel.from_model(eager_model, config).matmul_params
    assert architecture.params == sum(param.numel() for param in eager_model.parameters())
    train = TrainConfig(peft=True, peft_r=8, peft_dropout=0.0, peft_target_modules="q_proj,v_proj,down_proj")
    lora = apply_lora(eager_model, train)
    trainable = sum(param.numel() for param in lora.parameters() if param.requires_grad)
    assert architecture.lora_params(train.peft_r, train.target_modules) == trainable


def test_an_moe_models_flops_count_the_experts_a_token_is_routed_to():
    """transformers 5 stacks an MoE layer's experts in one 3-D weight per projection, and its router is no nn.Linear:
    the trainer counts the router and num_experts_per_tok of num_local_experts of the experts, as the forecast's
    architecture does (components/facts/models.py, active_matmul_params)."""
    from transformers import MixtralConfig

    from components.facts.models import ModelArchitecture

    config = MixtralConfig(
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=128,
        num_local_experts=4,
        num_experts_per_tok=2,
    )
    model = AutoModelForCausalLM.from_config(config)
    architecture = ModelArchitecture(64, 96, 2, 4, 2, 128, experts=4, experts_per_token=2)
    flop_model = FlopModel.from_model(model, config)
    assert architecture.params == sum(param.numel() for param in model.parameters())
    assert flop_model.matmul_params == architecture.active_matmul_params < architecture.matmul_params
    dense = FlopModel.from_model(model, MixtralConfig(**{**config.to_dict(), "num_experts_per_tok": 4}))
    assert dense.matmul_params == architecture.matmul_params  # every expert, when every one is routed to
