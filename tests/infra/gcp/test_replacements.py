"""Every change the diff shows can be carried out: fixed names delete first, jobs follow their pools, and a kept
bucket is adopted."""

from __future__ import annotations

from components.facts import gke
from components.facts.images import REPOSITORY_TYPE
from preflight import diff_markdown, plan_diff
from tests.infra.helpers.plans import manifest

FIXED_NAME_TYPES = {
    gke.CLUSTER_TYPE,
    gke.NODE_POOL_TYPE,
    gke.NETWORK_TYPE,
    gke.SUBNETWORK_TYPE,
    gke.FIREWALL_TYPE,
    REPOSITORY_TYPE,
}


def test_every_fixed_name_gcp_resource_is_deleted_before_its_replacement(dev_plan):
    fixed = [r for r in dev_plan.resources if r.type in FIXED_NAME_TYPES]
    gcp = [r for r in dev_plan.resources if r.type.startswith("gcp:")]
    assert len(fixed) == len(gcp) - 2  # all but the bucket (retained, adopted instead) and its IAM grant
    assert [r.name for r in fixed if not r.delete_before_replace] == []
    assert not next(r for r in dev_plan.resources if r.type == gke.BUCKET_TYPE).delete_before_replace


def test_a_driver_change_says_the_pool_and_its_pods_are_down_meanwhile(dev_plan, plan_with):
    head = plan_with(lambda values: values["trainyard:gpuPools"][0].update(gpuDriverVersion="LATEST"))
    markdown = diff_markdown.render_markdown(plan_diff.compare(dev_plan.to_json(), head.to_json()), "base")
    assert (
        "> **NodePool `gpu-nodepool-dws` will be REPLACED, deleted first** (its name is fixed) because of "
        "`nodeConfig.guestAccelerators[0].gpuDriverInstallationConfig.gpuDriverVersion`: its nodes and every pod "
        "on them are gone until the new pool's nodes are ready."
    ) in markdown


def test_jobs_depend_on_the_pools_they_run_on(dev_plan):
    urn_of = {(r.type, r.name): r.urn for r in dev_plan.resources}
    by_urn = {r.urn: r for r in dev_plan.resources}
    fsdp = manifest(dev_plan, "Job", "llama31-70b-fsdp")["metadata"]["name"]
    job = next(r for r in dev_plan.resources if r.type.endswith(":Job") and r.inputs["metadata"]["name"] == fsdp)
    assert urn_of[(gke.NODE_POOL_TYPE, "gpu-nodepool-dws")] in job.dependencies
    rayjob = next(r for r in dev_plan.resources if r.type.endswith(":RayJob"))
    assert {urn_of[(gke.NODE_POOL_TYPE, f"v6e-16-{i}")] for i in range(2)} <= set(rayjob.dependencies)
    assert all(by_urn[urn] for urn in job.dependencies)


def test_a_kept_bucket_is_adopted_not_created(plan_with):
    adopted = plan_with(lambda values: values["trainyard:storage"].update(adopt=True))
    bucket = next(r for r in adopted.to_json()["resources"] if r["type"] == gke.BUCKET_TYPE)
    assert bucket["options"] == {"retainOnDelete": True, "import": "trainyard-dev-data"}
