"""The forecast of each MaxText job of a stack: instant, from its architecture and mesh, or from its compiled step.

The job's fit-check arguments come from the same entrypoint the stack gives its RayJob. Without a cached fit-check
verdict (`make fit-check`), preflight judges the job at once: the instant HBM estimate (forecast/maxtext_hbm.py) says
whether it fits its chips (clearly over their usable HBM it cannot run: preflight fails, naming what to change;
near it, only the fit check can tell, and the run fails until it has), and a job that fits gets the instant step
forecast, its work counted from MaxText's model config and the mesh (preflight/forecast/maxtext_flops.py) at the
calibrated efficiency. The compiled verdict, once cached (found by the key `make fit-check` stored it under:
tools/maxtext_fit/fit_cache.py), overrides both: the forecast then rests on the compiled step. Either is for the slices
the fit check compiles (an elastic job's fewest), at the price of their node pools; the report says which it shows.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.config.jobs import MaxTextJobConfig
from components.config.models import StackConfig
from components.facts import cost
from components.facts.maxtext_memory import usable_hbm_bytes_per_chip
from components.facts.node_shapes import GIB
from components.jobs.ray_workloads import maxtext_entrypoint
from preflight.forecast.calibration import NoCalibration, tpu_calibration
from preflight.forecast.maxtext import TpuForecast, forecast
from preflight.forecast.maxtext_flops import instant_work_for_fit_argv, per_chip, states_floor_for_fit_argv
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

COMPILED, INSTANT = "compiled", "instant"
SOURCES = {COMPILED: "from make fit-check's compiled step", INSTANT: "instant, from the architecture and the mesh"}


@dataclass(frozen=True)
class MaxTextJobForecast(PricedForecast):
    slices: int
    target: str  # MaxText's name for one slice, e.g. v6e-16
    forecast: TpuForecast
    needed_bytes: float | None  # HBM per chip, as compiled (None: instant)
    estimated: HbmEstimate | None  # the instant estimate, where the model has one
    source: str = COMPILED  # COMPILED or INSTANT: what the step figures rest on
    refine: str = ""  # the command that compiles the job, for an instant forecast

    @property
    def step(self) -> TpuForecast:
        return self.forecast

    @property
    def undecided(self) -> bool:
        """An instant forecast of a model the HBM estimate cannot size: the run fails until the fit check decides."""
        return self.source == INSTANT and self.estimated is None

    def lines(self) -> list[str]:
        f = self.forecast
        about = "~" if self.price_estimated else ""
        run_h = f.run_s() / 3600
        return [
            f"{self.job}: MaxText {self.model}, {self.slices} x {self.target} ({f.chips} chips), "
            + f"{f.work.tokens:,} tokens per chip and step ({SOURCES[self.source]})",
            f"  step: {f.estimate_s:.2f} s estimated, {f.lower_bound_s:.2f} s at best; {f.bound}-bound (matrix "
            + f"{f.compute_s:.2f} s at peak, {self.memory_term()}ICI {f.ici_s:.2f} s, DCN {f.dcn_s:.2f} s); "
            + self.calibration_note(),
            self.throughput_line("chip", f.tokens_per_s_per_chip),
            self.cost_line(f"{f.work.steps:,} steps take {run_h:.1f} h for {about}${self.usd_per_hour * run_h:,.0f}"),
            self.hbm_line(),
        ]

    def calibration_note(self) -> str:
        more = len(self.calibration.instant_checked_on) if self.source == INSTANT else 0
        return super().calibration_note() + (
            f"; the instant count checked on {more} more published runs" if more else ""
        )

    def memory_term(self) -> str:
        return "" if self.source == INSTANT else f"HBM {self.forecast.memory_s:.2f} s, "

    def hbm_line(self) -> str:
        held = self.estimated
        if self.needed_bytes is not None:
            return f"  HBM per chip: {self.needed_bytes / GIB:.1f} GiB compiled" + (
                f" (instant estimate {held.total / GIB:.1f} GiB)" if held else ""
            )
        if held is None:
            return (
                f"  HBM per chip: TOO CLOSE TO CALL: no instant estimate for {self.model} (dense Llama family only); "
                f"the run fails until {self.refine} compiles the job"
            )
        return (
            f"  HBM per chip: ~{held.judged / GIB:.1f} GiB by the instant estimate, fits; {self.refine} compiles the "
            "job: the compiled figures replace these"
        )

    def to_json(self) -> dict[str, Any]:
        f = self.forecast
        held = self.estimated
        return {
            **self.summary_json(),
            "source": self.source,
            "undecided": self.undecided,
            "chips": f.chips,
            "tokensPerSecondPerChip": round(f.tokens_per_s_per_chip(), 1),
            "steps": f.work.steps,
            "usdPerRun": round(self.usd_per_hour * f.run_s() / 3600, 2),
            "hbmGibPerChip": round(self.needed_bytes / GIB, 1) if self.needed_bytes is not None else None,
            "hbmGibPerChipEstimated": round(held.total / GIB, 1) if held else None,
        }


def fit_check_argv(config: StackConfig, job: MaxTextJobConfig) -> list[str]:
    """The fit check's arguments for the job, from the entrypoint the stack gives its RayJob."""
    return fit_argv(shlex.split(maxtext_entrypoint(job, config.slice_group(job.slices))), job.name)


