"""HBM per chip of a MaxText training step, estimated from its arguments in microseconds, without compiling.

What each chip holds while the step runs, as the compiled steps measured here hold it (benchmarks/maxtext_hbm.py
prints the estimate beside the compiler's figure for every job it has one for):
- states: the parameters and AdamW's two moments (weight_dtype, mu_dtype: fp32 by default), sharded over every
  mesh axis but data (MaxText's logical rules put each weight's embed dimension on fsdp and its heads or mlp
  dimension on tensor); the program's arguments.
- gradients: one more copy of the parameters in weight_dtype, as sharded.
- gathered weights: layers' bf16 weights all-gathered over fsdp (still split over tensor). The compiled steps
  measured here hold GATHERED_SHARE of every layer's where the step then stays within PREFETCH_CEILING of the
  chip's usable HBM (or where nothing would fit), and fill up to that ceiling otherwise: the compiler trades
  prefetching for memory and stops short of the limit. At least two layers' (the one computing and the one
  prefetched) are always held: the job's need, which the verdict judges.
- activations: what the remat policy keeps on device per layer and token (`remat_policy`, and for `custom` each
  tensor set to `device`; `offload`ed ones live in host memory), in bf16. Per chip the tokens are the per-device
  batch times the sequence: tensor parallelism splits each activation's width as much as it multiplies the tokens.
- logits: LOGIT_BYTES per token and vocabulary entry (bf16 logits, the loss's fp32 view and their gradient, as
  XLA fuses them).
GATHERED_SHARE, LOGIT_BYTES and PREFETCH_CEILING are fitted to compiled steps (benchmarks/README.md: MaxText HBM
estimate), the rest counts bytes. Dense Llama-family models only (components/facts/maxtext_memory.py); others get
no estimate.

That the compiler gives up prefetching (and so runs in the need, not the total) was seen only in the compiled steps
of COMPILED_FITS: a job of another per-token shape, or with more tokens per chip than any of them of its shape, is
outside what the estimate is calibrated on, and is judged by its full figure, every layer's gathered weights held
(`judged`): tpu-recipes' Llama 3.1 8B on v6e-64 at batch 5 needs 22.0 GiB by the need but 33.0 GiB in full, and
libtpu refuses it for 34.4 GiB of temporaries.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from components.config.maxtext_args import is_true
from components.facts.maxtext import maxtext_settings
from components.facts.maxtext_memory import MAXTEXT_ARCHITECTURES
from components.facts.models import ModelArchitecture
from components.facts.node_shapes import GIB
from workloads.maxtext.cli import split_maxtext_args
from workloads.maxtext.parallelism import MeshShape, ParallelismError, check_parallelism, parse_overrides

# Fitted to the compiled llama3-8b dev job and llama3-70b dev job cut to 8 layers (benchmarks/maxtext_hbm.py).
GATHERED_SHARE = 0.91
LOGIT_BYTES = 3.95
# Fitted to the Llama 3.1 70B v6e-256 recipe (27.0 GiB compiled of 31.24 usable), the lowest of the recipes that
# gave up prefetching (8B v6e-8, 8B v6e-16, 70B v6e-32, 70B v6e-64 stopped at 26.9-28.0 GiB, 0.86-0.90 of usable):
# a lower edge, so the estimate of those runs is 0-3 % low.
PREFETCH_CEILING = 0.865
PREFETCHED_LAYERS = 2
# Compiled steps that fit (benchmarks/README.md: MaxText HBM estimate): (model_name, tokens per chip). A job is inside
# what the estimate is calibrated on where one of them has its per-token shape (width, vocabulary) and at least its
# tokens per chip; the largest: 32,768 for the Llama 3 8B shape, 40,960 for the 70B one.
COMPILED_FITS: tuple[tuple[str, int], ...] = (
    ("llama3-8b", 4 * 4096),  # the dev stack's job, 2 x v6e-16
    ("llama3-70b", 2 * 4096),  # the dev stack's 70B cut to 8 layers
    ("llama3.1-8b", 4 * 8192),  # tpu-recipes Llama3.1-8B-MaxText/v6e-256
    ("llama3.1-8b", 2 * 8192),  # tpu-recipes Llama3.1-8B-MaxText/v6e-8, at batch 2
    ("llama3.1-8b", 3 * 8192),  # tpu-recipes Llama3.1-8B-MaxText/v6e-16
    ("llama3.1-70b", 5 * 8192),  # tpu-recipes Llama3.1-70B-MaxText/v6e-256
    ("llama3.1-70b", 2 * 8192),  # tpu-recipes Llama3.1-70B-MaxText/v6e-32 and v6e-64
)
ACTIVATION_BYTES = 2  # dtype: bfloat16
# Every weight_dtype MaxText accepts (components/facts/maxtext_settings.json: weight_dtype, grad_dtype), in bytes.
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}
# Tensors a decoder layer names for remat (maxtext/layers: checkpoint_name), and what each policy saves on device.
_DOTS = ("query_proj", "key_proj", "value_proj", "out_proj", "mlpwi_0", "mlpwi_1", "mlpwo")
POLICY_SAVES: dict[str, tuple[str, ...]] = {
    "full": (),
    "minimal": _DOTS,
    "minimal_with_context": (*_DOTS, "context"),
    "minimal_flash": (*_DOTS, "context"),
    "save_dot_with_context_except_mlp": ("query_proj", "key_proj", "value_proj", "context", "out_proj"),
    "save_dot_except_mlpwi": ("query_proj", "key_proj", "value_proj", "out_proj", "mlpwo"),
    "save_dot_except_mlp": ("query_proj", "key_proj", "value_proj", "out_proj"),
    "save_qkv_proj": ("query_proj", "key_proj", "value_proj"),
    "qkv_proj_offloaded": (),
    "minimal_offloaded": (),
    "save_out_proj": ("out_proj",),
    "none": (*_DOTS, "context"),  # no remat at all: at least every named tensor (an underestimate)
}
CUSTOM_TENSORS = ("decoder_layer_input", "context", *_DOTS)
# MaxText's switches that move the weights or the optimizer's state to host memory, or shard them over the data axis
# too (ZeRO-1): the estimate counts them in HBM, sharded over every axis but data.
STATES_ELSEWHERE = ("parameter_memory_host_offload", "optimizer_memory_host_offload", "shard_optimizer_over_data")
# Settings that change which weights have optimizer state or how weights are sharded: left to the compile.
STATES_RESHAPED = ("trainable_parameters_mask", "logical_axis_rules")
# What the estimate reads, where a job leaves MaxText's base.yml default (components/facts/maxtext_settings.json).
DEFAULTED = (
    "per_device_batch_size",
    "max_target_length",
    "weight_dtype",
    "mu_dtype",
    "remat_policy",
    "opt_type",
    *STATES_ELSEWHERE,
    *CUSTOM_TENSORS,
)


@cache
def base_yml_defaults() -> dict[str, str]:
    """The defaults as the job's own arguments come: text."""
    defaults = maxtext_settings().defaults
    return {key: str(defaults[key]) for key in DEFAULTED}


