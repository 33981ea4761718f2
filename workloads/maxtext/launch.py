"""Build Ray Train's JaxTrainer for a MaxText job from slice facts and run options.

No MaxText or JAX import here: this runs in the RayJob's driver, which only needs Ray.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Before any ray.train import: the JaxTrainer below is Ray Train v2's.
os.environ.setdefault("RAY_TRAIN_V2_ENABLED", "1")

from ray.train.v2.api.config import FailureConfig, RunConfig, ScalingConfig
from ray.train.v2.jax import JaxTrainer

from workloads.maxtext.parallelism import MeshShape, check_elastic_parallelism, parse_overrides
from workloads.maxtext.slices import SliceFacts
from workloads.maxtext.worker import WorkerPlan, train_loop_per_worker

# The MaxText the workers run; requirements.txt pins the same (a test keeps the two equal).
MAXTEXT_REQUIREMENT = "maxtext[tpu]==0.2.5"
WORKLOADS_PACKAGE = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class RunOptions:
    name: str
    storage_path: str
    max_failures: int = 0
    worker_packages: tuple[str, ...] = (MAXTEXT_REQUIREMENT,)
    worker_env: dict[str, str] = field(default_factory=dict)
    fail_once_at_step: int | None = None


def check_job(facts: SliceFacts, maxtext_args: Sequence[str]) -> dict[int, MeshShape]:
    """Refuse MaxText arguments whose parallelism cannot run on these slices (ParallelismError)."""
    return check_elastic_parallelism(parse_overrides(maxtext_args), facts.devices_per_slice, facts.slice_counts)


def maxtext_argv(maxtext_args: Sequence[str], options: RunOptions) -> list[str]:
    """MaxText's arguments plus the two a restartable run needs: a fixed run_name and an output directory.

    Without a fixed run_name MaxText names each start by its timestamp, and a restarted worker group
    would not find the checkpoints of the attempt before it.
    """
    given = parse_overrides(maxtext_args)
    defaults = {"run_name": options.name, "base_output_directory": options.storage_path}
    return [*maxtext_args, *(f"{key}={value}" for key, value in defaults.items() if key not in given)]


def scaling_config(facts: SliceFacts) -> ScalingConfig:
    if facts.is_cpu:
        return ScalingConfig(
            num_workers=facts.num_workers, resources_per_worker={"CPU": 1}, placement_strategy="SPREAD"
        )
    return ScalingConfig(
        use_tpu=True,
        num_workers=facts.num_workers,
        topology=facts.topology,
        accelerator_type=facts.accelerator_type,
        resources_per_worker={"TPU": facts.chips_per_host},
        placement_strategy="SPREAD",
    )


def worker_runtime_env(options: RunOptions) -> dict:
    """Environment variables for the workers, and MaxText pinned (installed with uv, as the seed does on
    the Ray TPU image) unless the image already carries it."""
    runtime_env: dict = {"env_vars": dict(options.worker_env)}
    if options.worker_packages:
        runtime_env["uv"] = {"packages": list(options.worker_packages)}
    return runtime_env


def run_config(options: RunOptions) -> RunConfig:
    return RunConfig(
        name=options.name,
        storage_path=options.storage_path,
        failure_config=FailureConfig(max_failures=options.max_failures),
        worker_runtime_env=worker_runtime_env(options),
    )


def build_trainer(facts: SliceFacts, maxtext_args: Sequence[str], options: RunOptions) -> JaxTrainer:
    check_job(facts, maxtext_args)
    plan = WorkerPlan(
        maxtext_argv=maxtext_argv(maxtext_args, options),
        on_cpu=facts.is_cpu,
        chips_per_host=facts.chips_per_host,
        fail_once_at_step=options.fail_once_at_step,
        failure_marker=str(Path(options.storage_path) / options.name / ".trainyard-injected-failure"),
    )
    return JaxTrainer(
        train_loop_per_worker=train_loop_per_worker,
        train_loop_config=plan.to_config(),
        scaling_config=scaling_config(facts),
        run_config=run_config(options),
    )
