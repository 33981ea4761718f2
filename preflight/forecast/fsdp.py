"""Step time, tokens/s and MFU of an FSDP2 fine-tune, from its shape and the hardware's facts.

The model of a step, as the trainer runs it (workloads/fsdp/model.py, loop.py):
- compute: the trainer's own FLOP count (workloads/fsdp/flops.py), plus what activation checkpointing recomputes,
  at the GPU generation's calibrated efficiency (preflight/forecast/calibration.py);
- communication, per GPU and micro-batch: FSDP2 all-gathers the bf16 parameters for the forward and again for
  the backward (reshard_after_forward), and reduce-scatters fp32 gradients after every micro-batch (the
  trainer does not skip gradient sync while accumulating). A ring moves (W-1)/W of each buffer through each
  GPU's slowest link: NVLink within one node or one multi-node NVLink domain (A4X's NVL72, through the job's
  ComputeDomain), the GPU's RDMA NIC across nodes beyond it;
- overlap: FSDP2 prefetches the next layer's all-gather during this layer's compute, and reduce-scatters
  during the backward, so a micro-batch takes max(compute, communication) plus what cannot overlap, the first
  layer's all-gather and the last layer's reduce-scatter;
- torch.compile: the efficiency is calibrated on compiled runs; an eager step's compute takes calibration.EAGER's
  factor as long, the ratio of torchtitan's published compiled and eager runs of the same job;
- MoE: a token runs through its routed experts only, so the FLOPs count active parameters, while FSDP2 gathers,
  reduces and keeps every expert's weights (the trainer shards experts as any weight: no expert parallelism, no
  all-to-all). No published MoE run calibrates the experts' efficiency: they run at the dense one, and the report
  says so.
The lower bound takes compute at the full peak and links at their full rate. Activation checkpointing runs part of
the forward again in the backward (work, not model FLOPs: MFU leaves it out): all of it with full checkpointing
(the trainer's), every second matmul with torchtitan's per-op selective checkpointing (the published runs').
Not modelled: the optimizer step (memory-bound, milliseconds), data loading.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from components.facts.models import ModelArchitecture
from preflight.forecast.calibration import EAGER
from workloads.fsdp.flops import FlopModel

PARAM_BYTES = 2  # bf16 parameters all-gathered (MixedPrecisionPolicy param_dtype)
GRAD_BYTES = 4  # fp32 gradients reduce-scattered (reduce_dtype)


class Checkpointing(StrEnum):
    """What a layer keeps for its backward and what it runs again."""

    NONE = "none"  # keeps every activation, recomputes nothing
    # torchtitan's per-op selective checkpointing (torchtitan/models/llama3/infra/parallelize.py, `_save_list`):
    # keeps the layer's input, flash attention's output and every odd matmul's (q, v, gate, down); recomputes the
    # even ones (k, o, up) and every elementwise op.
    PER_OP = "per-op"
    FULL = "full"  # keeps the layer's input, runs its whole forward again (the trainer's activation-checkpointing)


# A Llama layer's matmuls in the order its forward runs them (torchtitan: wq, wk, wv, wo, w1, w3, w2).
MATMUL_ORDER = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
PER_OP_RECOMPUTED = MATMUL_ORDER[1::2]
PER_OP_SAVED = MATMUL_ORDER[0::2]


@dataclass(frozen=True)
class Hardware:
    name: str  # the accelerator, as its calibration is keyed (preflight/forecast/calibration.py)
    peak_flops: float  # dense bf16 per GPU
    gpus_per_node: int
    nvlink_bytes_per_s: float  # per GPU and direction
    network_bytes_per_s: float  # per GPU and direction, between nodes
    hbm_bytes: float = 0.0  # per GPU; 0: unknown
    nvlink_domain_nodes: int = 1  # nodes one NVLink fabric spans (A4X: 18, with the job's ComputeDomain)

    def link(self, nodes: int) -> tuple[str, float]:
        """The slowest link a job on `nodes` nodes crosses, and its bandwidth per GPU and direction."""
        if nodes <= self.nvlink_domain_nodes:
            return "NVLink", self.nvlink_bytes_per_s
        return "RDMA", self.network_bytes_per_s


@dataclass(frozen=True)
class FsdpRun:
    architecture: ModelArchitecture
    nodes: int
    rows_per_gpu: int  # per micro-batch
    seq_len: int  # packed rows are full
    accumulation: int  # micro-batches per optimizer step
    sync_every_micro_batch: bool = True
    checkpointing: Checkpointing = Checkpointing.NONE
    state_bytes_per_param: int = 8  # bf16 weights, gradients and both AdamW moments (the trainer's default)
    lora_params: int = 0  # LoRA adapters: only they train, the base weights stay frozen
    compiled: bool = True  # torch.compile on each decoder layer (the trainer's --compile)

    @property
    def activation_checkpointing(self) -> bool:
        return self.checkpointing is not Checkpointing.NONE

    @property
    def trainable_params(self) -> int:
        return self.lora_params or self.architecture.params

    @property
    def all_params(self) -> int:
        return self.architecture.params + self.lora_params


@dataclass(frozen=True)
class Forecast:
    gpus: int
    link: str
    flops_per_step: float  # per GPU
    tokens_per_step: int  # per GPU
    gathered_bytes_per_step: float  # per GPU
    reduced_bytes_per_step: float  # per GPU
    compute_s: float
    communication_s: float
    lower_bound_s: float
    estimate_s: float
    peak_flops: float
    unsharded_gradient_bytes: float  # per GPU, what accumulating without gradient sync holds

    def tokens_per_s_per_gpu(self, seconds: float | None = None) -> float:
        return self.tokens_per_step / (seconds or self.estimate_s)

    def mfu(self, seconds: float | None = None) -> float:
        return self.flops_per_step / (seconds or self.estimate_s) / self.peak_flops

    @property
    def bound(self) -> str:
        return "communication" if self.communication_s > self.compute_s else "compute"


def flop_model(run: FsdpRun) -> FlopModel:
    """The trainer's FLOP count over the matmul weights a token runs through (an MoE model's routed experts only),
    LoRA's adapters included; only the trainable ones get a weight gradient."""
    arch = run.architecture
    matmul = arch.active_matmul_params + run.lora_params
    trainable = run.lora_params or arch.active_matmul_params
    return FlopModel(matmul, trainable, arch.layers, arch.heads, arch.head_dim)


