"""Checks of trainyard:jobs and trainyard:kueue against the pools: jobs name slices and pools that exist, and fit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from components.config.jobs import MaxTextJobConfig
from components.config.models import GpuPoolConfig, StackConfig
from components.config.problem import ConfigProblem, reason
from components.facts import gpu_software, maxtext, topology


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
            yield ConfigProblem(
                f"{path}.slices", job.slices, f"is not a trainyard:tpuSlices name (allowed: {_names(groups)})"
            )
            continue
        if reason := maxtext.unknown_model(job.model_name):
            yield ConfigProblem(f"{path}.modelName", job.model_name, reason)
        range_problems = list(_slice_range_problems(path, job, group.count))
        yield from range_problems
        try:
            chips = group.slice.chips
        except topology.TopologyError:
            continue  # reported against the slice group
        axis_problems = [*_axis_problems(f"{path}.ici", job.ici), *_axis_problems(f"{path}.dcn", job.dcn)]
        axis_problems += _mesh_in_extra_args_problems(path, job.extra_args)
        yield from axis_problems
        if range_problems or axis_problems:
            continue
        job_range = maxtext.job_slice_range(group.count, job.min_slices, job.max_slices)
        for kind, message in maxtext.mesh_errors(job.ici, job.dcn, job.extra_args, chips, job_range).items():
            yield ConfigProblem(f"{path}.{kind}", getattr(job, kind), f"cannot run: {message}")
    for index, job in enumerate(config.jobs.fsdp):
        if not job.enabled:
            continue
        path = f"trainyard:jobs.fsdp[{index}]"
        pool = pools.get(job.pool)
        if pool is None:
            yield ConfigProblem(
                f"{path}.pool", job.pool, f"is not a trainyard:gpuPools name (allowed: {_names(pools)})"
            )
        elif job.nodes > pool.max_nodes:
            yield ConfigProblem(
                f"{path}.nodes", job.nodes, f"is more than pool {pool.name}'s maxNodes (allowed: 1 to {pool.max_nodes})"
            )
        if job.hf_token_key and job.hf_token_key.startswith("trainyard:"):
            yield ConfigProblem(
                f"{path}.hfTokenKey",
                job.hf_token_key,
                "is in the typed trainyard namespace (allowed: another namespace, e.g. huggingface:token)",
            )
    yield from _job_name_problems(config)
    yield from _smoke_problems(config)
    yield from _flavor_problems(config)
    yield from _driver_problems(config)


def _names(named: dict[str, Any]) -> str:
    return ", ".join(named) or "none configured"


def _slice_range_problems(path: str, job: MaxTextJobConfig, count: int) -> Iterator[ConfigProblem]:
    highest = maxtext.job_slice_range(count, None, job.max_slices)[1]
    if job.max_slices is not None and job.max_slices > count:
        yield ConfigProblem(
            f"{path}.maxSlices",
            job.max_slices,
            f"is more than the {count} slices of {job.slices} (allowed: 1 to {count})",
        )
    if job.min_slices is not None and job.min_slices > highest:
        yield ConfigProblem(f"{path}.minSlices", job.min_slices, f"is above maxSlices (allowed: 1 to {highest})")


def _mesh_in_extra_args_problems(path: str, extra_args: dict[str, str]) -> list[ConfigProblem]:
    """A mesh size in extraArgs would silently override ici/dcn: it has one place, and that is ici/dcn."""
    problems = []
    for key, value in extra_args.items():
        if match := maxtext.PARALLELISM_ARGUMENT.match(key):
            kind, axis = match.groups()
            problems.append(
                ConfigProblem(
                    f"{path}.extraArgs.{key}", value, f"is a mesh size (allowed: set it as {path}.{kind}.{axis})"
                )
            )
    return problems


def _axis_problems(path: str, sizes: dict[str, int]) -> Iterator[ConfigProblem]:
    """Each configured axis by its own key; how the sizes multiply is the trainer's rule (facts.maxtext)."""
    for axis, size in sizes.items():
        if axis not in maxtext.MAXTEXT_AXES:
            yield ConfigProblem(
                f"{path}.{axis}", size, f"is not a MaxText mesh axis (allowed: {', '.join(maxtext.MAXTEXT_AXES)})"
            )
        elif size < 1:
            yield ConfigProblem(
                f"{path}.{axis}",
                size,
                "is not a mesh size (allowed: 1 or more; the fill axis takes the rest when unset)",
            )


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
            yield ConfigProblem(
                "trainyard:jobs.smoke.ncclNodes",
                smoke.nccl_nodes,
                f"is more than pool {pool.name}'s maxNodes (allowed: 1 to {pool.max_nodes})",
            )


