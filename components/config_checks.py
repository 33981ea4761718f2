"""Checks and messages for the stack config: what pydantic says, reworded, and the cross-field rules."""

from __future__ import annotations

import json
import math
import re
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from ipaddress import IPv4Network
from itertools import combinations
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from components import jobs_config, topology

if TYPE_CHECKING:
    from components.config import StackConfig

MIN_KUBERNETES = (1, 34)  # resource.k8s.io/v1 (DRANET claims) and GKE managed DRANET
PODS_PER_NODE_RANGE = 256  # GKE gives each node a /24 of the pod range at the default 110 pods per node

# Extra words for values people are known to try.
HINTS = {
    ("capacity", "dwsQueued", "tpuSlices"): (
        "GKE rejects TPU flex-start pools with queued provisioning (AI-Hypercomputer/xpk PR #900); "
        "use flexStart, which still queues for capacity"
    ),
}


@dataclass(frozen=True)
class ConfigProblem:
    path: str
    value: Any
    message: str

    def __str__(self) -> str:
        if self.value is _UNSET:
            return f"{self.path}: {self.message}"
        return f"{self.path}: {_show(self.value)} {self.message}"


_UNSET = object()


def _show(value: Any) -> str:
    if isinstance(value, IPv4Network):
        value = str(value)
    try:
        return json.dumps(value)
    except TypeError:
        return repr(value)


