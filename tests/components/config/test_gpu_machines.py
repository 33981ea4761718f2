"""What a GPU machine's record asks of the stack config: A4X's capacity, GKE floor, arm64 images and DRANET."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import yaml

from components.config.load import ConfigError, load_stack_config
from components.facts.gke import gke_version_below as below_floor
from tests.helpers.plans import PROJECT_DIR, as_engine_config, dev_config_values

A4X_VALUES = yaml.safe_load((PROJECT_DIR / "Pulumi.a4x.yaml").read_text())["config"]


def load(values, stack="a4x"):
    return load_stack_config(as_engine_config(values), stack)


def problems(edit) -> list[str]:
    values = copy.deepcopy(A4X_VALUES)
    edit(values)
    with pytest.raises(ConfigError) as raised:
        load(values)
    return [str(problem) for problem in raised.value.problems]


def pool(values):
    return values["trainyard:gpuPools"][0]


def test_the_a4x_example_loads_with_the_machines_facts():
    config = load(copy.deepcopy(A4X_VALUES))
    (a4x,) = config.gpu_pools
    assert (a4x.machine.accelerator, a4x.machine.gpus_per_vm, a4x.platform) == ("nvidia-gb200", 4, "linux/arm64")
    assert config.fsdp_platforms == ("linux/arm64",)
    assert config.rdma_vpcs is False


def test_the_dev_stack_still_builds_amd64_and_its_rdma_vpcs():
    config = load(dev_config_values(), "dev")
    assert config.fsdp_platforms == ("linux/amd64",) and config.rdma_vpcs is True


@pytest.mark.parametrize("capacity", ["dwsQueued", "flexStart", "spot", "onDemand"])
def test_a_capacity_mode_a4x_is_not_offered_in_is_refused(capacity):
    def edit(values):
        pool(values)["capacity"] = capacity
        pool(values).pop("reservation")
        pool(values)["minNodes"] = 0

    (problem,) = [line for line in problems(edit) if line.startswith("trainyard:gpuPools[0].capacity")]
    assert problem.startswith(f'trainyard:gpuPools[0].capacity: "{capacity}" is not offered for a4x-highgpu-4g')
    assert problem.endswith("(allowed: reservation)")


@pytest.mark.parametrize("version", ["1.34.0-gke.1200000", "1.34.1-gke.1829000"])
def test_a_gke_version_below_the_dranet_floor_is_refused(version):
    def edit(values):
        values["trainyard:cluster"]["version"] = version

    (problem,) = problems(edit)
    assert problem.startswith(f'trainyard:cluster.version: "{version}" is below 1.34.1-gke.1829001')
    assert "(allowed: 1.34.1-gke.1829001 or later, or a minor from 1.34)" in problem


def test_the_floor_compares_as_far_as_the_version_goes():
    floor = "1.34.1-gke.1829001"
    assert not below_floor("1.34", floor) and not below_floor("1.35", floor)
    assert not below_floor("1.34.1-gke.1829001", floor) and not below_floor("1.34.2-gke.1", floor)
    assert below_floor("1.33", floor) and below_floor("1.34.0", floor)


def test_an_a4x_pool_larger_than_one_nvl72_domain_is_refused():
    def edit(values):
        pool(values)["minNodes"] = pool(values)["maxNodes"] = 36

    problem = problems(edit)[0]  # (the pod range refuses 36 nodes too)
    assert problem == (
        "trainyard:gpuPools[0].maxNodes: 36 is more VMs than one 1x72 NVLink domain of a4x-highgpu-4g holds, and the "
        "pool's workload policy keeps it in one domain (allowed: 1 to 18; more VMs: another pool)"
    )


def test_a4x_max_is_refused_by_name_with_what_it_lacks():
    def edit(values):
        pool(values)["machineType"] = "a4x-maxgpu-4g-metal"

    (problem, *_) = problems(edit)
    assert problem.startswith('trainyard:gpuPools[0].machineType: "a4x-maxgpu-4g-metal" is not supported: A4X Max')
    assert "vpc-roce-metal" in problem and "(allowed: a4-highgpu-8g, a4x-highgpu-4g)" in problem


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("rdmaRanges", [f"192.168.{n}.0/24" for n in range(1, 5)]),
        ("gvnicRange", "192.168.0.0/24"),
    ],
)
def test_rdma_networks_beside_dranet_are_refused(key, value):
    def edit(values):
        values["trainyard:network"] = {key: value}

    (problem,) = problems(edit)
    assert problem.startswith(f"trainyard:network.{key}: ")
    assert "names RDMA networks beside DRANET" in problem
    assert "GKE refuses additional node networks on a DRANET node pool" in problem


def test_a_prebuilt_image_on_arm64_must_state_its_platforms():
    image = "us-docker.pkg.dev/my-project/images/fsdp:v1"

    def unstated(values):
        values["trainyard:images"] = {"fsdp": image}

    (problem,) = problems(unstated)
    assert problem.startswith(f'trainyard:images.fsdp: "{image}" is taken as linux/amd64 only')
    assert "pool 'a4x' (a4x-highgpu-4g) runs linux/arm64 images only" in problem

    def amd64_only(values):
        values["trainyard:images"] = {"fsdp": image, "fsdpPlatforms": ["linux/amd64"]}

    (problem,) = problems(amd64_only)
    assert problem.startswith('trainyard:images.fsdpPlatforms: ["linux/amd64"] has no linux/arm64 build')
    assert problem.endswith("(allowed: a list with linux/arm64)")


def test_the_nccl_smoke_check_on_a4x_runs_on_the_image_built_for_arm64():
    image = "us-docker.pkg.dev/my-project/images/nccl:v1"

    def own_image(values):
        values["trainyard:jobs"]["smoke"]["ncclImage"] = image

    (problem,) = problems(own_image)
    assert problem.startswith(f'trainyard:jobs.smoke.ncclImage: "{image}" is taken as linux/amd64 only')
    assert load(copy.deepcopy(A4X_VALUES)).nccl_smoke_on_trainer_image


def test_a_prebuilt_multi_arch_image_runs_on_a4x():
    values = copy.deepcopy(A4X_VALUES)
    values["trainyard:images"] = {
        "fsdp": "us-docker.pkg.dev/my-project/images/fsdp:v1",
        "fsdpPlatforms": ["linux/amd64", "linux/arm64"],
    }
    assert load(values).images.fsdp_platforms == ("linux/amd64", "linux/arm64")


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (lambda values: values["trainyard:cluster"].update(version="1.34.0-gke.1"), "trainyard:cluster.version"),
        (lambda values: pool(values).update(capacity="spot", reservation=None), "trainyard:gpuPools[0].capacity"),
        (lambda values: values.update({"trainyard:network": {"gvnicRange": "192.168.0.0/24"}}), "trainyard:network"),
        (lambda values: values.update({"trainyard:images": {"fsdp": "gcr.io/p/fsdp:v1"}}), "trainyard:images.fsdp"),
        (lambda values: pool(values).update(machineType="a4x-maxgpu-4g-metal"), "trainyard:gpuPools[0].machineType"),
    ],
    ids=["version", "capacity", "rdma-beside-dranet", "amd64-image", "a4x-max"],
)
def test_the_cli_exits_2_naming_the_key(tmp_path, edit, key):
    values = copy.deepcopy(A4X_VALUES)
    edit(values)
    if pool(values).get("reservation") is None:
        pool(values).pop("reservation", None)
    for entry in PROJECT_DIR.iterdir():  # the checkout beside one more stack file
        if entry.name != ".git":
            (tmp_path / entry.name).symlink_to(entry)
    (tmp_path / "Pulumi.bad.yaml").write_text(yaml.safe_dump({"config": values}))
    command = [sys.executable, "-m", "cli.main", "plan", "--stack", "bad", "--project-dir", str(tmp_path)]
    result = subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True, check=False, timeout=300)
    assert result.returncode == 2, result.stdout + result.stderr
    assert key in result.stderr
