"""Every Kubernetes object of the stack passes the schema check, mistakes in them are caught, and job config
mistakes are refused naming the key, the value and what is allowed."""

from __future__ import annotations

import copy

import pytest

from components.config.load import ConfigError, load_stack_config
from preflight.checks.kube_schemas import SchemaCheck, check_manifests
from tests.helpers.plans import as_engine_config, dev_config_values, everything_on, manifest


def test_dev_and_everything_on_plans_have_no_schema_problems(dev_plan, plan_with):
    assert check_manifests(dev_plan.manifests, "1.35") == SchemaCheck([], [])
    full = plan_with(everything_on)
    kinds = {m["kind"] for m in full.manifests}
    assert {
        "RayCluster",
        "RayJob",
        "Job",
        "ResourceClaimTemplate",
        "ClusterQueue",
        "Network",
        "DaemonSet",
        "ConfigMap",
    } <= kinds
    assert check_manifests(full.manifests, "1.35") == SchemaCheck([], [])


def problems_after(plan, kind, name, edit):
    broken = copy.deepcopy(manifest(plan, kind, name))
    edit(broken)
    return [str(problem) for problem in check_manifests([broken], "1.35").problems]


def test_typo_in_a_ray_worker_group_is_caught(dev_plan):
    def typo(job):
        group = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
        group["numOfHost"] = group.pop("numOfHosts")

    (problem,) = problems_after(dev_plan, "RayJob", "llama3-8b", typo)
    assert "spec.rayClusterSpec.workerGroupSpecs[0].numOfHost" in problem and "did you mean 'numOfHosts'" in problem


def test_wrong_type_in_a_cluster_queue_quota_is_caught(dev_plan):
    def wrong(queue):
        queue["spec"]["resourceGroups"][0]["flavors"][1]["resources"][0]["nominalQuota"] = "lots"

    (problem,) = problems_after(dev_plan, "ClusterQueue", "trainyard", wrong)
    assert "resourceGroups[0].flavors[1].resources[0].nominalQuota" in problem


def test_wrong_type_in_the_fsdp_job_is_caught(dev_plan):
    def wrong(job):
        job["spec"]["parallelism"] = "two"

    (problem,) = problems_after(dev_plan, "Job", "llama31-70b-fsdp", wrong)
    assert "spec.parallelism" in problem and "integer" in problem


def test_unknown_kind_is_caught(dev_plan):
    def unknown(network):
        network["kind"] = "Netwrok"

    (problem,) = problems_after(dev_plan, "Network", "rdma-0", unknown)
    assert "unknown kind 'Netwrok'" in problem


def test_unknown_api_version_is_caught(dev_plan):
    def old(template):
        template["apiVersion"] = "resource.k8s.io/v9"

    (problem,) = problems_after(dev_plan, "ResourceClaimTemplate", "dcn-netdev-2", old)
    assert "unknown apiVersion 'resource.k8s.io/v9'" in problem


def config_error(edit) -> str:
    values = copy.deepcopy(dev_config_values())
    edit(values)
    with pytest.raises(ConfigError) as caught:
        load_stack_config(as_engine_config(values), "dev")
    return str(caught.value)


