"""What every job's forecast reports alike, FSDP on GPUs (fsdp_jobs.py) or MaxText on TPUs
(maxtext_jobs.py): the step at its estimate and at best, throughput, MFU, and its price."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from components.facts import cost
from components.facts.capacity import Capacity
from preflight.forecast.calibration import Calibration


class Step(Protocol):
    """A forecast step (preflight/forecast/fsdp.py's Forecast, preflight/forecast/maxtext.py's TpuForecast)."""

    estimate_s: float

    @property
    def lower_bound_s(self) -> float: ...

    @property
    def bound(self) -> str: ...

    def mfu(self, seconds: float | None = None) -> float: ...


@dataclass(frozen=True)
class NoForecast:
    job: str
    reason: str
    cannot_run: bool = False  # the job does not fit its accelerators: the run fails
    undecided: bool = False  # the estimate cannot tell fit from no fit: the run fails until the fit check decides

    @property
    def label(self) -> str:
        return "DOES NOT FIT" if self.cannot_run else "TOO CLOSE TO CALL" if self.undecided else "no forecast"

    def lines(self) -> list[str]:
        return [f"{self.job}: {self.label}: {self.reason}"]

    def to_json(self) -> dict[str, Any]:
        return {"job": self.job, "none": self.reason, "cannotRun": self.cannot_run, "undecided": self.undecided}


@dataclass(frozen=True)
class PricedForecast:
    job: str
    model: str
    usd_per_hour: float  # every node the job runs on
    price_estimated: bool  # the price book's figure is an estimate, not a list price
    calibration: Calibration  # the accelerator's efficiency and the published runs it rests on

    @property
    def step(self) -> Step:
        raise NotImplementedError

    @property
    def cannot_run(self) -> bool:
        """The job does not fit its accelerators' memory: the run fails."""
        return False

    @property
    def undecided(self) -> bool:
        """A priced forecast rests on a compile or a model that decided: never undecided."""
        return False

    @property
    def usd_per_step(self) -> float:
        return self.usd_per_hour * self.step.estimate_s / 3600

    def throughput_line(self, unit: str, tokens_per_s: Callable[[float | None], float]) -> str:
        s = self.step
        return (
            f"  tokens/s/{unit}: {tokens_per_s(None):,.0f} (at best {tokens_per_s(s.lower_bound_s):,.0f}); "
            f"MFU {s.mfu():.1%} (at best {s.mfu(s.lower_bound_s):.1%})"
        )

    def calibration_note(self) -> str:
        return f"efficiency {self.calibration.efficiency:.3g} of peak ({self.calibration.label})"

    def cost_line(self, what_it_buys: str) -> str:
        about = "~" if self.price_estimated else ""
        return f"  cost: {about}${self.usd_per_step:.2f} per step at {about}${self.usd_per_hour:.2f}/h; {what_it_buys}"

    def summary_json(self) -> dict[str, Any]:
        s = self.step
        return {
            "job": self.job,
            "model": self.model,
            "bound": s.bound,
            "stepSeconds": round(s.estimate_s, 2),
            "stepSecondsAtBest": round(s.lower_bound_s, 2),
            "mfu": round(s.mfu(), 4),
            "usdPerStep": round(self.usd_per_step, 2),
            "usdPerHour": round(self.usd_per_hour, 2),
            "priceEstimated": self.price_estimated,
            "calibration": self.calibration.label,
            "efficiency": self.calibration.efficiency,
        }


def node_price(
    job: str, prices: cost.PriceBook, machine_type: str, region: str, capacity: Capacity
) -> tuple[float, cost.Price] | NoForecast:
    """(USD per node-hour, the price book's entry) for a job's nodes, or why the job cannot be priced."""
    try:
        return prices.node_hour(machine_type, region, capacity.price_column)
    except cost.PriceError as error:
        return NoForecast(job, f"{error}: nothing to price it by (components/facts/prices.yaml)")
