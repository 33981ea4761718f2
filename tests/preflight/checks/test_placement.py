"""The placement check: every pod the stack creates must fit a node of a pool it may land on."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from components.facts import gke, node_shapes
from components.facts.gke import WORKLOAD_LABEL
from preflight.checks.placement import check_placement
from preflight.checks.pods import parse_quantity
from tests.helpers.plans import manifest, one


def problems_of(plan) -> list[str]:
    return [str(problem) for problem in check_placement(plan.to_json()["resources"])[1]]


def resource(plan, kind: str, name: str) -> dict[str, Any]:
    return next(
        r
        for r in plan.to_json()["resources"]
        if r["type"].endswith(f":{kind}") and r["inputs"]["metadata"]["name"] == name
    )


def test_allocatable_follows_gkes_reservations():
    # GKE's formula (plan-node-sizes): e2-standard-8 keeps 90m CPU and 3.56 GiB + 100 MiB of memory.
    e2 = node_shapes.node_allocatable("e2-standard-8")
    assert e2.cpu_millicores == 7910
    assert e2.memory_bytes == int((32 - 3.56) * 2**30) - 100 * 2**20
    assert node_shapes.node_allocatable("a4-highgpu-8g").cpu_millicores == 223370
    assert node_shapes.node_allocatable("ct6e-standard-4t").accelerators == {gke.TPU_RESOURCE: 4}
    assert round(node_shapes.node_allocatable("e2-standard-8", 100).ephemeral_storage_bytes / 2**30) == 49


@pytest.mark.parametrize(
    ("text", "value"), [("8", 8), ("500m", 0.5), ("16Gi", 16 * 2**30), ("200G", 200e9), (2.0, 2), ("1e3", 1000)]
)
def test_quantities(text, value):
    assert parse_quantity(text) == pytest.approx(value)


def test_the_dev_stack_places_every_pod(dev_plan):
    # The RayJob's head and TPU workers, the FSDP Job, the NCCL installer, and Kueue's controller
    assert check_placement(dev_plan.to_json()["resources"]) == (5, [])


def test_a_ray_head_asking_for_a_whole_system_node_is_caught(plan_with):
    plan = plan_with(lambda values: values["trainyard:jobs"]["ray"].update(headCpu="8"))
    [problem] = problems_of(plan)
    assert re.fullmatch(
        r"RayJob trainyard/llama3-8b-[0-9a-f]{6} \(headGroupSpec\): container ray-head requests cpu 8 \(pod total 8\), "
        r"but the closest pool system \(e2-standard-8\) has 7\.91 allocatable",
        problem,
    )


def test_too_much_memory_names_the_closest_pool(plan_with):
    plan = plan_with(lambda values: values["trainyard:jobs"]["fsdp"][0].update(memory="4000Gi"))
    [problem] = problems_of(plan)
    assert re.match(
        r"Job trainyard/llama31-70b-fsdp-[0-9a-f]{6}: container trainer requests memory 4000\.00 GiB", problem
    )
    assert "closest pool gpu-nodepool-dws (a4-highgpu-8g) has 3881.77 GiB allocatable" in problem


def run_with(plan, kind: str, name: str, edit) -> list[str]:
    resources = copy.deepcopy(plan.to_json()["resources"])
    target = next(
        r
        for r in resources
        if r["type"].endswith(f":{kind}")
        and name in (r["inputs"]["metadata"]["name"], r["inputs"]["metadata"].get("labels", {}).get(WORKLOAD_LABEL))
    )
    edit(target["inputs"])
    return [str(problem) for problem in check_placement(resources)[1]]


def test_a_pod_sent_to_tpu_nodes_without_asking_for_chips_does_not_tolerate_their_taint(dev_plan):
    def head_on_tpu_nodes(job):
        del job["metadata"]["labels"][gke.QUEUE_LABEL]
        head = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
        head["nodeSelector"] = {gke.TPU_ACCELERATOR_LABEL: "tpu-v6e-slice"}

    [problem] = run_with(dev_plan, "RayJob", "llama3-8b", head_on_tpu_nodes)
    assert problem.endswith(
        "(headGroupSpec): it tolerates no taint of the pools it selects; "
        "pool v6e-16-0 has google.com/tpu=present:NoSchedule"
    )


def test_asking_for_chips_tolerates_the_tpu_taint_as_gke_adds_it(dev_plan):
    def unqueued_without_tolerations(job):
        del job["metadata"]["labels"][gke.QUEUE_LABEL]
        job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["tolerations"] = []

    assert run_with(dev_plan, "RayJob", "llama3-8b", unqueued_without_tolerations) == []


def test_a_selector_no_pool_has_lands_nowhere(dev_plan):
    def select_v5p(job):
        spec = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
        spec["nodeSelector"][gke.TPU_ACCELERATOR_LABEL] = "tpu-v5p-slice"

    [problem] = run_with(dev_plan, "RayJob", "llama3-8b", select_v5p)
    assert "(workerGroupSpecs[0]): its node selector" in problem and "match no node pool" in problem


def test_a_multi_host_group_needs_its_hosts_in_one_pool(dev_plan):
    def five_hosts(job):
        job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["numOfHosts"] = 5

    [problem] = run_with(dev_plan, "RayJob", "llama3-8b", five_hosts)
    assert problem.endswith("needs 5 pods in one pool, but pool v6e-16-0 holds at most 4 (4 nodes x 1 per node)")


def test_a_multi_host_tpu_job_must_be_confined_to_one_slice(plan_with):
    plan = plan_with(lambda values: values["trainyard:jobs"]["smoke"].update(enabled=True))
    assert problems_of(plan) == []

    def any_slice_of_the_group(job):
        del job["spec"]["template"]["spec"]["nodeSelector"][gke.NODE_POOL_LABEL]

    [problem] = run_with(plan, "Job", "smoke-jax-v6e-16-0", any_slice_of_the_group)
    assert problem.startswith("Job trainyard/smoke-jax-v6e-16-0: its 4 pods may land in different TPU slices")
    assert "(v6e-16-0, v6e-16-1)" in problem and "cloud.google.com/gke-nodepool" in problem


def test_daemonsets_take_their_share_of_every_node_they_land_on(dev_plan):
    def everywhere_with_four_cpus(daemon):
        spec = daemon["spec"]["template"]["spec"]
        del spec["affinity"]
        spec["containers"][0]["resources"] = {"requests": {"cpu": "4"}}

    [problem] = run_with(dev_plan, "DaemonSet", "nccl-rdma-installer", everywhere_with_four_cpus)
    assert re.match(
        r"RayJob trainyard/llama3-8b-[0-9a-f]{6} \(headGroupSpec\): container ray-head requests cpu 4", problem
    )
    assert problem.endswith("has 3.91 allocatable after the stack's DaemonSets")


def test_the_model_cache_fits_the_local_ssds_and_not_the_boot_disk(dev_plan, plan_with):
    pool = one(dev_plan, gke.NODE_POOL_TYPE, "gpu-nodepool-dws")
    assert pool["nodeConfig"]["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 32}
    container = manifest(dev_plan, "Job", "llama31-70b-fsdp")["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"]["ephemeral-storage"] == "1Ti"
    assert {"name": "HF_HOME", "value": "/cache/huggingface"} in container["env"]
    assert {"name": "cache", "mountPath": "/cache"} in container["volumeMounts"]
    too_big = plan_with(lambda values: values["trainyard:jobs"]["fsdp"][0].update(cacheSize="11Ti"))
    [problem] = problems_of(too_big)
    assert "requests ephemeral-storage 11264.00 GiB" in problem and "has 10700.00 GiB allocatable" in problem

    resources = copy.deepcopy(dev_plan.to_json()["resources"])
    gpu_pool = next(r for r in resources if r["type"] == gke.NODE_POOL_TYPE and r["name"] == "gpu-nodepool-dws")
    del gpu_pool["inputs"]["nodeConfig"]["ephemeralStorageLocalSsdConfig"]  # the boot disk alone
    [problem] = [str(problem) for problem in check_placement(resources)[1]]
    assert "requests ephemeral-storage 1024.00 GiB" in problem
