"""Hourly cost of a planned stack: each node pool at its minimum and maximum scale, and the total.

Reads engine-shaped resources (``{"type", "name", "urn", "inputs"}`` with camelCase inputs, as preflight's
plan holds them) and the price book in ``prices.yaml``. No Pulumi imports: the policy pack and preflight
both use it. A pool whose price or size cannot be known is listed as unpriced with the reason, never
silently counted as free.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components.facts import gke, topology
from components.facts.capacity import node_pool_capacity

PRICES_PATH = Path(__file__).with_name("prices.yaml")
HOURS_PER_MONTH = 730
# The resource types estimate() reads: every other resource costs it nothing.
PRICED_TYPES = frozenset({gke.CLUSTER_TYPE, gke.NODE_POOL_TYPE})
# A regional pool without nodeLocations gets the cluster's zones; GKE's default for a regional cluster is 3.
DEFAULT_ZONES_PER_REGION = 3


class PriceError(LookupError):
    """No price for a machine type, region or capacity mode."""


@dataclass(frozen=True)
class Price:
    usd_per_hour: float
    source: str
    date: str
    estimate: bool
    note: str = ""


@dataclass(frozen=True)
class PriceBook:
    """Prices per VM-hour (machines) or per chip-hour (TPU generations), by region and capacity mode."""

    machines: Mapping[str, Mapping[str, Mapping[str, Price]]]
    tpu_chips: Mapping[str, Mapping[str, Mapping[str, Price]]]
    cluster_fee: Price

    def node_hour(self, machine_type: str, region: str, mode: str) -> tuple[float, Price]:
        """$ per node-hour of a machine type, and the price entry it came from."""
        tpu = topology.tpu_generation_of_machine(machine_type)
        if tpu is not None:
            chips = tpu.chips_per_machine_type[machine_type]
            price = _pick(self.tpu_chips, f"tpu-{tpu.name}", region, mode)
            return price.usd_per_hour * chips, price
        price = _pick(self.machines, machine_type, region, mode)
        return price.usd_per_hour, price


def _pick(table: Mapping[str, Mapping[str, Mapping[str, Price]]], key: str, region: str, mode: str) -> Price:
    regions = table.get(key)
    if regions is None:
        raise PriceError(f"no price for {key!r} (priced: {', '.join(sorted(table))})")
    modes = regions.get(region)
    if modes is None:
        raise PriceError(f"no price for {key!r} in {region!r} (priced regions: {', '.join(sorted(regions))})")
    price = modes.get(mode)
    if price is None:
        raise PriceError(f"no {mode} price for {key!r} in {region!r} (priced modes: {', '.join(sorted(modes))})")
    return price


def load_prices(path: Path = PRICES_PATH) -> PriceBook:
    raw = yaml.safe_load(path.read_text())

    def table(section: Mapping[str, Any]) -> dict[str, dict[str, dict[str, Price]]]:
        return {
            key: {
                region: {mode: _price(entry) for mode, entry in modes.items()}
                for region, modes in by_region["regions"].items()
            }
            for key, by_region in section.items()
        }

    return PriceBook(
        machines=table(raw["machines"]),
        tpu_chips=table(raw["tpu_chips"]),
        cluster_fee=_price(raw["cluster_management_fee"]),
    )


def _price(entry: Mapping[str, Any]) -> Price:
    return Price(
        usd_per_hour=float(entry["usd_per_hour"]),
        source=str(entry["source"]),
        date=str(entry["date"]),
        estimate=bool(entry.get("estimate", False)),
        note=str(entry.get("note", "")),
    )


# ---- reading a node pool's inputs ---------------------------------------------------------------


def _get(inputs: Any, path: str) -> Any:
    current = inputs
    for key in path.split("."):
        if not isinstance(current, Mapping) or key not in current:
            return None
        current = current[key]
    return current


def _count(value: Any) -> int | None:
    """A node count from an engine number; None when missing or not (yet) known."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def region_of(location: str) -> str:
    """``us-east5-b`` -> ``us-east5``; a region stays itself."""
    parts = location.split("-")
    return "-".join(parts[:2]) if len(parts) >= 3 else location


def capacity_mode(inputs: Mapping[str, Any]) -> str:
    """The price column the pool's VMs are billed at: flex-start (DWS), spot (or legacy preemptible), on-demand."""
    return node_pool_capacity(inputs).price_column


