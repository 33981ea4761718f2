"""LoRA under torchrun, also exercising bf16 mixed precision and a torch.compile smoke (backend eager)."""

from __future__ import annotations

import pytest
import torch
from fsdp_helpers import load_checkpoint, read_jsonl, run_torchrun, tiny_args
from safetensors.torch import load_file

from workloads.fsdp.checkpoint import step_dir_name

STEPS = 6


@pytest.fixture(scope="module")
def lora_run(tiny, tmp_path_factory):
    out = tmp_path_factory.mktemp("lora")
    args = tiny_args(
        tiny,
        out,
        max_steps=STEPS,
        peft="true",
        peft_r=8,
        learning_rate=1e-2,
        compile="true",
        compile_backend="eager",
        mixed_precision="bf16",
    )
    run = run_torchrun(2, args, out / "log.txt")
    assert run.returncode == 0, run.output[-3000:]
    return out, run


def _base_name(checkpoint_key: str) -> str | None:
    """``base_model.model.X.base_layer.weight`` -> ``X.weight``; None for LoRA tensors."""
    if "lora_" in checkpoint_key:
        return None
    return checkpoint_key.removeprefix("base_model.model.").replace(".base_layer", "")


def test_only_the_adapters_train(tiny, lora_run, tmp_path):
    out, run = lora_run
    header = run.header()
    assert header["flops_model"]["trainable_matmul_params"] < header["flops_model"]["matmul_params"] / 10
    model = load_checkpoint(out / "checkpoints" / step_dir_name(STEPS), tmp_path)["app"]["model"]
    original = load_file(tiny.model_dir / "model.safetensors")
    base_keys = {key: _base_name(key) for key in model if _base_name(key) is not None}
    assert set(base_keys.values()) == set(original)
    for key, name in base_keys.items():
        assert torch.equal(model[key], original[name]), f"frozen weight {name} changed"
    lora_b = [value for key, value in model.items() if "lora_B" in key]
    assert lora_b and all(value.abs().sum() > 0 for value in lora_b)  # LoRA B starts at zero
    steps = read_jsonl(out / "metrics.jsonl", "train")
    assert steps[-1]["loss"] < steps[0]["loss"]


def test_adapter_and_tokenizer_export_load_with_from_pretrained(tiny, lora_run, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out, _ = lora_run
    final = out / "final"
    tokenizer = AutoTokenizer.from_pretrained(final)
    assert tokenizer.chat_template and len(tokenizer) == len(AutoTokenizer.from_pretrained(tiny.model_dir))
    base = AutoModelForCausalLM.from_pretrained(tiny.model_dir, dtype=torch.float32)
    adapted = PeftModel.from_pretrained(base, final)
    checkpoint = load_checkpoint(out / "checkpoints" / step_dir_name(STEPS), tmp_path)["app"]["model"]
    loaded = dict(adapted.named_parameters())
    lora_keys = [key for key in checkpoint if "lora_" in key]
    assert lora_keys
    for key in lora_keys:
        torch.testing.assert_close(loaded[key].float(), checkpoint[key].float())
