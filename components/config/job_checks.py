"""Checks of trainyard:jobs and trainyard:kueue against the pools: jobs name slices and pools that exist, and fit them."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from components.config.jobs import DCN_FILL_AXIS, ICI_FILL_AXIS, MAXTEXT_AXES, MaxTextJobConfig
from components.config.models import StackConfig
from components.config.problem import ConfigProblem, reason
from components.facts import topology


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
        yield from _mesh_problems(f"{path}.ici", job.ici, ICI_FILL_AXIS, [chips], "chips per slice")
        counts = list(range(_lowest_slices(job, group.count), _highest_slices(job, group.count) + 1))
        yield from _mesh_problems(f"{path}.dcn", job.dcn, DCN_FILL_AXIS, counts, "slices")
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


def _lowest_slices(job: MaxTextJobConfig, count: int) -> int:
    return job.min_slices if job.min_slices is not None else _highest_slices(job, count)


def _highest_slices(job: MaxTextJobConfig, count: int) -> int:
    return job.max_slices if job.max_slices is not None else count


def _slice_range_problems(path: str, job: MaxTextJobConfig, count: int) -> Iterator[ConfigProblem]:
    if job.max_slices is not None and job.max_slices > count:
        yield ConfigProblem(f"{path}.maxSlices", job.max_slices, f"is more than the {count} slices of {job.slices} (allowed: 1 to {count})")
    if job.min_slices is not None and job.min_slices > _highest_slices(job, count):
        yield ConfigProblem(f"{path}.minSlices", job.min_slices, f"is above maxSlices (allowed: 1 to {_highest_slices(job, count)})")


def _mesh_problems(path: str, sizes: dict[str, int], fill_axis: str, targets: list[int], what: str) -> Iterator[ConfigProblem]:
    """The axes must multiply to each target; the fill axis, unless set, takes what the others leave over."""
    for axis, size in sizes.items():
        if axis not in MAXTEXT_AXES:
            yield ConfigProblem(f"{path}.{axis}", size, f"is not a MaxText mesh axis (allowed: {', '.join(MAXTEXT_AXES)})")
        elif size < 1:
            yield ConfigProblem(f"{path}.{axis}", size, f"is not a mesh size (allowed: 1 or more; {fill_axis} takes the rest when unset)")
    if any(axis not in MAXTEXT_AXES or size < 1 for axis, size in sizes.items()):
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
        yield ConfigProblem("trainyard:cluster.systemPool.machineType", system_machine, f"{reason(error, system_machine)}: Kueue's cpu and memory quota needs it")
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
