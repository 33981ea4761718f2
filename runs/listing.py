"""`trainyard job list`: every training job in the namespace, the stack's and submitted ones, one row each, with
what it has cost so far at its flavor's list price (the stack's price book: components/facts/prices.yaml)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from components.config.models import StackConfig
from components.facts import cost, topology
from runs import objects as o
from runs.jobs import State, TrainingJob

COLUMNS = ("NAME", "KIND", "STATE", "FLAVOR", "ACCEL", "AGE", "COST", "FROM")


@dataclass(frozen=True)
class Row:
    name: str
    kind: str
    state: str
    flavor: str
    accelerators: str
    age: str
    cost: str
    source: str  # "stack" or "submitted"

    def cells(self) -> tuple[str, ...]:
        return (self.name, self.kind, self.state, self.flavor, self.accelerators, self.age, self.cost, self.source)


def usd_per_accelerator_hour(config: StackConfig) -> dict[str, float]:
    """Flavor (a slice group's or GPU pool's name) -> $ per chip- or GPU-hour at its capacity mode's price."""
    prices = cost.load_prices()
    found: dict[str, float] = {}
    for group in config.tpu_slices:
        try:
            machine, per_vm = group.slice.machine_type, group.slice.chips_per_vm
            found[group.name] = prices.node_hour(machine, config.region, group.capacity.price_column)[0] / per_vm
        except (topology.TopologyError, KeyError, ValueError):
            continue  # unpriced: the cost column says "?"
    for pool in config.gpu_pools:
        try:
            node_hour = prices.node_hour(pool.machine_type, config.region, pool.capacity.price_column)[0]
            found[pool.name] = node_hour / pool.machine.gpus_per_vm
        except (topology.TopologyError, KeyError, ValueError):
            continue
    return found


def rows(
    jobs: Sequence[TrainingJob],
    now: datetime,
    positions: Mapping[str, int] | None = None,
    prices: Mapping[str, float] | None = None,
) -> list[Row]:
    listed = []
    for job in sorted(jobs, key=lambda j: o.created(j.job) or now, reverse=True):
        flavors = job.accelerator_flavors
        listed.append(
            Row(
                job.name,
                job.kind,
                _state_text(job, positions or {}),
                ", ".join(dict.fromkeys(flavors)) or "-",
                job.accelerator_text,
                o.age(o.created(job.job), now),
                _cost_so_far(job, now, job.accelerators[1], flavors, prices or {}),
                "submitted" if job.submitted else "stack",
            )
        )
    return listed


def table(listed: Sequence[Row]) -> str:
    cells = [COLUMNS, *(row.cells() for row in listed)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def _state_text(job: TrainingJob, positions: Mapping[str, int]) -> str:
    state = job.state
    if state is State.PENDING and job.workload is not None and o.name(job.workload) in positions:
        return f"pending (#{positions[o.name(job.workload)] + 1})"
    if state is State.EVICTED and job.requeues:
        return f"evicted ({job.requeues}x)"
    return str(state)


def _cost_so_far(job: TrainingJob, now: datetime, count: int, flavors: list[str], prices: Mapping[str, float]) -> str:
    """Accelerators x hours since admission x the flavor's price: what the nodes cost while the job held them."""
    started = job.started()
    if started is None or not count or not flavors:
        return "$0" if job.state in (State.PENDING, State.PROVISIONING, State.NOT_QUEUED) else "-"
    price = prices.get(flavors[0])
    if price is None:
        return "?"
    finished = job.conditions.get("Finished")
    until = finished.since if finished and finished.true and finished.since else now
    hours = max((until - started).total_seconds(), 0) / 3600
    return f"${count * price * hours:,.2f}"
