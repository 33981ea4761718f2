"""The forecast of each MaxText job of a stack, from its cached fit-check verdict (`make fit-check`).

The job's fit-check arguments come from the same entrypoint the stack gives its RayJob; the verdict is found
by the key `make fit-check` stored it under (tools/maxtext_fit/fit_cache.py). No verdict: no step forecast, but
the instant HBM estimate (preflight/forecast/maxtext_hbm.py) judges the job at once: clearly over the chip's usable
HBM, it cannot run (preflight fails, naming what to change); near it, only the fit check can tell; the compiled
verdict, once cached, overrides the estimate. The forecast is for the slices the fit check compiled (an elastic
job's fewest), at the price of their node pools.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.config.jobs import MaxTextJobConfig
from components.config.models import StackConfig
from components.facts import cost
from components.facts.maxtext_memory import USABLE_HBM_BYTES_PER_CHIP
from components.facts.topology import GIB
from components.jobs.ray_workloads import maxtext_entrypoint
from preflight.forecast.calibration import NoCalibration, tpu_calibration
from preflight.forecast.maxtext import TpuForecast, forecast
from preflight.forecast.maxtext_hbm import (
    DOES_NOT_FIT,
    TOO_CLOSE,
    HbmEstimate,
    NoEstimate,
    estimate_for_fit_argv,
    hbm_verdict,
)
from preflight.forecast.priced import NoForecast, PricedForecast, node_price
from tools.maxtext_fit.fit_cache import CACHE_DIR, cache_key, cached_verdict
from tools.maxtext_fit.fit_plan import fit_argv
from tools.maxtext_fit.hlo_cost import StepWork


@dataclass(frozen=True)
class MaxTextJobForecast(PricedForecast):
    slices: int
    target: str  # MaxText's name for one slice, e.g. v6e-16
    forecast: TpuForecast
    needed_bytes: float  # HBM per chip, as compiled
    estimated_bytes: float | None  # the instant estimate, where the model has one

    @property
    def step(self) -> TpuForecast:
        return self.forecast

    def lines(self) -> list[str]:
        f = self.forecast
        about = "~" if self.price_estimated else ""
        run_h = f.run_s() / 3600
        return [
            f"{self.job}: MaxText {self.model}, {self.slices} x {self.target} ({f.chips} chips), "
            + f"{f.work.tokens:,} tokens per chip and step (from make fit-check's compiled step)",
            f"  step: {f.estimate_s:.2f} s estimated, {f.lower_bound_s:.2f} s at best; {f.bound}-bound (matrix "
            + f"{f.compute_s:.2f} s at peak, HBM {f.memory_s:.2f} s, ICI {f.ici_s:.2f} s, DCN {f.dcn_s:.2f} s); "
            + self.calibration_note(),
            self.throughput_line("chip", f.tokens_per_s_per_chip),
            self.cost_line(f"{f.work.steps:,} steps take {run_h:.1f} h for {about}${self.usd_per_hour * run_h:,.0f}"),
            f"  HBM per chip: {self.needed_bytes / GIB:.1f} GiB compiled"
            + (f" (instant estimate {self.estimated_bytes / GIB:.1f} GiB)" if self.estimated_bytes else ""),
        ]

    def to_json(self) -> dict[str, Any]:
        f = self.forecast
        return {
            **self.summary_json(),
            "chips": f.chips,
            "tokensPerSecondPerChip": round(f.tokens_per_s_per_chip(), 1),
            "steps": f.work.steps,
            "usdPerRun": round(self.usd_per_hour * f.run_s() / 3600, 2),
            "hbmGibPerChip": round(self.needed_bytes / GIB, 1),
            "hbmGibPerChipEstimated": round(self.estimated_bytes / GIB, 1) if self.estimated_bytes else None,
        }


def fit_check_argv(config: StackConfig, job: MaxTextJobConfig) -> list[str]:
    """The fit check's arguments for the job, from the entrypoint the stack gives its RayJob."""
    return fit_argv(shlex.split(maxtext_entrypoint(job, config.slice_group(job.slices))), job.name)


