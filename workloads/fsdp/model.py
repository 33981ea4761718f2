"""Model loading and FSDP2 sharding: from_pretrained, optional LoRA and compile, fully_shard per decoder layer."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from workloads.fsdp.config import ConfigError, TrainConfig
from workloads.fsdp.distributed import DistInfo
from workloads.fsdp.lora import apply_lora

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}


def choose_attn_implementation(requested: str, device: torch.device) -> str:
    """flash_attention_2 when it can run, else SDPA; transformers 5 raises instead of falling back."""
    from transformers.utils import is_flash_attn_2_available

    flash_ok = device.type == "cuda" and is_flash_attn_2_available()
    if requested == "auto":
        return "flash_attention_2" if flash_ok else "sdpa"
    if requested == "flash_attention_2" and not flash_ok:
        raise ConfigError(
            "--attn-implementation / ATTN_IMPLEMENTATION = 'flash_attention_2' needs a CUDA device "
            "and the flash-attn package; use auto, sdpa or eager"
        )
    return requested


def load_model(config: TrainConfig, info: DistInfo) -> nn.Module:
    """Rank 0 loads the pretrained weights; the others build the same model on the meta device (no memory).

    After sharding, rank 0 broadcasts (``broadcast_weights``): one copy of a 70B model in host memory per job,
    not one per GPU."""
    from transformers import AutoConfig, AutoModelForCausalLM

    attn = choose_attn_implementation(config.attn_implementation, info.device)
    dtype, token = DTYPES[config.param_dtype], os.environ.get("HF_TOKEN")
    if info.is_main:
        model = AutoModelForCausalLM.from_pretrained(
            config.model_id, dtype=dtype, attn_implementation=attn, token=token
        )
    else:
        hf_config = AutoConfig.from_pretrained(config.model_id, token=token)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(hf_config, dtype=dtype, attn_implementation=attn)
    model.config.use_cache = False
    return model


def broadcast_weights(model: nn.Module, rank0_state: dict[str, torch.Tensor], info: DistInfo) -> None:
    """Fill every rank's shards from rank 0's full weights; buffers (e.g. RoPE tables) are copied whole."""
    if info.world_size == 1:
        return
    if not info.is_main:
        model.to_empty(device=info.device)
    options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
    set_model_state_dict(model, rank0_state if info.is_main else {}, options=options)
    for buffer in model.buffers():
        dist.broadcast(buffer, src=0)


def decoder_layers(model: nn.Module) -> list[nn.Module]:
    """The repeated transformer blocks, found by the class names the model declares unsplittable."""
    names = set(getattr(model, "_no_split_modules", None) or [])
    inner = getattr(model, "get_base_model", lambda: model)()
    names |= set(getattr(inner, "_no_split_modules", None) or [])
    layers = [module for module in model.modules() if type(module).__name__ in names]
    if not layers:
        raise ValueError(f"no decoder layers found in {type(model).__name__} (looked for {sorted(names)})")
    return layers


def shard_model(model: nn.Module, config: TrainConfig, info: DistInfo) -> nn.Module:
    mesh = init_device_mesh(info.device.type, (info.world_size,))
    policy = MixedPrecisionPolicy(param_dtype=DTYPES[config.mixed_precision], reduce_dtype=torch.float32)
    for layer in decoder_layers(model):
        fully_shard(layer, mesh=mesh, mp_policy=policy, reshard_after_forward=True)
    fully_shard(model, mesh=mesh, mp_policy=policy, reshard_after_forward=True)
    return model


def compile_layers(model: nn.Module, backend: str) -> None:
    """Compile block by block (as torchtitan does): static row shapes, one graph reused by every layer."""
    for layer in decoder_layers(model):
        layer.compile(backend=backend, dynamic=False)


def build_model(config: TrainConfig, info: DistInfo) -> nn.Module:
    torch.manual_seed(config.seed)
    model = load_model(config, info)
    if config.peft:
        model = apply_lora(model, config)  # rank 0's fresh adapters are broadcast with the weights
    rank0_state = model.state_dict() if info.is_main else {}
    if config.activation_checkpointing:
        # Non-reentrant checkpointing re-runs each layer's forward (and FSDP2's all-gather hook) in backward.
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    if config.compile:
        compile_layers(model, config.compile_backend)
    model = shard_model(model, config, info)
    broadcast_weights(model, rank0_state, info)
    return model
