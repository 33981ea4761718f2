"""A MaxText step's work per chip counted from the model's architecture and the mesh, in microseconds, no compile.

The fit check reads a job's work from its compiled step (tools/maxtext_fit/hlo_cost.py: StepWork); the instant
forecast counts the same figures from MaxText's model config (components/facts/maxtext_settings.json) and the job's
arguments, so preflight/forecast/maxtext.py turns them into time with the same calibration:
- matrix FLOPs, as the compiled figure counts them: every weight's forward (2 FLOPs per weight and token) and
  backward (twice that), the forward matmuls the remat policy recomputes (those whose output it neither keeps on
  device nor offloads; never the MLP's down projection, the layer's output, which no backward reads), and attention
  by MaxText's own count (the compiled figure's stand-in for splash attention's kernels). A mixture of experts runs
  `num_experts_per_tok` experts per token, padded to `capacity_factor` where it drops tokens, and its router.
- model FLOPs: MaxText's count, what its step log's TFLOP/s/device and the forecast's MFU divide (6 per active
  weight and token, attention 3 x the causal forward).
- ICI bytes: the fsdp all-gathers of the bf16 weights (forward, and again for the backward) and the gradients'
  reduce-scatter (weight_dtype) within a slice; tensor parallelism's all-reduces of each layer's activations (two
  in the forward, two in the backward, two more where the remat policy recomputes the layer).
- DCN bytes: the gradients' all-reduce in bf16 over the data axis across slices (as the dev job compiles it: 1.0 GB
  per chip), fsdp's gathers and reduce-scatter over slices.
- HBM traffic is not counted (zero): the compiled figure is itself an approximation, calibrated on nothing, and
  undershoots published runs on small slices when it bounds them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from components.config.maxtext_args import is_true
from components.facts.maxtext import maxtext_settings
from components.facts.maxtext_memory import CONFIG_KEYS
from preflight.forecast.maxtext_hbm import (
    DTYPE_BYTES,
    NoEstimate,
    axis_size,
    check_states_on_device,
    data_parallelism,
    fit_layout,
    job_mesh,
    job_settings,
    state_bytes,
)
from tools.maxtext_fit.hlo_cost import StepWork
from workloads.maxtext.parallelism import MeshShape

WEIGHT_GATHER_BYTES = 2  # fsdp gathers bf16 weights
ACTIVATION_BYTES = 2
DCN_GRADIENT_BYTES = 2  # the gradients' all-reduce over slices, as the compiled dev job moves it
DOTS = ("query_proj", "key_proj", "value_proj", "out_proj", "mlpwi_0", "mlpwi_1", "mlpwo")
# What each remat policy keeps for the backward, on device or offloaded to the host (maxtext_hbm.POLICY_SAVES keeps
# only what stays on device).
POLICY_KEEPS: dict[str, tuple[str, ...]] = {
    "full": (),
    "minimal": DOTS,
    "minimal_with_context": DOTS,
    "minimal_flash": DOTS,
    "save_dot_with_context_except_mlp": ("query_proj", "key_proj", "value_proj", "out_proj"),
    "save_dot_except_mlpwi": ("query_proj", "key_proj", "value_proj", "out_proj", "mlpwo"),
    "save_dot_except_mlp": ("query_proj", "key_proj", "value_proj", "out_proj"),
    "save_qkv_proj": ("query_proj", "key_proj", "value_proj"),
    "qkv_proj_offloaded": ("query_proj", "key_proj", "value_proj"),
    "minimal_offloaded": DOTS,
    "save_out_proj": ("out_proj",),
    "none": DOTS,
}
# Decoder blocks whose weights Architecture.params counts to within 1 % of their published sizes, untied output head
# (tests/preflight/forecast/test_maxtext_flops.py): a lower bound on HBM may only rest on an exact count.
PARAMS_COUNTED = ("llama2", "mistral", "mixtral")
MODEL_DEFAULTS = ("num_experts", "num_experts_per_tok", "capacity_factor", "head_dim")


@dataclass(frozen=True)
class Architecture:
    """What the count reads of a MaxText model (its configs/models/<name>.yml over base.yml)."""

    hidden: int
    mlp: int  # a dense layer's, or each expert's
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    head_dim: int
    experts: int = 1
    experts_per_token: int = 1

    def dot_weights(self) -> dict[str, float]:
        """Weights per layer of each named matmul, as one token meets them (its experts' only)."""
        mlp = self.hidden * self.mlp * (self.experts_per_token if self.experts > 1 else 1)
        return {
            "query_proj": self.hidden * self.heads * self.head_dim,
            "key_proj": self.hidden * self.kv_heads * self.head_dim,
            "value_proj": self.hidden * self.kv_heads * self.head_dim,
            "out_proj": self.heads * self.head_dim * self.hidden,
            "mlpwi_0": mlp,
            "mlpwi_1": mlp,
            "mlpwo": mlp,
        }

    @property
    def router_weights(self) -> int:
        return self.hidden * self.experts if self.experts > 1 else 0

    @property
    def params(self) -> float:
        """Every weight: attention, every expert's MLP, router, norms aside; embedding and output head."""
        dots = self.dot_weights()
        attention = sum(dots[name] for name in DOTS[:4])
        mlp = 3 * self.hidden * self.mlp * self.experts
        return self.layers * (attention + mlp + self.router_weights) + 2 * self.vocab * self.hidden


def architecture(args: Mapping[str, str]) -> Architecture:
    """The job's model, from MaxText's config of it; NoEstimate for a model MaxText's settings do not describe."""
    name = args.get("model_name", "default")
    config = {**maxtext_settings().model_config(name), **args}
    if not all(key in config for key in CONFIG_KEYS):
        raise NoEstimate(f"no architecture for model {name} in components/facts/maxtext_settings.json")
    defaults = maxtext_settings().defaults
    value = {key: config.get(key, defaults.get(key)) for key in MODEL_DEFAULTS}
    experts = int(value["num_experts"])
    mlp_key = "base_moe_mlp_dim" if experts > 1 and "base_moe_mlp_dim" in config else "base_mlp_dim"
    return Architecture(
        hidden=int(config["base_emb_dim"]),
        mlp=int(config[mlp_key]),
        layers=int(config["base_num_decoder_layers"]),
        heads=int(config["base_num_query_heads"]),
        kv_heads=int(config["base_num_kv_heads"]),
        vocab=int(config["vocab_size"]),
        head_dim=int(value["head_dim"]),
        experts=experts,
        experts_per_token=int(value["num_experts_per_tok"]),
    )


def kept(args: Mapping[str, str]) -> tuple[str, ...]:
    """The named matmul outputs the remat policy keeps for the backward, on device or on the host."""
    policy = args["remat_policy"]
    if policy == "custom":
        return tuple(name for name in DOTS if args.get(name, "remat") in ("device", "offload"))
    if policy not in POLICY_KEEPS:
        raise NoEstimate(f"remat_policy={policy} is not one MaxText knows (allowed: custom, {', '.join(POLICY_KEEPS)})")
    return POLICY_KEEPS[policy]


@dataclass(frozen=True)
class FlopsPerToken:
    matmul: float  # as compiled: recompute included, attention by MaxText's count
    model: float  # MaxText's count
    recomputed_layer: bool  # the remat policy recomputes some of each layer's forward


def flops_per_token(arch: Architecture, args: Mapping[str, str], sequence: int) -> FlopsPerToken:
    dots = arch.dot_weights()
    capacity = float(args.get("capacity_factor", maxtext_settings().defaults["capacity_factor"]))
    padded = capacity if arch.experts > 1 and capacity > 0 else 1.0  # dropping: each expert computes its capacity
    computed = {name: weights * (padded if name.startswith("mlpw") else 1.0) for name, weights in dots.items()}
    layer = sum(computed.values()) + arch.router_weights
    recomputed = sum(computed[name] for name in DOTS if name not in kept(args) and name != "mlpwo")
    head = arch.hidden * arch.vocab
    attention = 3 * 4 * sequence * arch.heads * arch.head_dim / 2  # forward and backward, causal
    model = 6 * (arch.layers * (sum(dots.values()) + arch.router_weights) + head) + arch.layers * attention
    matmul = 6 * (arch.layers * layer + head) + 2 * arch.layers * recomputed + arch.layers * attention
    return FlopsPerToken(matmul, model, recomputed > 0)


def communication(
    arch: Architecture, args: Mapping[str, str], mesh: MeshShape, tokens: float, recompute: bool
) -> tuple[float, float]:
    """(ICI bytes, DCN bytes) one chip sends per step."""
    weight = DTYPE_BYTES[args["weight_dtype"]]
    tensor = axis_size(mesh, "tensor")
    per_tensor_shard = arch.params / tensor
    ici_fsdp, dcn_fsdp = mesh.ici.get("fsdp", 1), mesh.dcn.get("fsdp", 1)
    fsdp_bytes = per_tensor_shard * (2 * WEIGHT_GATHER_BYTES + weight)  # two gathers, one reduce-scatter
    ici = fsdp_bytes * (ici_fsdp - 1) / ici_fsdp
    all_reduces = 4 + (2 if recompute else 0)
    ici += (
        arch.layers * all_reduces * 2 * (tensor - 1) / tensor * tensor * tokens * arch.hidden * ACTIVATION_BYTES
        if tensor > 1
        else 0.0
    )
    dcn = fsdp_bytes / ici_fsdp * (dcn_fsdp - 1) / dcn_fsdp
    data = mesh.dcn.get("data", 1)
    shard = arch.params / (tensor * ici_fsdp * dcn_fsdp)
    dcn += 2 * (data - 1) / data * shard * DCN_GRADIENT_BYTES
    return ici, dcn


def instant_work(maxtext_args: Sequence[str], chips_per_slice: int, slices: int, steps: int) -> StepWork:
    """The job's step per chip, counted; NoEstimate where its model or options are outside the count."""
    args = job_settings(maxtext_args)
    arch = architecture(args)
    mesh = job_mesh(args, chips_per_slice, slices)
    sequence = int(args["max_target_length"])
    tokens = float(args["per_device_batch_size"]) * sequence
    per_token = flops_per_token(arch, args, sequence)
    ici, dcn = communication(arch, args, mesh, tokens, per_token.recomputed_layer)
    return StepWork(
        matmul_flops=per_token.matmul * tokens,
        hbm_bytes=0.0,
        ici_bytes=ici,
        dcn_bytes=dcn,
        model_flops=per_token.model * tokens,
        tokens=int(tokens),
        steps=steps,
    )


def instant_work_for_fit_argv(fit_argv: Sequence[str], steps: int) -> tuple[StepWork, int]:
    """(a device's work, the slices it runs on) for a fit check's arguments, at the fewest slices, as the fit check
    compiles an elastic job; `per_chip` makes it a chip's."""
    layout = fit_layout(fit_argv)
    return instant_work(layout.maxtext_args, layout.devices_per_slice, layout.slices, steps), layout.slices


def states_floor(maxtext_args: Sequence[str], devices_per_slice: int, slices: int) -> float:
    """The least HBM a device holds for a model of the PARAMS_COUNTED blocks, mixtures of experts included: its share
    of the weights and AdamW's two moments, sharded over every mesh axis but data (maxtext_hbm's states). No
    gradients, activations or gathered weights: whatever else the step holds comes on top. NoEstimate where the
    states may live elsewhere (another optimizer, host offload) or the weights are not counted exactly."""
    args = job_settings(maxtext_args)
    name = args.get("model_name", "default")
    resolved = {**maxtext_settings().defaults, **maxtext_settings().model_config(name), **args}
    if str(resolved.get("decoder_block")) not in PARAMS_COUNTED or is_true(str(resolved.get("logits_via_embedding"))):
        raise NoEstimate(f"{name}: its weights are not counted exactly (decoder blocks {', '.join(PARAMS_COUNTED)})")
    check_states_on_device(args)
    shards = devices_per_slice * slices / data_parallelism(job_mesh(args, devices_per_slice, slices))
    return architecture(args).params * state_bytes(args) / shards


def states_floor_for_fit_argv(fit_argv: Sequence[str]) -> float:
    """`states_floor` per chip for a fit check's arguments."""
    layout = fit_layout(fit_argv)
    return states_floor(layout.maxtext_args, layout.devices_per_slice, layout.slices) * layout.devices_per_chip


def per_chip(work: StepWork, devices_per_chip: int) -> StepWork:
    """A device's step as its chip's (TPU7x: two devices a chip), which is what the peak figures are per."""
    if devices_per_chip == 1:
        return work
    scaled = ("matmul_flops", "hbm_bytes", "ici_bytes", "dcn_bytes", "model_flops", "tokens")
    return dataclasses.replace(work, **{name: getattr(work, name) * devices_per_chip for name in scaled})
