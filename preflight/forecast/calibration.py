"""How fast each accelerator runs a step, as a fraction of its peak: one table, each row calibrated on published runs.

An FSDP forecast runs the trainer's FLOPs, recompute included, at its GPU's compute efficiency; a MaxText
forecast runs the matrix FLOPs, as compiled or as counted from the architecture (the instant forecast), at its TPU's
MXU efficiency. Each row names the runs it rests on and
the runs it is checked against; benchmarks/fsdp_forecast.py and benchmarks/maxtext_forecast.py derive the
figures and print every anchor's forecast over published (benchmarks/README.md records them).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Calibration:
    accelerator: str  # as a forecast names it: H100, B200, v6e
    efficiency: float  # FLOP/s over peak while the step is compute-bound
    calibrated_on: tuple[str, ...]  # the published runs the efficiency is fitted to
    checked_on: tuple[str, ...] = ()  # published runs it is held to without being fitted to them
    instant_checked_on: tuple[str, ...] = ()  # more runs the instant MaxText count is held to (none compiled here)
    # Where no published run on the accelerator exists yet: how the figure follows from published peak figures.
    assumed: str = ""

    @property
    def label(self) -> str:
        """E.g. `B200 at 750 W, from 1 published run`, or `v6e, from 2 published runs, checked on 4`; without a run,
        `tpu7x, from published peak figures (...); no published run yet`."""
        if not self.calibrated_on:
            return f"{self.accelerator}, from published peak figures ({self.assumed}); no published run yet"
        runs = len(self.calibrated_on)
        label = f"{self.accelerator}, from {runs} published run{'s' if runs != 1 else ''}"
        return f"{label}, checked on {len(self.checked_on)}" if self.checked_on else label


# The GPUs' efficiency counts model FLOPs plus recompute (workloads/fsdp/flops.py, preflight/forecast/fsdp.py) over
# the datasheet's dense bf16 peak. Keys are GPU machine facts' accelerator names (components/facts/topology.py).
_B200_AT_750_W = Calibration(
    "B200 at 750 W",
    0.234,
    calibrated_on=("torchtitan Llama 3 8B, FSDP2 + torch.compile, per-op SAC, bf16, 8 B200 at 750 W, 8,307.5",),
)
UNCAPPED_B200_GAIN = 1.31  # torchtitan PR #1196's uncapped B200 over the 750 W run, per GPU

GPU_COMPUTE_EFFICIENCY: dict[str, Calibration] = {
    "nvidia-h100": Calibration(
        "H100",
        0.426,
        calibrated_on=(
            "torchtitan Llama 3.1 8B, FSDP + torch.compile, per-op SAC, 8 H100 (500 W), 6,667 tokens/s/GPU",
        ),
        checked_on=("the same on 128 H100 over RDMA, 6,514 tokens/s/GPU",),
    ),
    # The run's B200s were held to 750 W of their 1,000 W (pytorch/ao d8bb51f's mx_formats README); A4 publishes
    # no power limit. The one uncapped run published (torchtitan PR #1196, eager) ran 1.31x faster per GPU, 1.51x its
    # eager forecast.
    "nvidia-b200": _B200_AT_750_W,
    # GB200 is the B200's die at full power: until a published run calibrates it, it runs at the uncapped B200's
    # share of peak (the 750 W efficiency x the 1.31 the uncapped run gained), against GB200's own published peak.
    "nvidia-gb200": Calibration(
        "GB200",
        round(_B200_AT_750_W.efficiency * UNCAPPED_B200_GAIN, 3),
        calibrated_on=(),
        assumed=f"the uncapped B200's share of peak, {_B200_AT_750_W.efficiency} x {UNCAPPED_B200_GAIN}, over 2.5 "
        "PFLOP/s dense bf16",
    ),
}

# The TPUs' efficiency counts the compiled step's matrix FLOPs over the chip's bf16 peak. Keys are TPU generations.
_V6E = Calibration(
    "v6e",
    0.52,
    calibrated_on=("tpu-recipes Llama 3.1 8B, v6e-256", "tpu-recipes Llama 3.1 70B, v6e-256"),
    checked_on=(
        "tpu-recipes Llama 3.1 8B, v6e-8",
        "tpu-recipes Llama 3.1 70B, v6e-32",
        "tpu-recipes Llama 3.1 8B, v6e-16",
        "tpu-recipes Llama 3.1 70B, v6e-64",
    ),
    instant_checked_on=(
        "tpu-recipes Llama 3.1 8B, v6e-32",
        "tpu-recipes Llama 3.1 8B, v6e-64",
        "tpu-recipes Llama 3.1 8B, v6e-128",
        "tpu-recipes Llama 3.1 70B, v6e-128",
        "tpu-recipes Mistral 7B, v6e-8",
        "tpu-recipes Mixtral 8x7B, v6e-256",
    ),
)

TPU_MXU_EFFICIENCY: dict[str, Calibration] = {
    "v6e": _V6E,
    # No published TPU7x MaxText run with its step time could be read offline: the chip's published bf16 peak at
    # v6e's MXU efficiency, until a run calibrates it (docs/cloud-facts.md: TPU7x).
    "tpu7x": Calibration("tpu7x", _V6E.efficiency, calibrated_on=(), assumed="v6e's MXU efficiency assumed"),
}


@dataclass(frozen=True)
class EagerFactor:
    """How much longer a step's compute takes without torch.compile, on any accelerator: the ratio of a published job's
    compiled and eager throughput, compute-bound both."""

    compute_factor: float
    calibrated_on: tuple[str, ...]
    checked_on: tuple[str, ...]

    @property
    def label(self) -> str:
        return (
            f"torchtitan eager vs compiled, {len(self.calibrated_on)} published pair, checked on {len(self.checked_on)}"
        )


# benchmarks/llama3_h100_202412_torchtitan.md in pytorch/torchtitan (commit 9dec370), Tables 1 and 3: Llama 3.1 8B,
# FSDP, per-op SAC, local batch 2, sequence 8192; tokens/s/GPU compiled and eager. The trainer compiles each decoder
# layer with inductor, as torchtitan does.
EAGER = EagerFactor(
    6667 / 5762,
    calibrated_on=("torchtitan Llama 3.1 8B, 8 H100: 6,667 tokens/s/GPU compiled, 5,762 eager",),
    checked_on=("the same on 128 H100: 6,514 compiled, 5,605 eager",),
)


class NoCalibration(LookupError):
    """No published run calibrates this accelerator: a forecast for it would be a guess."""


def gpu_calibration(accelerator: str) -> Calibration:
    return _lookup(GPU_COMPUTE_EFFICIENCY, accelerator)


def tpu_calibration(generation: str) -> Calibration:
    return _lookup(TPU_MXU_EFFICIENCY, generation)


def _lookup(table: dict[str, Calibration], accelerator: str) -> Calibration:
    if accelerator not in table:
        raise NoCalibration(
            f"no published run calibrates {accelerator} (calibrated: {', '.join(table)}; "
            "preflight/forecast/calibration.py)"
        )
    return table[accelerator]
