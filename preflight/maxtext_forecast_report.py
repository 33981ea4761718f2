"""The forecast of each MaxText job of a stack, from its cached fit-check verdict (`make fit-check`).

The job's fit-check arguments come from the same entrypoint the stack gives its RayJob; the verdict is found
by the key `make fit-check` stored it under (workloads/maxtext/fit_cache.py). No verdict: no forecast, and
the reason says how to get one. The forecast is for the slices the fit check compiled (an elastic job's
fewest), at the price of their node pools.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.config.jobs import MaxTextJobConfig
from components.config.models import StackConfig, TpuSliceConfig
from components.facts import cost
from components.jobs.ray_workloads import maxtext_entrypoint
from preflight.tpu_forecast import TpuForecast, forecast
from workloads.maxtext.fit_cache import CACHE_DIR, cache_key, cached_verdict
from workloads.maxtext.fit_plan import fit_argv
from workloads.maxtext.hlo_cost import StepWork


@dataclass(frozen=True)
class MaxTextJobForecast:
    job: str
    model: str
    slices: int
    target: str  # MaxText's name for one slice, e.g. v6e-16
    forecast: TpuForecast
    usd_per_hour: float  # the compiled slices' node pools
    price_estimated: bool

    @property
    def usd_per_step(self) -> float:
        return self.usd_per_hour * self.forecast.estimate_s / 3600

    def lines(self) -> list[str]:
        f = self.forecast
        about = "~" if self.price_estimated else ""
        run_h = f.run_s() / 3600
        best_tokens = f.tokens_per_s_per_chip(f.lower_bound_s)
        return [
            f"{self.job}: MaxText {self.model}, {self.slices} x {self.target} ({f.chips} chips), "
            + f"{f.work.tokens:,} tokens per chip and step (from make fit-check's compiled step)",
            f"  step: {f.estimate_s:.2f} s estimated, {f.lower_bound_s:.2f} s at best; {f.bound}-bound (matrix "
            + f"{f.compute_s:.2f} s at peak, HBM {f.memory_s:.2f} s, ICI {f.ici_s:.2f} s, DCN {f.dcn_s:.2f} s)",
            f"  tokens/s/chip: {f.tokens_per_s_per_chip():,.0f} (at best {best_tokens:,.0f}); "
            + f"MFU {f.mfu():.1%} (at best {f.mfu(f.lower_bound_s):.1%})",
            f"  cost: {about}${self.usd_per_step:.2f} per step at {about}${self.usd_per_hour:.2f}/h; "
            + f"{f.work.steps:,} steps take {run_h:.1f} h for {about}${self.usd_per_hour * run_h:,.0f}",
        ]

    def to_json(self) -> dict[str, Any]:
        f = self.forecast
        return {
            "job": self.job,
            "model": self.model,
            "chips": f.chips,
            "bound": f.bound,
            "stepSeconds": round(f.estimate_s, 2),
            "stepSecondsAtBest": round(f.lower_bound_s, 2),
            "tokensPerSecondPerChip": round(f.tokens_per_s_per_chip(), 1),
            "mfu": round(f.mfu(), 4),
            "usdPerStep": round(self.usd_per_step, 2),
            "usdPerHour": round(self.usd_per_hour, 2),
            "priceEstimated": self.price_estimated,
            "steps": f.work.steps,
            "usdPerRun": round(self.usd_per_hour * f.run_s() / 3600, 2),
        }


def job_forecast(
    config: StackConfig, job: MaxTextJobConfig, prices: cost.PriceBook, root: Path
) -> MaxTextJobForecast | str:
    """The job's forecast, or why there is none."""
    group = _slice_group(config, job)
    argv = fit_argv(shlex.split(maxtext_entrypoint(job, group)), job.name)
    verdict = cached_verdict(root / CACHE_DIR, cache_key(argv, root))
    if verdict is None:
        return "no fit-check result for this configuration yet: `make fit-check STACK=<stack>` compiles it"
    if verdict.get("cost") is None:
        return f"it does not fit its slices ({verdict.get('compiler_error') or 'HBM'}): make fit-check says why"
    work = StepWork.from_json({**verdict["cost"], "steps": job.steps})
    tpu = group.slice
    slices = int(verdict["slices"])
    node_hour, price = prices.node_hour(tpu.machine_type, config.region, cost.PRICE_COLUMN[group.capacity])
    return MaxTextJobForecast(
        job.name, job.model_name, slices, verdict["target"], forecast(work, tpu.generation, slices * tpu.chips),
        node_hour * tpu.vms * slices, price.estimate,
    )  # fmt: skip


def maxtext_forecasts(
    config: StackConfig, prices: cost.PriceBook, root: Path
) -> list[tuple[str, MaxTextJobForecast | str]]:
    """(job name, forecast or why none) for each enabled MaxText job."""
    return [(job.name, job_forecast(config, job, prices, root)) for job in config.jobs.enabled_maxtext]


def _slice_group(config: StackConfig, job: MaxTextJobConfig) -> TpuSliceConfig:
    return next(group for group in config.tpu_slices if group.name == job.slices)
