"""What every Ray Train worker runs: ready JAX for its accelerator, then MaxText's pre-train `main(argv)`.

On TPU, Ray's JaxTrainer has already called `jax.distributed.initialize` (and set the MEGASCALE
variables for multislice), and MaxText sees that and skips its own initialisation. Ray 2.60 does not
do this for plain CPU workers, so on CPU the workers agree on a coordinator here and initialise JAX
themselves; MaxText then finds the distributed system ready, the same as on TPU.
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class WorkerPlan:
    """Everything a worker needs, sent through `train_loop_config` (plain values only)."""

    maxtext_argv: list[str]
    on_cpu: bool
    chips_per_host: int
    jax_init_timeout_s: int = 300
    fail_once_at_step: int | None = None
    failure_marker: str | None = None

    def to_config(self) -> dict:
        return asdict(self)


def train_loop_per_worker(config: dict) -> None:
    import ray.train

    plan = WorkerPlan(**config)
    context = ray.train.get_context()
    rank, world_size = context.get_world_rank(), context.get_world_size()
    if plan.on_cpu:
        _initialize_cpu_jax(rank, world_size, plan.chips_per_host, plan.jax_init_timeout_s)
    if plan.fail_once_at_step is not None and rank == world_size - 1:
        from workloads.maxtext.faults import install_failure_at_step

        install_failure_at_step(plan.fail_once_at_step, Path(plan.failure_marker))
    try:
        _run_maxtext(plan.maxtext_argv)
    finally:
        if plan.on_cpu:
            import jax

            jax.distributed.shutdown()


class OrbaxInfoFilter(logging.Filter):
    """Drops orbax's INFO records: at INFO it logs ~35 lines of internals per checkpoint save and process."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or f"{os.sep}orbax{os.sep}" not in record.pathname


def _run_maxtext(maxtext_argv: list[str]) -> None:
    from absl import logging as absl_logging

    # MaxText's "completed step" lines are absl INFO records; orbax logs through absl too.
    absl_logging.set_verbosity(absl_logging.INFO)
    logging.getLogger("absl").addFilter(OrbaxInfoFilter())
    from maxtext.trainers.pre_train import train as maxtext_train

    # argv[0] is the module's path, from which MaxText picks its default config (base.yml).
    maxtext_train.main([maxtext_train.__file__, *maxtext_argv])


def _initialize_cpu_jax(rank: int, world_size: int, devices_per_process: int, timeout_s: int) -> None:
    from ray.train.collective import broadcast_from_rank_zero

    # A TPU-ready image also carries libtpu; keep JAX from probing for TPUs on a CPU worker.
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax

    jax.config.update("jax_num_cpu_devices", devices_per_process)
    coordinator = broadcast_from_rank_zero(_free_address() if rank == 0 else None)
    jax.distributed.initialize(
        coordinator_address=coordinator,
        num_processes=world_size,
        process_id=rank,
        initialization_timeout=timeout_s,
    )


def _free_address() -> str:
    import ray.util

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("", 0))
        port = probe.getsockname()[1]
    return f"{ray.util.get_node_ip_address()}:{port}"