def job_forecast(
    config: StackConfig, job: MaxTextJobConfig, prices: cost.PriceBook, root: Path
) -> MaxTextJobForecast | NoForecast:
    """The job's forecast from the fit check's cached verdict, or why there is none."""
    argv = fit_check_argv(config, job)
    verdict = cached_verdict(root / CACHE_DIR, cache_key(argv, root))
    if verdict is None:
        return instant_verdict(config, job, argv)
    if verdict.get("cost") is None or verdict.get("fits") is False:
        return NoForecast(job.name, unfit_reason(verdict), cannot_run=True)
    work = StepWork.from_json({**verdict["cost"], "steps": job.steps})
    group = config.slice_group(job.slices)
    tpu, slices = group.slice, int(verdict["slices"])
    try:
        calibration = tpu_calibration(tpu.generation.name)
    except NoCalibration as error:
        return NoForecast(job.name, str(error))
    priced = node_price(job.name, prices, tpu.machine_type, config.region, group.capacity)
    if isinstance(priced, NoForecast):
        return priced
    node_hour, price = priced
    return MaxTextJobForecast(
        job=job.name,
        model=job.model_name,
        usd_per_hour=node_hour * tpu.vms * slices,
        price_estimated=price.estimate,
        calibration=calibration,
        slices=slices,
        target=verdict["target"],
        forecast=forecast(work, tpu.generation, slices * tpu.chips, calibration.efficiency),
        needed_bytes=float(verdict["needed_bytes"]),
        estimated_bytes=_estimated_bytes(argv, USABLE_HBM_BYTES_PER_CHIP.get(tpu.generation.name)),
    )


def _estimated_bytes(argv: list[str], usable: float | None) -> float | None:
    try:
        return estimate_for_fit_argv(argv, usable).total
    except NoEstimate:
        return None


def instant_verdict(config: StackConfig, job: MaxTextJobConfig, argv: list[str]) -> NoForecast:
    """What the HBM estimate says of a job no fit check has compiled: it cannot run, it may not, or it should."""
    fit_check = f"`make fit-check STACK={config.stack}` compiles it"
    generation = config.slice_group(job.slices).slice.generation.name
    usable = USABLE_HBM_BYTES_PER_CHIP.get(generation)
    if usable is None:
        return NoForecast(job.name, f"no usable-HBM figure for {generation}: {fit_check}")
    try:
        held = estimate_for_fit_argv(argv, usable)
    except NoEstimate as error:
        return NoForecast(job.name, f"no fit-check result for this configuration yet ({error}): {fit_check}")
    figure = (
        f"~{held.judged / GIB:.1f} GiB of HBM per chip {judged_as(held)} ({held.parts()}) against {generation}'s "
        + (f"{usable / GIB:.1f}")
    )
    verdict = hbm_verdict(held, usable)
    if verdict == DOES_NOT_FIT:
        return NoForecast(job.name, f"{figure} usable, by the instant estimate: {what_to_change(config, job)}", True)
    if verdict == TOO_CLOSE:
        # Never pass what the compile may refuse: the run fails until the fit check's compile decides.
        return NoForecast(
            job.name, f"{figure} usable: too close to call without compiling; {fit_check}", undecided=True
        )
    return NoForecast(job.name, f"{figure} usable fits by the instant estimate; no step forecast until {fit_check}")


def judged_as(held: HbmEstimate) -> str:
    """What the judged figure is: the least the step runs in, or (outside the compiled shapes) the full step."""
    if held.calibrated:
        return f"at least ({held.full / GIB:.1f} with every layer's gathered weights held)"
    return (
        f"with every layer's gathered weights held (at least {held.need / GIB:.1f}, but no compiled step of this shape "
        "and size shows the compiler giving up prefetching)"
    )


def what_to_change(config: StackConfig, job: MaxTextJobConfig) -> str:
    index = config.jobs.maxtext.index(job)
    key = f"trainyard:jobs.maxtext[{index}]"
    return (
        f"lower {key}.perDeviceBatchSize ({job.per_device_batch_size:g}), keep fewer activations with "
        f"{key}.rematPolicy (full, or custom with offload), shard the weights over more chips ({key}.ici/dcn: fsdp "
        f"rather than data or tensor), or run on more slices; `make fit-check STACK={config.stack}` compiles it"
    )


def unfit_reason(verdict: dict[str, Any]) -> str:
    """Why the compiled job does not fit, in the fit check's figures."""
    needed, available = verdict.get("needed_bytes"), verdict.get("available_bytes") or 0
    if verdict.get("compiler_error") or needed is None:
        why = verdict.get("compiler_error") or "it did not compile"
    else:
        why = f"{needed / 2**30:.1f} GiB of HBM per chip needed, {available / 2**30:.1f} GiB usable"
    return f"{why} on {verdict.get('slices')} x {verdict.get('target')}: `make fit-check` says why"


def maxtext_forecasts(config: StackConfig, prices: cost.PriceBook, root: Path) -> list[MaxTextJobForecast | NoForecast]:
    return [job_forecast(config, job, prices, root) for job in config.jobs.enabled_maxtext]
