"""Step time, tokens/s and MFU of a MaxText job on TPU slices, from what its compiled step does per chip.

The fit check (tools/maxtext_fit/fit.py) compiles the job's real train step for its topology and reads,
per chip and step: matrix FLOPs as compiled (rematerialized forward passes included), HBM traffic, bytes
sent over ICI and over DCN (tools/maxtext_fit/hlo_cost.py), and MaxText's own model FLOPs. This module
turns them into time with the chip's facts (components/facts/topology.py):

- the lower bound: every resource busy at its full rate and all of them overlapped, so the step takes
  as long as its busiest resource: max(matrix FLOPs / peak, HBM bytes / HBM bandwidth, ICI bytes / ICI
  bandwidth, DCN bytes / DCN bandwidth). No run can beat it.
- the estimate: the compiled matrix work at the generation's MXU efficiency (preflight/forecast/calibration.py),
  calibrated on the published MaxText runs (benchmarks/maxtext_forecast.py, benchmarks/README.md), or the
  busiest link if that takes longer.

MFU divides MaxText's model FLOPs (what its step log's TFLOP/s/device counts), not the compiled ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.facts.topology import TpuGeneration
from tools.maxtext_fit.hlo_cost import StepWork


@dataclass(frozen=True)
class TpuForecast:
    work: StepWork
    chips: int
    peak_flops: float
    compute_s: float  # matrix FLOPs at peak
    memory_s: float
    ici_s: float
    dcn_s: float
    estimate_s: float

    @property
    def lower_bound_s(self) -> float:
        return max(self.compute_s, self.memory_s, self.ici_s, self.dcn_s)

    @property
    def bound(self) -> str:
        """The resource the lower bound waits on."""
        times = {"compute": self.compute_s, "HBM": self.memory_s, "ICI": self.ici_s, "DCN": self.dcn_s}
        return max(times, key=times.__getitem__)

    def tokens_per_s_per_chip(self, seconds: float | None = None) -> float:
        return self.work.tokens / (seconds or self.estimate_s)

    def mfu(self, seconds: float | None = None) -> float:
        return self.work.model_flops / (seconds or self.estimate_s) / self.peak_flops

    def run_s(self) -> float:
        return self.estimate_s * self.work.steps


def forecast(work: StepWork, generation: TpuGeneration, chips: int, efficiency: float) -> TpuForecast:
    """The step with its compiled matrix work at `efficiency` of peak (the generation's calibration)."""
    compute_s = work.matmul_flops / generation.peak_bf16_flops_per_chip
    memory_s = work.hbm_bytes / generation.hbm_bytes_per_s_per_chip
    ici_s = work.ici_bytes / generation.ici_bytes_per_s_per_chip
    dcn_s = work.dcn_bytes / generation.dcn_bytes_per_s_per_chip
    estimate_s = max(compute_s / efficiency, memory_s, ici_s, dcn_s)
    return TpuForecast(work, chips, generation.peak_bf16_flops_per_chip, compute_s, memory_s, ici_s, dcn_s, estimate_s)
