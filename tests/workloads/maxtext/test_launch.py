"""The entrypoint's JaxTrainer comes from the slice facts, and bad facts or arguments stop it before Ray starts."""

from __future__ import annotations

import pytest
import ray
from ray.runtime_env import RuntimeEnv
from ray.util.tpu import get_tpu_worker_resources

from workloads.maxtext import train
from workloads.maxtext.launch import MAXTEXT_REQUIREMENT, RunOptions, build_trainer, maxtext_argv
from workloads.maxtext.slices import SliceFacts, SliceFactsError
from workloads.maxtext.worker import WorkerPlan

TWO_V6E_16 = SliceFacts(accelerator_type="TPU-V6E", topology="4x4", slices=2, hosts_per_slice=4, chips_per_host=4)
SEED_8B = ["model_name=llama3-8b", "ici_fsdp_parallelism=4", "ici_tensor_parallelism=4", "run_name=seed-8b"]


def _options(**overrides) -> RunOptions:
    return RunOptions(**{"name": "job", "storage_path": "/data/runs", "max_failures": 3, **overrides})


def test_scaling_config_is_one_worker_per_vm_of_every_slice():
    trainer = build_trainer(TWO_V6E_16, SEED_8B, _options())
    scaling = trainer.scaling_config
    assert scaling.use_tpu
    assert scaling.num_workers == 8
    assert (scaling.topology, scaling.accelerator_type) == ("4x4", "TPU-V6E")
    assert scaling.resources_per_worker == {"TPU": 4}
    assert scaling.placement_strategy == "SPREAD"


def test_rays_own_topology_table_agrees_on_workers_per_slice():
    workers_per_slice, resources = get_tpu_worker_resources(topology="4x4", accelerator_type="TPU-V6E")
    assert workers_per_slice == TWO_V6E_16.hosts_per_slice
    assert resources["TPU"] == TWO_V6E_16.chips_per_host


def test_elastic_job_asks_ray_for_whole_slices():
    elastic = SliceFacts("TPU-V6E", "4x4", slices=2, hosts_per_slice=4, chips_per_host=4, min_slices=1, max_slices=2)
    scaling = build_trainer(elastic, SEED_8B, _options()).scaling_config
    assert scaling.num_workers == (4, 8)
    assert scaling.elasticity_enabled


def test_run_config_carries_failures_storage_and_the_maxtext_pin():
    run = build_trainer(TWO_V6E_16, SEED_8B, _options()).run_config
    assert run.failure_config.max_failures == 3
    assert run.storage_path == "/data/runs"
    assert run.name == "job"
    assert run.worker_runtime_env["uv"] == {"packages": [MAXTEXT_REQUIREMENT]}
    # Ray's own validation of the runtime env the workers get.
    assert RuntimeEnv(**run.worker_runtime_env).uv_config()["packages"] == [MAXTEXT_REQUIREMENT]


def test_no_pip_when_the_image_carries_maxtext():
    run = build_trainer(TWO_V6E_16, SEED_8B, _options(worker_packages=(), worker_env={"A": "1"})).run_config
    assert "uv" not in run.worker_runtime_env
    assert run.worker_runtime_env["env_vars"] == {"A": "1"}


def test_workers_get_a_fixed_run_name_and_the_storage_as_output_unless_given():
    assert maxtext_argv(["steps=5"], _options()) == ["steps=5", "run_name=job", "base_output_directory=/data/runs"]
    given = ["run_name=mine", "base_output_directory=gs://bucket"]
    assert maxtext_argv(given, _options()) == given


def test_worker_plan_travels_as_plain_values():
    plan = WorkerPlan(**build_trainer(TWO_V6E_16, SEED_8B, _options()).train_loop_config)
    assert plan.maxtext_argv[: len(SEED_8B)] == SEED_8B
    assert not plan.on_cpu
    assert plan.chips_per_host == 4


@pytest.mark.parametrize(
    ("facts", "named"),
    [
        ({"topology": "4x4", "hosts_per_slice": 4, "chips_per_host": 8}, "--hosts-per-slice 4 x --chips-per-host 8"),
        ({"topology": "4by4"}, "--topology '4by4'"),
        ({"slices": 0}, "--slices 0"),
        ({"slices": 3, "max_slices": 2}, "--slices 3 lies outside"),
        ({"accelerator_type": "CPU", "topology": "1x2", "hosts_per_slice": 2, "chips_per_host": 1}, "CPU"),
    ],
)
def test_contradictory_facts_are_refused_by_flag(facts, named):
    base = {"accelerator_type": "TPU-V6E", "topology": "4x4", "slices": 2, "hosts_per_slice": 4, "chips_per_host": 4}
    with pytest.raises(SliceFactsError, match="allowed") as refusal:
        SliceFacts(**{**base, **facts})
    assert named in str(refusal.value)


FACT_FLAGS = ["--accelerator-type", "TPU-V6E", "--topology", "4x4", "--slices", "2"]
FACT_FLAGS += ["--hosts-per-slice", "4", "--chips-per-host", "4", "--storage-path", "/tmp/never-used"]


def test_entrypoint_refuses_mismatched_parallelism_before_starting_ray(capsys):
    exit_code = train.main([*FACT_FLAGS, "--", "ici_fsdp_parallelism=4", "ici_tensor_parallelism=2"])
    assert exit_code == train.EXIT_REFUSED
    refusal = capsys.readouterr().err
    assert "ici_fsdp_parallelism=4 x ici_tensor_parallelism=2 multiplies to 8" in refusal
    assert "16 chips per slice" in refusal
    assert not ray.is_initialized()


def test_entrypoint_refuses_an_elastic_range_the_dcn_axes_cannot_follow(capsys):
    argv = [*FACT_FLAGS, "--min-slices", "1", "--max-slices", "2", "--", "dcn_fsdp_parallelism=2"]
    argv += ["dcn_data_parallelism=1"]
    assert train.main(argv) == train.EXIT_REFUSED
    assert "fails at 1" in capsys.readouterr().err
    assert not ray.is_initialized()


def test_cli_pins_maxtext_for_the_workers_unless_told_the_image_has_it():
    assert train.run_options(train.parse_flags(FACT_FLAGS)).worker_packages == (MAXTEXT_REQUIREMENT,)
    flags = [*FACT_FLAGS, "--worker-package", "none", "--worker-env", "JAX_PLATFORMS=tpu,cpu"]
    options = train.run_options(train.parse_flags(flags))
    assert options.worker_packages == ()
    assert options.worker_env == {"JAX_PLATFORMS": "tpu,cpu"}