def job_settings(maxtext_args: Sequence[str]) -> dict[str, str]:
    """The settings the estimates read, as MaxText resolves them: base.yml's defaults, then the model's config, then
    the job's own arguments."""
    overrides = parse_overrides(maxtext_args)
    model = maxtext_settings().model_config(overrides.get("model_name", "default"))
    return {**base_yml_defaults(), **{key: str(model[key]) for key in DEFAULTED if key in model}, **overrides}


class NoEstimate(ValueError):
    """The job is outside what the estimate models: the fit check's compile is the only verdict."""


def check_states_on_device(args: Mapping[str, str]) -> None:
    """NoEstimate unless every weight and its AdamW moments stay in HBM, sharded as the estimate counts them."""
    if args["opt_type"] != "adamw":
        raise NoEstimate(f"opt_type={args['opt_type']}: the estimate counts AdamW's state")
    elsewhere = [key for key in STATES_ELSEWHERE if is_true(args[key])] + [k for k in STATES_RESHAPED if k in args]
    if elsewhere:
        raise NoEstimate(f"{', '.join(elsewhere)}: the estimate counts every weight's state in HBM, off the data axis")


@dataclass(frozen=True)
class HbmEstimate:
    states: float
    gradients: float
    gathered: float  # what the compiled step is expected to hold
    activations: float
    logits: float
    remat_policy: str
    prefetched: float  # the gathered weights it cannot do without: two layers'
    every_layer: float  # GATHERED_SHARE of every layer's gathered weights: what the step holds if it keeps prefetching
    calibrated: bool  # a compiled step of this per-token shape and at least these tokens per chip fits (COMPILED_FITS)

    @property
    def total(self) -> float:
        """What the compiler is expected to report."""
        return self.states + self.gradients + self.gathered + self.activations + self.logits

    @property
    def need(self) -> float:
        """The least the step can run in: the compiler may give up prefetching, not the rest."""
        return self.total - self.gathered + self.prefetched

    @property
    def full(self) -> float:
        """The step with every layer's gathered weights held, no ceiling: how far over the chip a job may be."""
        return self.total - self.gathered + self.every_layer

    @property
    def judged(self) -> float:
        """What the verdict judges: the need where the compiled steps show the compiler giving up prefetching for
        such a job, else the full figure."""
        return self.need if self.calibrated else self.full

    def per_chip(self, devices_per_chip: int) -> HbmEstimate:
        """A device's figures as its chip's (TPU7x: two devices a chip, each with its share of the chip's HBM)."""
        sizes = ("states", "gradients", "gathered", "activations", "logits", "prefetched", "every_layer")
        return dataclasses.replace(self, **{name: getattr(self, name) * devices_per_chip for name in sizes})

    def parts(self) -> str:
        return (
            f"weights and AdamW state {self.states / GIB:.1f}, gradients {self.gradients / GIB:.1f}, gathered "
            f"weights {self.gathered / GIB:.1f}, activations {self.activations / GIB:.1f} (remat {self.remat_policy}), "
            f"logits {self.logits / GIB:.1f} GiB"
        )


