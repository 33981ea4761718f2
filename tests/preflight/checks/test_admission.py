"""Kueue admission as Kueue v0.19.2's code plays it: each rule fires with Kueue's own message, and passes."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from components.config.load import load_stack_config
from components.facts import kueue_release
from components.facts.gke import NODE_POOL_TYPE, QUEUE_LABEL, WORKLOAD_LABEL
from preflight.checks.admission import check_admission, workload_config_keys
from preflight.checks.kueue_objects import PodSet, pod_sets
from preflight.checks.pods import pod_requests
from preflight.verdict import check
from tests.helpers.plans import everything_on

Resources = list[dict[str, Any]]


def resources_of(plan) -> Resources:
    return copy.deepcopy(plan.to_json()["resources"])


def objects(resources: Resources, kind: str) -> list[dict[str, Any]]:
    return [r["inputs"] for r in resources if r["inputs"].get("kind") == kind]


def of_workload(resources: Resources, kind: str, workload: str) -> dict[str, Any]:
    def named(obj: dict[str, Any]) -> bool:
        return workload in (obj["metadata"]["name"], (obj["metadata"].get("labels") or {}).get(WORKLOAD_LABEL))

    (found,) = [o for o in objects(resources, kind) if named(o)]
    return found


def edit_manager_config(resources: Resources, edit: Callable[[dict[str, Any]], None]) -> None:
    (config_map,) = [o for o in objects(resources, "ConfigMap") if o["metadata"]["name"] == "kueue-manager-config"]
    config = yaml.safe_load(config_map["data"][kueue_release.MANAGER_CONFIG_FILE])
    edit(config)
    config_map["data"][kueue_release.MANAGER_CONFIG_FILE] = yaml.safe_dump(config)


def problems(resources: Resources, plan) -> list[tuple[str, str, str, str]]:
    keys = workload_config_keys(load_stack_config(plan.config, plan.stack))
    return [(p.workload.split(" ")[0], p.pod_set, p.reason, p.key) for p in check_admission(resources, keys)[1]]


def test_both_dev_jobs_are_admitted_and_where(dev_plan):
    admitted, refused = check_admission(dev_plan.to_json()["resources"])
    assert refused == []
    flavors = {a.workload.split("/")[1].rsplit("-", 1)[0]: a.flavors for a in admitted}
    assert flavors == {
        "llama31-70b-fsdp": {"main": "gpu-nodepool-dws"},
        "llama3-8b": {"head": "system", "v6e-16": "v6e-16", "submitter": "system"},
    }


def test_every_queued_workload_of_the_full_plan_is_admitted(plan_with):
    def everything_but_the_standalone_cluster(values):
        everything_on(values)
        values["trainyard:jobs"]["ray"]["enabled"] = False

    plan = plan_with(everything_but_the_standalone_cluster)
    admitted, refused = check_admission(plan.to_json()["resources"])
    queued = [m for m in plan.manifests if QUEUE_LABEL in (m["metadata"].get("labels") or {})]
    assert refused == [] and len(admitted) == len(queued) == 6  # 2 RayJobs, a JAX check per slice, NCCL, FSDP


def test_whatever_shares_the_standalone_clusters_slices_waits_forever_behind_it(plan_with):
    plan = plan_with(everything_on)
    keys = workload_config_keys(load_stack_config(plan.config, plan.stack))
    admitted, refused = check_admission(plan.to_json()["resources"], keys)
    assert {a.workload.split("/")[1].rsplit("-", 1)[0] for a in admitted} == {
        "maxtext",
        "smoke-nccl-gpu-nodepool",
        "llama31-70b-fsdp",
    }
    waiting = {(p.workload.split(" ")[0], p.pod_set, p.key) for p in refused}
    assert waiting == {("RayJob", "v6e-16", "trainyard:jobs.ray"), ("Job", "main", "trainyard:jobs.ray")}
    assert len(refused) == 4  # both RayJobs, both JAX checks
    assert all(
        p.reason.startswith(
            "waits forever behind RayCluster trainyard/maxtext, which never finishes and keeps its quota: "
        )
        and "insufficient quota for google.com/tpu in flavor v6e-16" in p.reason
        for p in refused
    )


def test_an_uncovered_request_is_refused_as_kueue_refuses_it(dev_plan):
    resources = resources_of(dev_plan)
    edit_manager_config(resources, lambda config: config["resources"].pop("excludeResourcePrefixes"))
    assert problems(resources, dev_plan) == [
        (
            "Job",
            "main",
            "couldn't assign flavors to pod set main: resource ephemeral-storage unavailable in ClusterQueue",
            "trainyard:jobs.fsdp[0]",
        )
    ]
    edit_manager_config(resources, lambda config: config["resources"].update(quotaCheckStrategy="IgnoreUndeclared"))
    assert problems(resources, dev_plan) == []


def test_an_unmapped_dra_device_class_makes_the_rayjob_inadmissible(dev_plan):
    resources = resources_of(dev_plan)
    edit_manager_config(resources, lambda config: config["resources"].pop("deviceClassMappings"))
    assert problems(resources, dev_plan) == [
        (
            "RayJob",
            "v6e-16",
            "DeviceClass netdev.google.com is not mapped in DRA configuration for podset v6e-16",
            "trainyard:jobs.maxtext[0]",
        )
    ]


def test_turning_kueue_dra_off_alone_rejects_every_claim(dev_plan):
    resources = resources_of(dev_plan)
    (controller,) = [o for o in objects(resources, "Deployment") if o["metadata"]["name"] == kueue_release.CONTROLLER]
    (manager,) = controller["spec"]["template"]["spec"]["containers"]
    manager["args"].append("--feature-gates=KueueDRAIntegration=false")  # as Kueue's flag reads it
    (refused,) = problems(resources, dev_plan)
    assert refused[2] == "Workload uses DRA resources but the KueueDRAIntegration feature gate is not enabled"


def test_a_mapped_claim_needs_the_queue_to_cover_it(dev_plan):
    resources = resources_of(dev_plan)
    (queue,) = objects(resources, "ClusterQueue")
    group = queue["spec"]["resourceGroups"][0]
    group["coveredResources"].remove("trainyard/dcn-nic")
    for flavor in group["flavors"]:
        flavor["resources"] = [r for r in flavor["resources"] if r["name"] != "trainyard/dcn-nic"]
    (refused,) = problems(resources, dev_plan)
    assert (
        refused[2]
        == "couldn't assign flavors to pod set v6e-16: resource trainyard/dcn-nic unavailable in ClusterQueue"
    )


def test_a_pod_set_without_a_topology_is_refused_by_a_tas_flavor(plan_with):
    plan = plan_with(lambda values: values["trainyard:jobs"]["smoke"].update(enabled=True))
    resources = resources_of(plan)
    smoke = of_workload(resources, "Job", "smoke-nccl-gpu-nodepool-dws")
    smoke["spec"]["template"]["metadata"]["annotations"].pop("kueue.x-k8s.io/podset-preferred-topology")
    (refused,) = problems(resources, plan)
    assert refused[0:2] == ("Job", "main") and refused[3] == "trainyard:jobs.smoke"
    assert refused[2].startswith("couldn't assign flavors to pod set main: ")
    assert 'Flavor "gpu-nodepool-dws" supports only TopologyAwareScheduling' in refused[2]


def test_pod_sets_of_one_workload_add_up_against_the_quota(dev_plan):
    resources = resources_of(dev_plan)
    (queue,) = objects(resources, "ClusterQueue")
    for flavor in queue["spec"]["resourceGroups"][0]["flavors"]:
        if flavor["name"] == "gpu-nodepool-dws":
            next(r for r in flavor["resources"] if r["name"] == "nvidia.com/gpu")["nominalQuota"] = 8
    (refused,) = problems(resources, dev_plan)
    # Kueue gives every flavor's reason: the CPU flavors lack the topology, the A4 flavor the quota.
    assert (
        refused[2].startswith("couldn't assign flavors to pod set main: ")
        and (
            "insufficient quota for nvidia.com/gpu in flavor gpu-nodepool-dws, previously considered podsets requests "
            "(0) + current podset request (16) > maximum capacity (8)"
        )
        in refused[2]
    )


def test_a_provisioning_request_needs_a_queued_pool_to_serve_it(dev_plan):
    resources = resources_of(dev_plan)
    for resource in resources:
        if resource["type"] == NODE_POOL_TYPE:
            resource["inputs"].pop("queuedProvisioning", None)
    (refused,) = problems(resources, dev_plan)
    assert refused[1] == "main" and refused[2].startswith("admission check dws-prov asks GKE for nodes of flavor")


def test_a_missing_local_queue_is_named(dev_plan):
    resources = resources_of(dev_plan)
    for queue in objects(resources, "LocalQueue"):
        queue["metadata"]["name"] = "elsewhere"
    assert {refused[2] for refused in problems(resources, dev_plan)} == {"LocalQueue trainyard doesn't exist"}


@pytest.mark.parametrize("capacity", ["flexStart", "spot", "onDemand"])
def test_every_tpu_capacity_reaches_nodes(plan_with, capacity):
    plan = plan_with(lambda values: values["trainyard:tpuSlices"][0].update(capacity=capacity))
    assert check_admission(plan.to_json()["resources"])[1] == []


def test_pod_sets_as_kueue_builds_them():
    worker = {"groupName": "V6E", "replicas": 2, "numOfHosts": 4, "template": {"spec": {}}}
    rayjob = {"spec": {"rayClusterSpec": {"headGroupSpec": {"template": {}}, "workerGroupSpecs": [worker]}}}
    assert [(s.name, s.count) for s in pod_sets("RayJob", rayjob)] == [("head", 1), ("v6e", 8), ("submitter", 1)]
    rayjob["spec"]["submissionMode"] = "HTTPMode"
    assert [s.name for s in pod_sets("RayJob", rayjob)] == ["head", "v6e"]
    job = {"spec": {"parallelism": 4, "completions": 2, "template": {}}}
    assert [(s.name, s.count) for s in pod_sets("Job", job)] == [("main", 2)]


def test_an_elastic_rayjob_is_admitted_only_whole(plan_with):
    def elastic(values):
        values["trainyard:jobs"]["maxtext"][0].update(minSlices=1, maxSlices=2)

    plan = plan_with(elastic)
    rayjob = next(m for m in plan.manifests if m["kind"] == "RayJob")
    workers = next(s for s in pod_sets("RayJob", rayjob) if s.name == "v6e-16")
    assert workers.count == 2 * 4  # maxSlices x hosts per slice: no pod set of fewer
    assert check_admission(plan.to_json()["resources"])[1] == []


def test_per_pod_requests_as_kueue_sums_them():
    container = {"resources": {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}}}
    init = {"resources": {"requests": {"cpu": "3"}}}
    sidecar = {"restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}}
    spec = {"containers": [container, container], "initContainers": [sidecar, init], "overhead": {"cpu": "100m"}}
    requests = pod_requests(spec)
    assert requests == {"cpu": pytest.approx(3.6), "memory": 2 * 2**30}
    assert PodSet("main", 1, spec, {}).count == 1


def test_a_workload_kueue_refuses_fails_the_run(dev_plan):
    verdict = check(dev_plan, {})
    assert not verdict.failed and len(verdict.admitted) == 2
    resources = resources_of(dev_plan)
    edit_manager_config(resources, lambda config: config.pop("resources"))
    refused = check_admission(resources)[1]
    assert dataclasses.replace(verdict, admission=refused).failed


def reservation_pool(min_nodes: int):
    def edit(values):
        pool = values["trainyard:gpuPools"][0]
        pool.update(capacity="reservation", reservation="my-a4", minNodes=min_nodes, maxNodes=2)
        values["trainyard:jobs"]["fsdp"][0]["nodes"] = 2

    return edit


def test_a_pool_the_autoscaler_grows_from_zero_is_not_placed_by_topology(plan_with):
    plan = plan_with(reservation_pool(min_nodes=0))
    assert "topologyName" not in of_workload(resources_of(plan), "ResourceFlavor", "gpu-nodepool-dws")["spec"]
    fsdp = of_workload(resources_of(plan), "Job", "llama31-70b-fsdp")
    assert "kueue.x-k8s.io/podset-preferred-topology" not in fsdp["spec"]["template"]["metadata"]["annotations"]
    assert check_admission(plan.to_json()["resources"])[1] == []


def test_topology_aware_placement_needs_nodes_that_exist_or_a_provisioning_request(plan_with):
    held = plan_with(reservation_pool(min_nodes=2))  # held at full size: its nodes exist
    assert (
        of_workload(resources_of(held), "ResourceFlavor", "gpu-nodepool-dws")["spec"]["topologyName"] == "gke-default"
    )
    assert check_admission(held.to_json()["resources"])[1] == []
    resources = resources_of(held)
    for resource in resources:
        if resource["type"] == NODE_POOL_TYPE and resource["name"] == "gpu-nodepool-dws":
            resource["inputs"]["autoscaling"]["totalMinNodeCount"] = 0  # scaled from zero, as before
            resource["inputs"]["initialNodeCount"] = 0
    (refused,) = problems(resources, held)
    assert refused[1] == "main" and refused[2].startswith(
        "no topology domains at level: cloud.google.com/gce-topology-block (flavor gpu-nodepool-dws places by "
        "topology on nodes that exist, and no ProvisioningRequest check brings them: its pools keep 0 places"
    )


def test_pod_set_names_must_be_unique(dev_plan):
    """The stack refuses such a slice group name when it loads (tests/components/config/test_sizes_and_names.py);
    a RayJob edited by hand still meets Kueue's rule here."""
    resources = resources_of(dev_plan)
    (rayjob,) = objects(resources, "RayJob")
    rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["groupName"] = "submitter"
    (refused,) = problems(resources, dev_plan)
    assert (
        refused[2]
        == "pod set submitter is named twice: Kueue cannot create the Workload (pod set names must be unique)"
    )


def test_each_smoke_job_is_named_by_its_config_key(plan_with):
    plan = plan_with(lambda values: values["trainyard:jobs"]["smoke"].update(enabled=True))
    keys = workload_config_keys(load_stack_config(plan.config, plan.stack))
    smoke = [
        m["metadata"]["name"]
        for m in plan.manifests
        if m["kind"] == "Job" and m["metadata"]["name"].startswith("smoke-")
    ]
    assert len(smoke) == 3 and all(keys[name] == "trainyard:jobs.smoke" for name in smoke)
