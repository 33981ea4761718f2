"""LoRA through peft: wrap the model before sharding; export only the adapter at the end."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from torch.distributed.tensor import DTensor

from workloads.fsdp.config import TrainConfig


def apply_lora(model: nn.Module, config: TrainConfig) -> nn.Module:
    from peft import LoraConfig, get_peft_model

    lora_config = LoraConfig(
        r=config.peft_r,
        lora_alpha=config.peft_alpha,
        lora_dropout=config.peft_dropout,
        target_modules=config.target_modules,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, lora_config)


def is_peft_model(model: nn.Module) -> bool:
    return hasattr(model, "peft_config")


def gather_trainable(model: nn.Module) -> dict[str, torch.Tensor]:
    """Full (unsharded) copies of the trainable parameters; a collective, so every rank must call it."""
    gathered = {}
    for name, param in model.named_parameters():
        if param.requires_grad:
            value = param.full_tensor() if isinstance(param, DTensor) else param
            gathered[name] = value.detach().to("cpu", torch.float32)
    return gathered


def export_adapter(model: nn.Module, out_dir: str | Path, is_main: bool) -> None:
    """Write ``adapter_config.json`` and ``adapter_model.safetensors`` as peft's ``from_pretrained`` reads them."""
    state = gather_trainable(model)
    if is_main:
        model.save_pretrained(str(out_dir), state_dict=state)
