"""Every change the diff shows can be carried out: fixed names delete first, jobs follow their pools, and a kept
bucket is adopted."""

from __future__ import annotations

from components.facts import gke
from components.facts.images import REPOSITORY_TYPE
from preflight.diff import compare
from preflight.diff.markdown import render_markdown
from tests.helpers.plans import manifest

FIXED_NAME_TYPES = {
    gke.CLUSTER_TYPE,
    gke.NODE_POOL_TYPE,
    gke.NETWORK_TYPE,
    gke.SUBNETWORK_TYPE,
    gke.ROUTER_TYPE,
    gke.ROUTER_NAT_TYPE,
    gke.FIREWALL_TYPE,
    REPOSITORY_TYPE,
    gke.SERVICE_ACCOUNT_TYPE,
}


def test_every_fixed_name_gcp_resource_is_deleted_before_its_replacement(dev_plan):
    fixed = [r for r in dev_plan.resources if r.type in FIXED_NAME_TYPES]
    named = [r for r in dev_plan.resources if r.type.startswith("gcp:") and "iammember" not in r.type.lower()]
    assert len(fixed) == len(named) - 1  # all but the bucket (retained, adopted instead); grants have no name
    assert [r.name for r in fixed if not r.delete_before_replace] == []
    assert not next(r for r in dev_plan.resources if r.type == gke.BUCKET_TYPE).delete_before_replace


def test_a_driver_change_says_the_pool_and_its_pods_are_down_meanwhile(dev_plan, plan_with):
    head = plan_with(lambda values: values["trainyard:gpuPools"][0].update(gpuDriverVersion="LATEST"))
    markdown = render_markdown(compare.compare(dev_plan.to_json(), head.to_json()), "base")
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


def test_each_node_role_has_its_own_least_privilege_service_account(dev_plan):
    accounts = {r.name: r.inputs for r in dev_plan.resources if r.type == gke.SERVICE_ACCOUNT_TYPE}
    assert {name: inputs["accountId"] for name, inputs in accounts.items()} == {
        "system-nodes": "trainyard-dev-system",
        "tpu-nodes": "trainyard-dev-tpu",
        "gpu-nodes": "trainyard-dev-gpu",
    }
    grants = [r.inputs for r in dev_plan.resources if r.type == "gcp:projects/iAMMember:IAMMember"]
    assert sorted((g["role"], g["member"]) for g in grants) == sorted(
        (
            "roles/container.defaultNodeServiceAccount",
            f"serviceAccount:trainyard-dev-{role}@trainyard-dev.iam.gserviceaccount.com",
        )
        for role in ("system", "tpu", "gpu")
    )
    node_members = {
        f"serviceAccount:{inputs['accountId']}@trainyard-dev.iam.gserviceaccount.com" for inputs in accounts.values()
    }
    registry_grants = [r.inputs for r in dev_plan.resources if r.type.endswith(":RepositoryIamMember")]
    readers = [g for g in registry_grants if g["member"] in node_members]
    assert {(g["repository"], g["role"]) for g in readers} == {("trainyard", "roles/artifactregistry.reader")}
    assert len(readers) == 3
    pools = {
        r.name: r.inputs["nodeConfig"]["serviceAccount"] for r in dev_plan.resources if r.type == gke.NODE_POOL_TYPE
    }
    assert pools == {
        "system": "trainyard-dev-system@trainyard-dev.iam.gserviceaccount.com",
        "v6e-16-0": "trainyard-dev-tpu@trainyard-dev.iam.gserviceaccount.com",
        "v6e-16-1": "trainyard-dev-tpu@trainyard-dev.iam.gserviceaccount.com",
        "gpu-nodepool-dws": "trainyard-dev-gpu@trainyard-dev.iam.gserviceaccount.com",
    }


def test_service_account_ids_fit_thirty_characters():
    from components.facts.gcp_names import service_account_id

    assert service_account_id("trainyard-dev", "system") == "trainyard-dev-system"
    long = service_account_id("a-very-long-cluster-name-of-forty-chars", "system")
    assert len(long) == 30 and long.endswith("-system") and long.startswith("a-very-long-clus")
    assert service_account_id("a-very-long-cluster-name-of-forty-chars", "gpu") != service_account_id(
        "a-very-long-cluster-name-of-forty-charz", "gpu"
    )


def spread_spot(values):
    values["trainyard:gpuPools"][0].update(capacity="spot", compactPlacement=False)
    values["trainyard:jobs"]["fsdp"][0]["enabled"] = False  # no TAS request left to point at a missing level


def test_a_tas_flavor_losing_its_topology_is_called_out_as_refused(dev_plan, plan_with):
    diff = compare.compare(dev_plan.to_json(), plan_with(spread_spot).to_json())
    markdown = render_markdown(diff, "base")
    assert "> **ResourceFlavor `resourceflavor-gpu-nodepool-dws`: Kueue will refuse this update**" in markdown
    assert "`spec.topologyName`" in markdown


def test_a_flavor_gaining_a_topology_is_an_ordinary_update(dev_plan, plan_with):
    diff = compare.compare(plan_with(spread_spot).to_json(), dev_plan.to_json())
    flavor = next(c for c in diff.changed if c.name == "resourceflavor-gpu-nodepool-dws")
    assert "spec.topologyName" in [c.path for c in flavor.changes]
    assert "Kueue will refuse" not in render_markdown(diff, "base")


def test_a_cluster_version_change_says_it_restarts_the_control_plane_and_upgrades_nodes(dev_plan, plan_with):
    head = plan_with(lambda values: values["trainyard:cluster"].update(version="1.36"))
    markdown = render_markdown(compare.compare(dev_plan.to_json(), head.to_json()), "base")
    assert "> **Cluster `trainyard-dev`: GKE version `1.35` → `1.36` restarts the control plane**" in markdown
    assert "node pools with auto-upgrade follow it" in markdown