def _path(loc: tuple[int | str, ...]) -> str:
    text = str(loc[0])
    for part in loc[1:]:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _model_at(root: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model class that holds the last key of `loc` (to list its allowed keys)."""
    model: Any = root
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = next(
            (f for name, f in model.model_fields.items() if part in (name, f.alias)), None
        )
        if field is None:
            return None
        model = _unwrap(field.annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _unwrap(annotation: Any) -> Any:
    for arg in typing.get_args(annotation) or (annotation,):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return annotation


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _problem_from(error: Any, root: type[BaseModel]) -> ConfigProblem:
    loc, kind, value = tuple(error["loc"]), error["type"], error.get("input", _UNSET)
    path = _path(loc)
    if kind == "missing":
        return ConfigProblem(path, _UNSET, "is required but not set")
    if kind == "extra_forbidden":
        model = _model_at(root, loc)
        allowed = ", ".join(_allowed_keys(model)) if model else "see README"
        return ConfigProblem(path, _UNSET, f"is not a known key (allowed: {allowed})")
    if kind == "literal_error":
        allowed = ", ".join(re.findall(r"'([^']*)'", error["ctx"]["expected"]))
        hint = next(
            (text for (key, bad, where), text in HINTS.items()
             if loc[-1] == key and value == bad and where in path),
            None,
        )
        message = f"is not allowed (allowed: {allowed})"
        return ConfigProblem(path, value, f"{message}: {hint}" if hint else message)
    if kind == "string_pattern_mismatch":
        return ConfigProblem(path, value, f"is not allowed (allowed: {error['ctx']['pattern']})")
    if kind in ("less_than_equal", "greater_than_equal"):
        return ConfigProblem(path, value, f"is out of range (allowed: {_bounds(root, loc)})")
    reason = error["msg"].removeprefix("Value error, ")
    return ConfigProblem(path, value, f"is not allowed ({reason[:1].lower() + reason[1:]})")


def _bounds(root: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    model = _model_at(root, loc)
    field = next(f for name, f in model.model_fields.items() if loc[-1] in (name, f.alias))
    low = next((m.ge for m in field.metadata if hasattr(m, "ge")), None)
    high = next((m.le for m in field.metadata if hasattr(m, "le")), None)
    if low is not None and high is not None:
        return f"{low} to {high}"
    return f">= {low}" if low is not None else f"<= {high}"


def format_validation_error(error: ValidationError, root: type[BaseModel]) -> list[ConfigProblem]:
    return [_problem_from(item, root) for item in error.errors(include_url=False)]


def domain_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """Rules that span fields or need accelerator facts; each yields the exact key at fault."""
    yield from _zone_problems(config)
    yield from _version_problems(config)
    yield from _tpu_problems(config)
    yield from _gpu_problems(config)
    yield from _pool_name_problems(config)
    yield from _cidr_problems(config)
    yield from _pod_range_problems(config)
    yield from job_problems(config)


def _zone_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    if not config.zone.startswith(f"{config.region}-"):
        yield ConfigProblem(
            "trainyard:zone", config.zone, f"is not in gcp:region {config.region} (allowed: {config.region}-<letter>)"
        )


def _version_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    if config.cluster.kubernetes_minor < MIN_KUBERNETES:
        yield ConfigProblem(
            "trainyard:cluster.version", config.cluster.version,
            "is too old: DRANET and resource.k8s.io/v1 need it (allowed: 1.34 or newer)",
        )


def _capacity_problems(path: str, capacity: str, reservation: str | None) -> Iterator[ConfigProblem]:
    if capacity == "reservation" and not reservation:
        yield ConfigProblem(f"{path}.reservation", _UNSET, 'is required when capacity is "reservation"')
    if capacity != "reservation" and reservation:
        yield ConfigProblem(
            f"{path}.reservation", reservation,
            f'is only allowed with capacity "reservation" (capacity is "{capacity}")',
        )


def _tpu_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    for index, group in enumerate(config.tpu_slices):
        path = f"trainyard:tpuSlices[{index}]"
        yield from _capacity_problems(path, group.capacity, group.reservation)
        try:
            generation = topology.tpu_generation(group.generation)
        except topology.TopologyError as error:
            yield ConfigProblem(f"{path}.generation", group.generation, _reason(error, group.generation))
            continue
        if group.topology not in generation.topologies:
            allowed = ", ".join(generation.topologies)
            yield ConfigProblem(
                f"{path}.topology", group.topology, f"is not a {generation.name} topology (allowed: {allowed})"
            )
            continue
        try:
            topology.tpu_slice(group.generation, group.topology, group.machine_type)
        except topology.TopologyError as error:
            yield ConfigProblem(f"{path}.machineType", group.machine_type, _reason(error, group.machine_type))


def _reason(error: Exception, value: Any) -> str:
    """topology's messages start with the value; the problem prints it already."""
    return str(error).removeprefix(repr(value)).strip()


def _gpu_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    for index, pool in enumerate(config.gpu_pools):
        path = f"trainyard:gpuPools[{index}]"
        yield from _capacity_problems(path, pool.capacity, pool.reservation)
        try:
            topology.gpu_machine(pool.machine_type)
        except topology.TopologyError as error:
            yield ConfigProblem(f"{path}.machineType", pool.machine_type, _reason(error, pool.machine_type))
        if pool.capacity in ("dwsQueued", "flexStart") and pool.min_nodes != 0:
            yield ConfigProblem(
                f"{path}.minNodes", pool.min_nodes,
                f'is not allowed with capacity "{pool.capacity}": flex-start pools scale from 0 (allowed: 0)',
            )
        if pool.min_nodes > pool.max_nodes:
            yield ConfigProblem(
                f"{path}.minNodes", pool.min_nodes, f"is above maxNodes (allowed: 0 to {pool.max_nodes})"
            )
    rdma_needed = {pool.machine.rdma_nics for pool in config.gpu_pools if _known_gpu(pool.machine_type)}
    for needed in rdma_needed:
        if len(config.network.rdma_ranges) != needed:
            yield ConfigProblem(
                "trainyard:network.rdmaRanges", [str(r) for r in config.network.rdma_ranges],
                f"has {len(config.network.rdma_ranges)} ranges (allowed: exactly {needed}, one per RDMA NIC)",
            )


def _known_gpu(machine_type: str) -> bool:
    return machine_type in topology.GPU_MACHINES


def _pool_name_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    seen: dict[str, str] = {"system": "the system pool"}
    named = [(f"trainyard:tpuSlices[{i}].name", g.name, g.pool_names) for i, g in enumerate(config.tpu_slices)]
    named += [(f"trainyard:gpuPools[{i}].name", p.name, [p.name]) for i, p in enumerate(config.gpu_pools)]
    for path, name, pool_names in named:
        clashes = [pool for pool in pool_names if pool in seen]
        if clashes:
            yield ConfigProblem(
                path, name, f"gives node pool {clashes[0]!r}, already used by {seen[clashes[0]]} (allowed: unique names)"
            )
        seen.update({pool: path for pool in pool_names})


def _ranges_in_use(config: StackConfig) -> list[tuple[str, IPv4Network]]:
    net = config.network
    ranges = [
        ("trainyard:network.nodeRange", net.node_range),
        ("trainyard:network.podRange", net.pod_range),
        ("trainyard:network.serviceRange", net.service_range),
    ]
    if config.multislice:
        ranges += [(f"trainyard:network.dcnRanges[{i}]", r) for i, r in enumerate(net.dcn_ranges)]
    if config.gpu_pools:
        ranges.append(("trainyard:network.gvnicRange", net.gvnic_range))
        ranges += [(f"trainyard:network.rdmaRanges[{i}]", r) for i, r in enumerate(net.rdma_ranges)]
    return ranges


def _cidr_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    for (path_a, range_a), (path_b, range_b) in combinations(_ranges_in_use(config), 2):
        if range_a.overlaps(range_b):
            yield ConfigProblem(path_b, str(range_b), f"overlaps {path_a} {range_a} (allowed: disjoint ranges)")


def max_nodes(config: StackConfig) -> int:
    """The most nodes the stack's pools can reach together."""
    tpu_nodes = sum(g.count * g.slice.vms for g in config.tpu_slices)
    return config.cluster.system_pool.max_nodes + tpu_nodes + sum(p.max_nodes for p in config.gpu_pools)


def _pod_range_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    pod_range = config.network.pod_range
    capacity = pod_range.num_addresses // PODS_PER_NODE_RANGE
    try:
        needed = max_nodes(config)
    except topology.TopologyError:
        return  # already reported against the slice that cannot be formed
    if needed > capacity:
        prefix = max(0, 32 - (needed * PODS_PER_NODE_RANGE - 1).bit_length())
        yield ConfigProblem(
            "trainyard:network.podRange", str(pod_range),
            f"holds {capacity} nodes but the pools can reach {needed} (allowed: /{prefix} or larger)",
        )


# --- trainyard:jobs and trainyard:kueue: jobs name slices and pools that exist, and fit them.
def job_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    groups = {group.name: group for group in config.tpu_slices}
    pools = {pool.name: pool for pool in config.gpu_pools}
    # Jobs switched off are parked: they are checked against the slices and pools when switched on.
    for index, job in enumerate(config.jobs.maxtext):
        if not job.enabled:
            continue
        path = f"trainyard:jobs.maxtext[{index}]"
        group = groups.get(job.slices)
        if group is None:
            yield ConfigProblem(f"{path}.slices", job.slices, f"is not a trainyard:tpuSlices name (allowed: {_names(groups)})")
            continue
        yield from _slice_range_problems(path, job, group.count)
        try:
            chips = group.slice.chips
        except topology.TopologyError:
            continue  # reported against the slice group
        yield from _mesh_problems(f"{path}.ici", job.ici, jobs_config.ICI_FILL_AXIS, [chips], "chips per slice")
        counts = list(range(_lowest_slices(job, group.count), _highest_slices(job, group.count) + 1))
        yield from _mesh_problems(f"{path}.dcn", job.dcn, jobs_config.DCN_FILL_AXIS, counts, "slices")
    for index, job in enumerate(config.jobs.fsdp):
        if not job.enabled:
            continue
        path = f"trainyard:jobs.fsdp[{index}]"
        pool = pools.get(job.pool)
        if pool is None:
            yield ConfigProblem(f"{path}.pool", job.pool, f"is not a trainyard:gpuPools name (allowed: {_names(pools)})")
        elif job.nodes > pool.max_nodes:
            yield ConfigProblem(f"{path}.nodes", job.nodes, f"is more than pool {pool.name}'s maxNodes (allowed: 1 to {pool.max_nodes})")
        if job.hf_token_key and job.hf_token_key.startswith("trainyard:"):
            yield ConfigProblem(f"{path}.hfTokenKey", job.hf_token_key, "is in the typed trainyard namespace (allowed: another namespace, e.g. huggingface:token)")
    yield from _job_name_problems(config)
    yield from _smoke_problems(config)
    yield from _flavor_problems(config)


def _names(named: dict[str, Any]) -> str:
    return ", ".join(named) or "none configured"


def _lowest_slices(job: jobs_config.MaxTextJobConfig, count: int) -> int:
    return job.min_slices if job.min_slices is not None else _highest_slices(job, count)


def _highest_slices(job: jobs_config.MaxTextJobConfig, count: int) -> int:
    return job.max_slices if job.max_slices is not None else count


def _slice_range_problems(path: str, job: jobs_config.MaxTextJobConfig, count: int) -> Iterator[ConfigProblem]:
    if job.max_slices is not None and job.max_slices > count:
        yield ConfigProblem(f"{path}.maxSlices", job.max_slices, f"is more than the {count} slices of {job.slices} (allowed: 1 to {count})")
    if job.min_slices is not None and job.min_slices > _highest_slices(job, count):
        yield ConfigProblem(f"{path}.minSlices", job.min_slices, f"is above maxSlices (allowed: 1 to {_highest_slices(job, count)})")


def _mesh_problems(path: str, sizes: dict[str, int], fill_axis: str, targets: list[int], what: str) -> Iterator[ConfigProblem]:
    """The axes must multiply to each target; the fill axis, unless set, takes what the others leave over."""
    for axis, size in sizes.items():
        if axis not in jobs_config.MAXTEXT_AXES:
            yield ConfigProblem(f"{path}.{axis}", size, f"is not a MaxText mesh axis (allowed: {', '.join(jobs_config.MAXTEXT_AXES)})")
        elif size < 1:
            yield ConfigProblem(f"{path}.{axis}", size, f"is not a mesh size (allowed: 1 or more; {fill_axis} takes the rest when unset)")
    if any(axis not in jobs_config.MAXTEXT_AXES or size < 1 for axis, size in sizes.items()):
        return
    product = math.prod(sizes.values())
    for target in targets:
        fits = product == target if fill_axis in sizes else target % product == 0
        if not fits:
            rule = f"a product of exactly {target}" if fill_axis in sizes else f"a product dividing {target}, {fill_axis} takes the rest"
            elastic = f" (the job runs on {targets[0]}..{targets[-1]} slices)" if len(targets) > 1 else ""
            yield ConfigProblem(path, sizes, f"multiplies to {product} but the job has {target} {what}{elastic} (allowed: {rule})")
            return


def _job_name_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    seen: dict[str, str] = {}
    named = [(f"trainyard:jobs.maxtext[{i}].name", j.name) for i, j in enumerate(config.jobs.maxtext)]
    named += [(f"trainyard:jobs.fsdp[{i}].name", j.name) for i, j in enumerate(config.jobs.fsdp)]
    if config.jobs.ray.enabled:
        named.append(("trainyard:jobs.ray.name", config.jobs.ray.name))
    for path, name in named:
        if name in seen:
            yield ConfigProblem(path, name, f"is already the name of {seen[name]} (allowed: unique job names)")
        seen.setdefault(name, path)


def _smoke_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    smoke = config.jobs.smoke
    for pool in config.gpu_pools if smoke.enabled else ():
        if smoke.nccl_nodes > pool.max_nodes:
            yield ConfigProblem("trainyard:jobs.smoke.ncclNodes", smoke.nccl_nodes, f"is more than pool {pool.name}'s maxNodes (allowed: 1 to {pool.max_nodes})")


def _flavor_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """Kueue flavors select nodes by GKE's labels; two groups of one shape and capacity are indistinguishable."""
    system_machine = config.cluster.system_pool.machine_type
    try:
        topology.machine_shape(system_machine)
    except topology.TopologyError as error:
        yield ConfigProblem("trainyard:cluster.systemPool.machineType", system_machine, f"{_reason(error, system_machine)}: Kueue's cpu and memory quota needs it")
    seen: dict[tuple[str, str, str], int] = {}
    for index, group in enumerate(config.tpu_slices):
        key = (group.generation, group.topology, group.capacity)
        if key in seen:
            yield ConfigProblem(
                f"trainyard:tpuSlices[{index}].topology", group.topology,
                f"has the generation and capacity of trainyard:tpuSlices[{seen[key]}] too, so no Kueue flavor can tell "
                "their nodes apart (allowed: one group per shape and capacity; raise its count)",
            )
        seen.setdefault(key, index)