def _flavor_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """Kueue flavors select nodes by GKE's labels; two groups of one shape and capacity are indistinguishable."""
    system_machine = config.cluster.system_pool.machine_type
    try:
        topology.machine_shape(system_machine)
    except topology.TopologyError as error:
        yield ConfigProblem(
            "trainyard:cluster.systemPool.machineType",
            system_machine,
            f"{reason(error, system_machine)}: Kueue's cpu and memory quota needs it",
        )
    seen: dict[tuple[str, str, str], int] = {}
    for index, group in enumerate(config.tpu_slices):
        key = (group.generation, group.topology, group.capacity)
        if key in seen:
            yield ConfigProblem(
                f"trainyard:tpuSlices[{index}].topology",
                group.topology,
                f"has the generation and capacity of trainyard:tpuSlices[{seen[key]}] too, so no Kueue flavor can tell "
                "their nodes apart (allowed: one group per shape and capacity; raise its count)",
            )
        seen.setdefault(key, index)


def driver_needs(config: StackConfig, pool: GpuPoolConfig) -> list[tuple[str, str]]:
    """(what, the oldest driver it runs on) for the GPU software a pool's nodes carry: the gIB plugin on every
    A4 node, and the FSDP image the stack builds when a job on the pool runs it."""
    gib = gpu_software.GIB
    needs = [(f"the gIB plugin {gib.version} on every node", gib.min_driver)]
    runs_built_image = config.images.fsdp is None and (
        any(job.pool == pool.name for job in config.jobs.enabled_fsdp) or config.nccl_smoke_on_trainer_image
    )
    if runs_built_image:
        wheel = gpu_software.FSDP_TORCH
        needs.append((f"the FSDP image's torch {wheel.torch} (CUDA {wheel.cuda})", wheel.min_driver))
    return needs


def _newest(needs: list[tuple[str, str]]) -> str:
    return max((minimum for _, minimum in needs), key=gpu_software.version_key)


def _driver_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    for index, pool in enumerate(config.gpu_pools):
        if pool.driver_version is None:
            continue
        needs = driver_needs(config, pool)
        short = [(what, minimum) for what, minimum in needs if not gpu_software.at_least(pool.driver_version, minimum)]
        if short:
            yield ConfigProblem(
                f"trainyard:gpuPools[{index}].driverVersion",
                pool.driver_version,
                "is too old for "
                + ", and for ".join(f"{what}, which needs {low} or newer" for what, low in short)
                + f" (allowed: {_newest(needs)} or newer)",
            )


def driver_summary(config: StackConfig, pool: GpuPoolConfig) -> str:
    """One line per GPU pool for preflight's report: what its nodes carry and the driver that needs."""
    needs = driver_needs(config, pool)
    carried = "; ".join(f"{what}: {minimum}+" for what, minimum in needs)
    stated = (
        f"driverVersion {pool.driver_version}"
        if pool.driver_version
        else "driverVersion unset, so each FSDP pod checks its node's driver before torchrun"
    )
    source = (
        "the driver you install (gpuDriverVersion INSTALLATION_DISABLED) must be"
        if pool.gpu_driver_version == "INSTALLATION_DISABLED"
        else f"gpuDriverVersion {pool.gpu_driver_version} must give"
    )
    return f"{pool.name}: {source} {_newest(needs)} or newer ({carried}); {stated}"
