"""What two parts of the stack must not share: job and run names, a Ray pod's ports, a GPU's memory between the
smoke all-gather's buffers. Each refusal names the key the user changes (components/config/job_checks.py calls
these with the other job checks)."""

from __future__ import annotations

from collections.abc import Iterator

from components.config.jobs import FsdpJobConfig, parsed_trainer_config
from components.config.models import GpuPoolConfig, StackConfig
from components.config.problem import UNSET, ConfigProblem
from components.facts import gke, topology
from components.facts.kueue_release import RAY_POD_SET_NAMES


def shared_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    yield from _job_name_problems(config)
    yield from _worker_group_name_problems(config)
    yield from _run_name_problems(config)
    yield from _port_problems(config)
    yield from _smoke_problems(config)
    for index, maxtext in enumerate(config.jobs.maxtext):
        yield from _argument_size_problems(f"trainyard:jobs.maxtext[{index}].extraArgs", maxtext.extra_args)
    pools = {pool.name: pool for pool in config.gpu_pools}
    for index, job in enumerate(config.jobs.fsdp):
        yield from _argument_size_problems(f"trainyard:jobs.fsdp[{index}].args", job.args)
        if job.enabled and job.pool in pools:
            yield from _train_split_problems(f"trainyard:jobs.fsdp[{index}].args", job, pools[job.pool])


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


def _worker_group_name_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """A slice group's name is its Ray worker group's and its Kueue pod set's (components/jobs/ray_workloads.py)."""
    for index, group in enumerate(config.tpu_slices):
        if group.name in RAY_POD_SET_NAMES:
            yield ConfigProblem(
                f"trainyard:tpuSlices[{index}].name",
                group.name,
                f"names the Ray worker group, and Kueue v0.19.2 refuses it: {RAY_POD_SET_NAMES[group.name]} "
                f"(allowed: any name but {', '.join(RAY_POD_SET_NAMES)})",
            )


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


def _train_split_problems(path: str, job: FsdpJobConfig, pool: GpuPoolConfig) -> Iterator[ConfigProblem]:
    """The trainer stops before its first step when one step wants more rows than the training split can hold
    (workloads/fsdp/builder.py make_schedule); the split's size and the job's world size are known here."""
    try:
        ranks = job.nodes * pool.machine.gpus_per_vm
    except topology.TopologyError:
        return  # reported against the pool
    trainer = parsed_trainer_config(job.args)
    if trainer is None:
        return  # reported by the trainer's own rules
    rows, wanted = trainer.train_rows_at_most, trainer.rows_per_step(ranks)
    if wanted <= rows:
        return
    key = "test-size" if "test-size" in job.args else "train-sample-size"
    yield ConfigProblem(
        f"{path}.{key}",
        job.args.get(key, UNSET),
        f"leaves at most {rows:,} training rows of train-sample-size {trainer.train_sample_size:,}, fewer than "
        f"one step's {wanted:,} (per-device-train-batch-size {trainer.per_device_train_batch_size} x {ranks} GPUs "
        f"x gradient-accumulation-steps {trainer.gradient_accumulation_steps}), so the trainer stops before its "
        "first step (allowed: a split that holds one step; or fewer rows per step)",
    )


def _argument_size_problems(path: str, arguments: dict[str, str]) -> Iterator[ConfigProblem]:
    """A job's arguments travel in its object (a RayJob's entrypoint, a Job's command), which etcd stores whole: past
    gke.ARGUMENT_BYTES_LIMIT the object cannot stay under gke.OBJECT_BYTES_LIMIT."""
    sizes = {key: len(key.encode()) + len(value.encode()) for key, value in arguments.items()}
    if sum(sizes.values()) <= gke.ARGUMENT_BYTES_LIMIT:
        return
    largest = max(sizes, key=sizes.__getitem__)
    yield ConfigProblem(
        f"{path}.{largest}",
        arguments[largest],
        f"makes the job's arguments {sum(sizes.values()):,} bytes; they travel in the job's object, which etcd "
        f"stores whole (at most {gke.OBJECT_BYTES_LIMIT:,} bytes) (allowed: {gke.ARGUMENT_BYTES_LIMIT:,} bytes of "
        "arguments in all; long data belongs in a file in the bucket)",
    )