def job_forecast(
    config: StackConfig, job: MaxTextJobConfig, prices: cost.PriceBook, root: Path
) -> MaxTextJobForecast | NoForecast:
    """The job's forecast from the fit check's cached verdict, else the instant one, or why there is none."""
    argv = fit_check_argv(config, job)
    verdict = cached_verdict(root / CACHE_DIR, cache_key(argv, root))
    if verdict is None:
        return instant_forecast(config, job, argv, prices)
    generation = config.slice_group(job.slices).slice.generation
    # The fit check compiles one device's program (TPU7x: two devices a chip); the forecast is per chip.
    if verdict.get("cost") is None or verdict.get("fits") is False:
        return NoForecast(job.name, unfit_reason(verdict, generation.devices_per_chip), cannot_run=True)
    work = StepWork.from_json({**verdict["cost"], "steps": job.steps})
    usable = usable_hbm_bytes_per_chip(generation.name)
    slices = (int(verdict["slices"]), verdict["target"])
    needed = float(verdict["needed_bytes"]) * generation.devices_per_chip
    return priced_forecast(config, job, prices, work, slices, needed, _estimate(argv, usable))


def priced_forecast(
    config: StackConfig,
    job: MaxTextJobConfig,
    prices: cost.PriceBook,
    work: StepWork,
    slices: tuple[int, str],  # how many, and MaxText's name for one (as the fit check compiled them)
    needed_bytes: float | None,
    estimated: HbmEstimate | None,
) -> MaxTextJobForecast | NoForecast:
    """The step's work (a device's, compiled or counted) on the job's slices at its generation's calibrated efficiency,
    per chip, priced."""
    group = config.slice_group(job.slices)
    tpu = group.slice
    count, target = slices
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
        usd_per_hour=node_hour * tpu.vms * count,
        price_estimated=price.estimate,
        calibration=calibration,
        slices=count,
        target=target,
        forecast=forecast(
            per_chip(work, tpu.generation.devices_per_chip), tpu.generation, count * tpu.chips, calibration.efficiency
        ),
        needed_bytes=needed_bytes,
        estimated=estimated,
        source=COMPILED if needed_bytes is not None else INSTANT,
        refine=f"`make fit-check STACK={config.stack}`",
    )


def _estimate(argv: list[str], usable: float | None) -> HbmEstimate | None:
    try:
        return estimate_for_fit_argv(argv, usable)
    except NoEstimate:
        return None


def instant_forecast(
    config: StackConfig, job: MaxTextJobConfig, argv: list[str], prices: cost.PriceBook
) -> MaxTextJobForecast | NoForecast:
    """A job no fit check has compiled: what the HBM estimate says of it (it cannot run, it may not, or it should),
    and where it may run, its step counted from its architecture and mesh."""
    fit_check = f"`make fit-check STACK={config.stack}` compiles it"
    tpu = config.slice_group(job.slices).slice
    generation = tpu.generation.name
    usable = usable_hbm_bytes_per_chip(generation)
    held = _estimate(argv, usable)
    if held is not None:
        refused = hbm_refusal(config, job, held, usable, generation)
    else:
        refused = states_refusal(config, job, argv, usable, generation)
    if refused is not None:
        return refused
    try:
        work, slices = instant_work_for_fit_argv(argv, job.steps)
    except NoEstimate as error:
        # Neither sized nor counted: where the HBM estimate could not judge it either, the run waits for the compile.
        reason = f"no instant forecast for this configuration ({error}): {fit_check}"
        return NoForecast(job.name, reason, undecided=held is None)
    return priced_forecast(config, job, prices, work, (slices, tpu.pod_type), None, held)


def hbm_refusal(
    config: StackConfig, job: MaxTextJobConfig, held: HbmEstimate, usable: float, generation: str
) -> NoForecast | None:
    """Why the job cannot run, or must wait for the fit check, by the instant HBM estimate; None where it fits."""
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
            job.name,
            f"{figure} usable: too close to call without compiling; `make fit-check STACK={config.stack}` compiles it",
            undecided=True,
        )
    return None


def states_refusal(
    config: StackConfig, job: MaxTextJobConfig, argv: list[str], usable: float, generation: str
) -> NoForecast | None:
    """A job the HBM estimate does not size (a mixture of experts, say) that cannot run even so: its weights and
    AdamW state alone, counted from its architecture, exceed the chip's usable HBM. None where they do not (the
    compile decides) or cannot be counted."""
    try:
        floor = states_floor_for_fit_argv(argv)
    except NoEstimate:
        return None
    if floor <= usable:
        return None
    key = f"trainyard:jobs.maxtext[{config.jobs.maxtext.index(job)}]"
    return NoForecast(
        job.name,
        f"~{floor / GIB:.1f} GiB of HBM per chip for its weights and AdamW state alone (before gradients, activations "
        f"and gathered weights) against {generation}'s {usable / GIB:.1f} usable, by the instant count: shard them "
        f"over more chips ({key}.ici/dcn: fsdp rather than data, so that slices stop holding a copy each), run on a "
        f"larger slice group, or keep the optimizer state in host memory ({key}.extraArgs: "
        "optimizer_memory_host_offload: true, which the compile then judges)",
        True,
    )


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


def unfit_reason(verdict: dict[str, Any], devices_per_chip: int = 1) -> str:
    """Why the compiled job does not fit, in the fit check's figures (a device's) per chip."""
    needed, available = verdict.get("needed_bytes"), (verdict.get("available_bytes") or 0) * devices_per_chip
    if verdict.get("compiler_error") or needed is None:
        why = verdict.get("compiler_error") or "it did not compile"
    else:
        needed *= devices_per_chip
        why = f"{needed / 2**30:.1f} GiB of HBM per chip needed, {available / 2**30:.1f} GiB usable"
    return f"{why} on {verdict.get('slices')} x {verdict.get('target')}: `make fit-check` says why"


def maxtext_forecasts(config: StackConfig, prices: cost.PriceBook, root: Path) -> list[MaxTextJobForecast | NoForecast]:
    return [job_forecast(config, job, prices, root) for job in config.jobs.enabled_maxtext]