def tensor_widths(arch: ModelArchitecture) -> dict[str, int]:
    """Features per token of each named tensor of a layer."""
    q, kv = arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    return {
        "decoder_layer_input": arch.hidden,
        "query_proj": q,
        "key_proj": kv,
        "value_proj": kv,
        "context": q,
        "out_proj": arch.hidden,
        "mlpwi_0": arch.intermediate,
        "mlpwi_1": arch.intermediate,
        "mlpwo": arch.hidden,
    }


def saved_tensors(args: Mapping[str, str]) -> tuple[str, ...]:
    """The tensors each layer keeps in HBM for its backward under the job's remat policy."""
    policy = args["remat_policy"]
    if policy == "custom":
        return tuple(name for name in CUSTOM_TENSORS if args[name] == "device")
    if policy not in POLICY_SAVES:
        raise NoEstimate(f"remat_policy={policy} is not one MaxText knows (allowed: custom, {', '.join(POLICY_SAVES)})")
    return ("decoder_layer_input", *POLICY_SAVES[policy])  # the scan's carry, each layer's input


def estimate(
    maxtext_args: Sequence[str], chips_per_slice: int, slices: int, usable_bytes: float | None = None
) -> HbmEstimate:
    """HBM per chip of the job's step on chips with `usable_bytes` each; NoEstimate when its model or options are
    outside the estimate."""
    args = job_settings(maxtext_args)
    arch = MAXTEXT_ARCHITECTURES.get(args.get("model_name", "default"))
    if arch is None:
        raise NoEstimate(f"no instant estimate for model {args.get('model_name', 'default')} (dense Llama family only)")
    if "base_num_decoder_layers" in args:  # a model cut short (override_model_config=true)
        arch = dataclasses.replace(arch, layers=int(args["base_num_decoder_layers"]))
    check_states_on_device(args)
    mesh = job_mesh(args, chips_per_slice, slices)
    weight = DTYPE_BYTES[args["weight_dtype"]]
    param_shards = chips_per_slice * slices / data_parallelism(mesh)
    tensor = axis_size(mesh, "tensor")
    tokens = float(args["per_device_batch_size"]) * int(args["max_target_length"])
    widths = tensor_widths(arch)
    gathered_layer = arch.layer_params * ACTIVATION_BYTES / tensor
    states = arch.params * state_bytes(args) / param_shards
    gradients = arch.params * weight / param_shards
    activations = arch.layers * tokens * sum(widths[name] for name in saved_tensors(args)) * ACTIVATION_BYTES
    logits = tokens * arch.vocab * LOGIT_BYTES
    prefetched = PREFETCHED_LAYERS * gathered_layer
    every_layer = GATHERED_SHARE * arch.layers * gathered_layer
    calibrated = within_compiled_fits(arch, tokens)
    return HbmEstimate(
        states=states,
        gradients=gradients,
        gathered=gathered_held(states + gradients + activations + logits, prefetched, every_layer, usable_bytes)
        if calibrated
        else every_layer,
        activations=activations,
        logits=logits,
        remat_policy=args["remat_policy"],
        prefetched=prefetched,
        every_layer=every_layer,
        calibrated=calibrated,
    )