def recompute_flops(run: FsdpRun, lengths: list[int]) -> float:
    """What activation checkpointing runs again per micro-batch: work the GPU does, not model FLOPs."""
    if run.checkpointing is Checkpointing.FULL:
        return flop_model(run).forward_flops(lengths)
    if run.checkpointing is Checkpointing.PER_OP:
        arch = run.architecture
        shapes = arch.projection_shapes()
        per_token = 2 * sum(
            shapes[name][0] * shapes[name][1] * arch.copies_per_token(name) for name in PER_OP_RECOMPUTED
        )
        return float(arch.layers * per_token * sum(lengths))
    return 0.0


def forecast(run: FsdpRun, hardware: Hardware, efficiency: float) -> Forecast:
    """The step at `efficiency` of the GPU's peak (its generation's calibration: preflight/forecast/calibration.py)."""
    arch = run.architecture
    gpus = run.nodes * hardware.gpus_per_node
    ring = (gpus - 1) / gpus
    link, bandwidth = hardware.link(run.nodes)
    lengths = [run.seq_len] * run.rows_per_gpu
    micro_flops = flop_model(run).training_flops(lengths)
    recompute = recompute_flops(run, lengths)
    gathered = 2 * run.all_params * PARAM_BYTES * ring  # forward and backward, frozen weights too
    reduced = run.trainable_params * GRAD_BYTES * ring  # only what has a gradient
    syncs = run.accumulation if run.sync_every_micro_batch else 1
    gathered_step, reduced_step = run.accumulation * gathered, syncs * reduced
    eager = 1.0 if run.compiled else EAGER.compute_factor
    compute_s = eager * run.accumulation * (micro_flops + recompute) / (hardware.peak_flops * efficiency)
    best_compute_s = run.accumulation * (micro_flops + recompute) / hardware.peak_flops
    communication_s = (gathered_step + reduced_step) / bandwidth
    exposed_s = run.accumulation * (gathered / 2 + reduced) / arch.layers / bandwidth
    return Forecast(
        gpus=gpus,
        link=link,
        flops_per_step=run.accumulation * micro_flops,
        tokens_per_step=run.accumulation * run.rows_per_gpu * run.seq_len,
        gathered_bytes_per_step=gathered_step,
        reduced_bytes_per_step=reduced_step,
        compute_s=compute_s,
        communication_s=communication_s,
        lower_bound_s=max(best_compute_s, communication_s) + exposed_s,
        estimate_s=max(compute_s, communication_s) + exposed_s,
        peak_flops=hardware.peak_flops,
        # FSDP2 keeps a skipped sync's gradients unsharded, in fp32, until the step's last micro-batch.
        unsharded_gradient_bytes=0.0 if run.sync_every_micro_batch else run.trainable_params * GRAD_BYTES,
    )


