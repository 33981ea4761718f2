"""What two parts of the stack must not share: job and run names, a Ray pod's ports, a GPU's memory between the
smoke all-gather's buffers. Each refusal names the key the user changes (components/config/job_checks.py calls
these with the other job checks)."""

from __future__ import annotations

from collections.abc import Iterator

from components.config.models import GpuPoolConfig, StackConfig
from components.config.problem import ConfigProblem
from components.facts import gke, topology


def shared_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    yield from _job_name_problems(config)
    yield from _run_name_problems(config)
    yield from _port_problems(config)
    yield from _smoke_problems(config)


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
        yield from _nccl_buffer_problems(smoke.nccl_megabytes, smoke.nccl_nodes, pool)


def _nccl_buffer_problems(megabytes: int, nodes: int, pool: GpuPoolConfig) -> Iterator[ConfigProblem]:
    """The all-gather holds its own buffer and one per rank (components/jobs/smoke_workloads.py) on each GPU."""
    try:
        machine = pool.machine
    except topology.TopologyError:
        return  # reported against the pool
    ranks = nodes * machine.gpus_per_vm
    largest = int(machine.hbm_bytes // ((ranks + 1) * 2**20))
    if machine.hbm_bytes and megabytes > largest:
        yield ConfigProblem(
            "trainyard:jobs.smoke.ncclMegabytes",
            megabytes,
            f"needs {(ranks + 1) * megabytes / 1024:,.0f} GiB on each GPU of pool {pool.name} ({ranks} ranks' "
            f"buffers and its own), more than its {machine.hbm_bytes / 2**30:,.0f} GiB (allowed: 1 to {largest})",
        )


def _port_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """Two servers of one Ray pod on one port: Ray's metrics exporter (every Ray pod), MaxText's cross-slice
    traffic (TPU workers) and the head's own servers (components/facts/gke.py RAY_HEAD_PORTS)."""
    ray = config.jobs.ray
    taken = {port: f"Ray's {name} port" for name, port in gke.RAY_HEAD_PORTS.items()}
    if ray.metrics_export_port in taken:
        yield ConfigProblem(
            "trainyard:jobs.ray.metricsExportPort",
            ray.metrics_export_port,
            f"is {taken[ray.metrics_export_port]} on the Ray head (allowed: a port no other Ray server uses)",
        )
    if ray.megascale_port == ray.metrics_export_port:
        yield ConfigProblem(
            "trainyard:jobs.ray.megascalePort",
            ray.megascale_port,
            "is also trainyard:jobs.ray.metricsExportPort on every TPU worker (allowed: another port)",
        )


def _run_name_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """MaxText writes a run's checkpoints under its run name: two jobs of one name would overwrite each other."""
    first: dict[str, int] = {}
    for index, job in enumerate(config.jobs.maxtext):
        if not job.enabled:  # parked: checked when switched on
            continue
        name = job.effective_run_name
        if name in first:
            yield ConfigProblem(
                f"trainyard:jobs.maxtext[{index}].runName",
                name,
                f"is trainyard:jobs.maxtext[{first[name]}]'s run too, so both would write one checkpoint folder "
                "(allowed: a run name of its own)",
            )
        else:
            first[name] = index