def maxtext(values, index=0):
    return values["trainyard:jobs"]["maxtext"][index]


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda v: maxtext(v).update(extraArgs={"ici_tensor_parallelism": "3"}),
            (
                'trainyard:jobs.maxtext[0].extraArgs.ici_tensor_parallelism: "3" is a mesh size '
                "(allowed: set it as trainyard:jobs.maxtext[0].ici.tensor)"
            ),
        ),
        (
            lambda v: maxtext(v).update(extraArgs={"mesh_axes": "[data,fsdp]"}, ici={"tensor": 4}),
            "MaxText's mesh_axes (data, fsdp) have no 'tensor' axis, so MaxText would ignore it",
        ),
        (
            lambda v: maxtext(v).update(slices="v6e-64"),
            'trainyard:jobs.maxtext[0].slices: "v6e-64" is not a trainyard:tpuSlices name (allowed: v6e-16)',
        ),
        (
            lambda v: maxtext(v).update(ici={"tensor": 3}),
            (
                'trainyard:jobs.maxtext[0].ici: {"tensor": 3} cannot run: ici_fsdp_parallelism=-1 cannot be filled in: '
                "ici_tensor_parallelism=3 multiplies to 3, which does not divide the job's 16 chips per slice; "
                "allowed are ici_* sizes whose product divides 16"
            ),
        ),
        (
            lambda v: maxtext(v).update(ici={"tensor": 4, "fsdp": 2}),
            (
                "ici_fsdp_parallelism=2 x ici_tensor_parallelism=4 multiplies to 8, "
                "but the job has 16 chips per slice: "
                "allowed are ici_* sizes whose product is 16"
            ),
        ),
        (
            lambda v: maxtext(v).update(ici={"tensr": 4}),
            "trainyard:jobs.maxtext[0].ici.tensr: 4 is not a MaxText mesh axis (allowed: diloco, data",
        ),
        (
            lambda v: maxtext(v).update(dcn={"fsdp": 4}),
            (
                'trainyard:jobs.maxtext[0].dcn: {"fsdp": 4} cannot run: dcn_data_parallelism=-1 cannot be filled in: '
                "dcn_fsdp_parallelism=4 multiplies to 4, which does not divide the job's 2 slices"
            ),
        ),
        (
            lambda v: maxtext(v).update(dcn={"data": 2}, minSlices=1),
            (
                'trainyard:jobs.maxtext[0].dcn: {"data": 2} cannot run: dcn_data_parallelism=2 multiplies to 2, '
                "but the job has 1 slices: allowed are dcn_* sizes whose product is 1, "
                "or one dcn_* axis at -1 for MaxText to fill in "
                "(the job is elastic over 1..2 slices and fails at 1"
            ),
        ),
        (
            lambda v: maxtext(v).update(maxSlices=3),
            "trainyard:jobs.maxtext[0].maxSlices: 3 is more than the 2 slices of v6e-16 (allowed: 1 to 2)",
        ),
        (
            lambda v: maxtext(v).update(minSlices=2, maxSlices=1),
            "trainyard:jobs.maxtext[0].minSlices: 2 is above maxSlices (allowed: 1 to 1)",
        ),
        (
            lambda v: v["trainyard:jobs"]["fsdp"][0].update(pool="a3-pool"),
            'trainyard:jobs.fsdp[0].pool: "a3-pool" is not a trainyard:gpuPools name (allowed: gpu-nodepool-dws)',
        ),
        (
            lambda v: v["trainyard:jobs"]["fsdp"][0].update(nodes=11),
            "trainyard:jobs.fsdp[0].nodes: 11 is more than pool gpu-nodepool-dws's maxNodes (allowed: 1 to 10)",
        ),
        (
            lambda v: maxtext(v, 1).update(name="llama3-8b", enabled=True),
            'trainyard:jobs.maxtext[1].name: "llama3-8b" is already the name of trainyard:jobs.maxtext[0].name',
        ),
        (
            lambda v: v["trainyard:jobs"]["smoke"].update(enabled=True, ncclNodes=12),
            "trainyard:jobs.smoke.ncclNodes: 12 is more than pool gpu-nodepool-dws's maxNodes (allowed: 1 to 10)",
        ),
        (
            lambda v: v["trainyard:tpuSlices"].append({"name": "more", "topology": "4x4"}),
            'trainyard:tpuSlices[1].topology: "4x4" has the generation and capacity of trainyard:tpuSlices[0] too',
        ),
        (
            lambda v: v["trainyard:cluster"]["systemPool"].update(machineType="m1-ultramem-40"),
            'trainyard:cluster.systemPool.machineType: "m1-ultramem-40" has no known vCPU/memory shape',
        ),
        (
            lambda v: maxtext(v).update(stepz=5),
            (
                "trainyard:jobs.maxtext[0].stepz: is not a known key "
                "(did you mean steps? allowed: name, enabled, updatePolicy, slices, modelName, steps"
            ),
        ),
        (
            lambda v: v["trainyard:kueue"].update(version="0.19.2"),
            'trainyard:kueue.version: "0.19.2" is not allowed (allowed: a release tag such as v0.19.2)',
        ),
    ],
)
def test_job_config_mistakes_name_key_value_and_allowed(edit, expected):
    assert expected in config_error(edit)