@dataclass(frozen=True)
class PoolSize:
    """Total nodes of a pool at its minimum and maximum scale (None when not known)."""

    min_nodes: int | None
    max_nodes: int | None
    autoscaled: bool
    zones: int
    zones_assumed: bool


def zones_of(inputs: Mapping[str, Any]) -> tuple[int, bool]:
    """How many zones the pool spans, and whether that number is GKE's default rather than stated."""
    node_locations = _get(inputs, "nodeLocations")
    if isinstance(node_locations, (list, tuple)) and node_locations:
        return len(node_locations), False
    location = _get(inputs, "location")
    if isinstance(location, str) and region_of(location) != location:
        return 1, False
    return DEFAULT_ZONES_PER_REGION, True


def pool_size(inputs: Mapping[str, Any]) -> PoolSize:
    """minNodeCount/maxNodeCount/nodeCount are per zone; totalMin/totalMaxNodeCount are pool-wide."""
    zones, assumed = zones_of(inputs)
    autoscaling = _get(inputs, "autoscaling")
    if autoscaling is not None and not isinstance(autoscaling, Mapping):
        return PoolSize(None, None, True, zones, assumed)  # not known until the update (preview)
    if isinstance(autoscaling, Mapping):
        total_min = _count(autoscaling.get("totalMinNodeCount"))
        total_max = _count(autoscaling.get("totalMaxNodeCount"))
        per_zone_min = _count(autoscaling.get("minNodeCount"))
        per_zone_max = _count(autoscaling.get("maxNodeCount"))
        minimum = total_min if total_min is not None else (per_zone_min or 0) * zones
        maximum = total_max if total_max is not None else (None if per_zone_max is None else per_zone_max * zones)
        return PoolSize(minimum, maximum, True, zones, assumed)
    per_zone = _count(_get(inputs, "nodeCount"))
    if per_zone is None:
        per_zone = _count(_get(inputs, "initialNodeCount"))
    total = None if per_zone is None else per_zone * zones
    return PoolSize(total, total, False, zones, assumed)


# ---- the estimate -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolCost:
    name: str
    urn: str
    machine_type: str
    region: str
    capacity: str
    min_nodes: int
    max_nodes: int
    usd_per_node_hour: float
    estimate: bool
    note: str = ""

    @property
    def min_usd_per_hour(self) -> float:
        return self.min_nodes * self.usd_per_node_hour

    @property
    def max_usd_per_hour(self) -> float:
        return self.max_nodes * self.usd_per_node_hour


@dataclass(frozen=True)
class Unpriced:
    name: str
    urn: str
    reason: str


@dataclass(frozen=True)
class StackCost:
    pools: tuple[PoolCost, ...]
    clusters: int
    cluster_fee_usd_per_hour: float
    unpriced: tuple[Unpriced, ...] = field(default_factory=tuple)

    @property
    def fixed_usd_per_hour(self) -> float:
        return self.clusters * self.cluster_fee_usd_per_hour

    @property
    def range_text(self) -> str:
        """`$min–$max/h`, or that the cost is not known where a pool has no price (never a partial total)."""
        if self.unpriced:
            return f"cost unknown ({len(self.unpriced)} pools unpriced)"
        return f"${self.min_usd_per_hour:,.2f}–${self.max_usd_per_hour:,.2f}/h"

    @property
    def min_usd_per_hour(self) -> float:
        return self.fixed_usd_per_hour + sum(pool.min_usd_per_hour for pool in self.pools)

    @property
    def max_usd_per_hour(self) -> float:
        return self.fixed_usd_per_hour + sum(pool.max_usd_per_hour for pool in self.pools)

    def to_json(self) -> dict[str, Any]:
        """camelCase, like the rest of preflight's plan JSON."""
        return _camel_keys(
            {
                "currency": "USD",
                "pools": [
                    asdict(pool)
                    | {
                        "min_usd_per_hour": round(pool.min_usd_per_hour, 4),
                        "max_usd_per_hour": round(pool.max_usd_per_hour, 4),
                    }
                    for pool in self.pools
                ],
                "clusters": self.clusters,
                "cluster_fee_usd_per_hour": self.cluster_fee_usd_per_hour,
                "min_usd_per_hour": round(self.min_usd_per_hour, 4),
                "max_usd_per_hour": round(self.max_usd_per_hour, 4),
                "min_usd_per_month": round(self.min_usd_per_hour * HOURS_PER_MONTH, 2),
                "unpriced": [asdict(item) for item in self.unpriced],
            }
        )