def job_mesh(args: Mapping[str, str], devices_per_slice: int, slices: int) -> MeshShape:
    try:
        return check_parallelism(args, devices_per_slice, slices)
    except ParallelismError as error:
        raise NoEstimate(str(error)) from error


def state_bytes(args: Mapping[str, str]) -> int:
    """Bytes a weight holds with its AdamW state: the weight, the first moment in mu_dtype (the weight's when unset),
    the second in the weight's dtype (optax's scale_by_adam takes mu_dtype for the first moment only)."""
    weight = DTYPE_BYTES[args["weight_dtype"]]
    return 2 * weight + DTYPE_BYTES.get(args["mu_dtype"], weight)


def per_token_shape(arch: ModelArchitecture) -> tuple[int, ...]:
    """What the per-token terms (activations, logits) read of a model: everything but its depth."""
    return (arch.hidden, arch.intermediate, arch.heads, arch.kv_heads, arch.vocab)


def within_compiled_fits(arch: ModelArchitecture, tokens_per_chip: float) -> bool:
    """Whether a compiled step that fits has the model's per-token shape and at least its tokens per chip."""
    shape = per_token_shape(arch)
    return any(
        per_token_shape(MAXTEXT_ARCHITECTURES[name]) == shape and tokens_per_chip <= tokens
        for name, tokens in COMPILED_FITS
    )


FITS, TOO_CLOSE, DOES_NOT_FIT = "fits", "too close to call", "does not fit"
# Within this share of the usable HBM the estimate cannot tell fit from no fit: the fit check's compile decides.
BORDERLINE = 0.15


def hbm_verdict(held: HbmEstimate, usable_bytes: float) -> str:
    """FITS, TOO_CLOSE or DOES_NOT_FIT: the judged figure against the chip's usable HBM, BORDERLINE either side."""
    if held.judged > usable_bytes * (1 + BORDERLINE):
        return DOES_NOT_FIT
    if held.judged >= usable_bytes * (1 - BORDERLINE):
        return TOO_CLOSE
    return FITS


def gathered_held(rest: float, prefetched: float, every_layer: float, usable_bytes: float | None) -> float:
    """Gathered weights the compiled step holds: every layer's (their GATHERED_SHARE) where they stay under the prefetch
    ceiling (or where not even the prefetched ones fit the chip: the compiler then reports them all), else what the
    ceiling leaves, and never fewer than the prefetched ones."""
    held = every_layer
    if usable_bytes is None or rest + prefetched >= usable_bytes:
        return held
    ceiling = PREFETCH_CEILING * usable_bytes
    return held if rest + held <= ceiling else max(ceiling - rest, prefetched)


def axis_size(mesh: MeshShape, axis: str) -> int:
    return mesh.ici.get(axis, 1) * mesh.dcn.get(axis, 1)


def data_parallelism(mesh: MeshShape) -> int:
    """Replicas of the weights: the data axis (MaxText's DiLoCo aside, every other axis shards them)."""
    return axis_size(mesh, "data")


@dataclass(frozen=True)
class FitLayout:
    """A fit check's arguments (tools/maxtext_fit/fit_plan.py: slice flags, --, MaxText args) as the estimates read
    them: MaxText shards over JAX devices (a TPU7x chip is two), and an elastic job is compiled at its fewest slices."""

    maxtext_args: list[str]
    devices_per_chip: int
    devices_per_slice: int
    slices: int


def fit_layout(fit_argv: Sequence[str]) -> FitLayout:
    flags, maxtext_args = split_maxtext_args(fit_argv)
    values = dict(zip(flags[::2], flags[1::2], strict=False))
    devices_per_chip = int(values.get("--devices-per-chip", 1))
    devices_per_slice = int(values["--hosts-per-slice"]) * int(values["--chips-per-host"]) * devices_per_chip
    return FitLayout(
        list(maxtext_args), devices_per_chip, devices_per_slice, int(values.get("--min-slices", values["--slices"]))
    )


def estimate_for_fit_argv(fit_argv: Sequence[str], usable_bytes: float | None = None) -> HbmEstimate:
    """The estimate per chip, of chips with `usable_bytes` each, for a fit check's arguments: made per device and
    given per chip."""
    layout = fit_layout(fit_argv)
    usable_per_device = usable_bytes / layout.devices_per_chip if usable_bytes is not None else None
    per_device = estimate(layout.maxtext_args, layout.devices_per_slice, layout.slices, usable_per_device)
    return per_device.per_chip(layout.devices_per_chip)