# Activation bytes a transformer layer keeps for its backward, per token and hidden unit, in 16-bit without
# recompute, attention scores not materialised (flash/SDPA): Korthikanti et al., "Reducing Activation
# Recomputation in Large Transformer Models" (https://arxiv.org/abs/2205.05198), s*b*h*(34 + 5*a*s/h) less
# the attention-score term. Derived for GPT's 4h MLP; an estimate for Llama's SwiGLU.
ACTIVATION_BYTES_PER_TOKEN_HIDDEN = 34
LOGIT_BYTES = 10  # bf16 logits, their fp32 copy for the loss, and its gradient


@dataclass(frozen=True)
class Memory:
    """What one GPU holds at the peak of a micro-batch's backward, in bytes."""

    states: float  # its shard of weights, gradients and AdamW moments
    gathered: float  # two layers' bf16 weights (the current one and the prefetched) and one fp32 gradient buffer
    activations: float
    logits: float

    @property
    def total(self) -> float:
        return self.states + self.gathered + self.activations + self.logits


def saved_bytes_per_token(arch: ModelArchitecture, checkpointing: Checkpointing) -> float:
    """What one layer keeps for its backward per token, in 16-bit activations."""
    if checkpointing is Checkpointing.NONE:
        return arch.hidden * ACTIVATION_BYTES_PER_TOKEN_HIDDEN
    kept = arch.hidden  # the layer's input
    if checkpointing is Checkpointing.PER_OP:
        shapes = arch.projection_shapes()
        kept += sum(shapes[name][1] * arch.copies_per_token(name) for name in PER_OP_SAVED)
        kept += arch.heads * arch.head_dim  # and attention's output
        return kept * PARAM_BYTES + arch.heads * 4  # flash attention's fp32 log-sum-exp
    return kept * PARAM_BYTES


def memory(run: FsdpRun, gpus_per_node: int) -> Memory:
    arch = run.architecture
    gpus = run.nodes * gpus_per_node
    tokens = run.rows_per_gpu * run.seq_len
    activations = arch.layers * tokens * saved_bytes_per_token(arch, run.checkpointing)
    if run.activation_checkpointing:  # and the layer whose backward runs holds what it recomputes
        activations += tokens * arch.hidden * ACTIVATION_BYTES_PER_TOKEN_HIDDEN
    frozen = arch.params if run.lora_params else 0  # weights only: no gradient, no optimizer state
    return Memory(
        states=(frozen * PARAM_BYTES + run.trainable_params * run.state_bytes_per_param) / gpus,
        gathered=arch.layer_params * (2 * PARAM_BYTES + GRAD_BYTES),
        activations=activations,
        logits=tokens * arch.vocab * LOGIT_BYTES,
    )