def _camel_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key): _camel_keys(item) for key, item in value.items()
        }
    if isinstance(value, list):
        return [_camel_keys(item) for item in value]
    return value


def _pool_name(resource: Mapping[str, Any]) -> str:
    name = _get(resource.get("inputs") or {}, "name")
    return name if isinstance(name, str) else str(resource.get("name", "?"))


def price_pool(resource: Mapping[str, Any], prices: PriceBook) -> PoolCost | Unpriced:
    inputs = resource.get("inputs") or {}
    name, urn = _pool_name(resource), str(resource.get("urn", ""))
    machine_type = _get(inputs, "nodeConfig.machineType")
    location = _get(inputs, "location")
    if not isinstance(machine_type, str):
        return Unpriced(name, urn, "nodeConfig.machineType is not set or not known yet")
    if not isinstance(location, str):
        return Unpriced(name, urn, "location is not set or not known yet")
    size = pool_size(inputs)
    if size.min_nodes is None or size.max_nodes is None:
        return Unpriced(name, urn, "node counts are not set or not known yet")
    region, mode = region_of(location), capacity_mode(inputs)
    try:
        per_node, price = prices.node_hour(machine_type, region, mode)
    except PriceError as error:
        return Unpriced(name, urn, str(error))
    note = f"zones assumed {size.zones} (no nodeLocations)" if size.zones_assumed else ""
    return PoolCost(
        name, urn, machine_type, region, mode, size.min_nodes, size.max_nodes, per_node, price.estimate, note
    )


def estimate(resources: Iterable[Mapping[str, Any]], prices: PriceBook | None = None) -> StackCost:
    """The stack's node pools priced at minimum and maximum scale, plus each cluster's management fee."""
    prices = prices or load_prices()
    pools: list[PoolCost] = []
    unpriced: list[Unpriced] = []
    clusters = 0
    for resource in resources:
        if resource.get("type") == gke.CLUSTER_TYPE:
            clusters += 1
        elif resource.get("type") == gke.NODE_POOL_TYPE:
            priced = price_pool(resource, prices)
            (pools if isinstance(priced, PoolCost) else unpriced).append(priced)  # type: ignore[arg-type]
    return StackCost(tuple(pools), clusters, prices.cluster_fee.usd_per_hour, tuple(unpriced))


def render_table(cost: StackCost) -> str:
    """A plain-text table: one line per pool, then the fixed fees and the totals."""
    header = (
        f"{'pool':<24} {'machine':<18} {'region':<14} {'capacity':<11} {'nodes':>7} {'$/h min':>10} {'$/h max':>10}"
    )
    lines = [header, "-" * len(header)]
    for pool in cost.pools:
        marker = "~" if pool.estimate else ""
        lines.append(
            f"{pool.name:<24} {pool.machine_type:<18} {pool.region:<14} {pool.capacity:<11} "
            f"{pool.min_nodes:>3}-{pool.max_nodes:<3} {marker + format(pool.min_usd_per_hour, ',.2f'):>10} "
            f"{marker + format(pool.max_usd_per_hour, ',.2f'):>10}"
        )
    if cost.clusters:
        fee = cost.fixed_usd_per_hour
        lines.append(
            f"{'GKE cluster fee':<24} {'':<18} {'':<14} {'':<11} {cost.clusters:>7} {fee:>10,.2f} {fee:>10,.2f}"
        )
    lines.append("-" * len(header))
    if cost.unpriced:  # a total without them would read as the stack's price: say it is not known instead
        lines.append(f"{'total':<78} {'unpriced':>10} {'unpriced':>10}")
        lines.append(
            f"priced pools only: ${cost.min_usd_per_hour:,.2f}-${cost.max_usd_per_hour:,.2f}/h; "
            f"{len(cost.unpriced)} more unpriced:"
        )
    else:
        lines.append(f"{'total':<78} {cost.min_usd_per_hour:>10,.2f} {cost.max_usd_per_hour:>10,.2f}")
    for item in cost.unpriced:
        lines.append(f"unpriced: {item.name}: {item.reason}")
    if any(pool.estimate for pool in cost.pools):
        lines.append("~ price is an estimate (see components/facts/prices.yaml)")
    return "\n".join(lines)
