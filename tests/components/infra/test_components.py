"""How the components shape the plan: parents, what is created only when needed, storage safety, outputs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from components.config.load import ConfigError, load_stack_config
from components.facts import gke
from components.infra.cluster import kubeconfig
from tests.helpers.plans import as_engine_config, dev_config_values, one

STACK_ROOT = "urn:pulumi:dev::trainyard::pulumi:pulumi:Stack::trainyard-dev"


def test_every_resource_has_a_component_parent(dev_plan):
    components = {r.urn for r in dev_plan.resources if not r.custom}
    for resource in dev_plan.resources:
        if resource.type == "trainyard:infra:Stack":
            assert resource.parent == STACK_ROOT
        else:
            assert resource.parent in components, resource.urn


def test_urns_carry_the_whole_parent_type_chain(dev_plan):
    pool = next(r for r in dev_plan.resources if r.name == "v6e-16-0")
    assert pool.urn == (
        "urn:pulumi:dev::trainyard::trainyard:infra:Stack$trainyard:infra:TpuSlices$"
        "gcp:container/nodePool:NodePool::v6e-16-0"
    )


def test_pools_depend_on_the_cluster(dev_plan):
    cluster_urn = next(r.urn for r in dev_plan.resources if r.type == "gcp:container/cluster:Cluster")
    for pool in dev_plan.of_type("gcp:container/nodePool:NodePool"):
        assert cluster_urn in pool.dependencies, pool.name


def test_kubernetes_objects_use_the_cluster_provider(dev_plan):
    provider = next(r.urn for r in dev_plan.resources if r.type == "pulumi:providers:kubernetes")
    assert one(dev_plan, "pulumi:providers:kubernetes", "cluster-k8s") == {
        "kubeconfig": "[secret]",
        "clusterIdentifier": "trainyard-dev/us-east5-b/trainyard-dev",
        "enableServerSideApply": "true",  # Kueue's Workload CRD: over client-side apply's limit
    }
    for resource in dev_plan.resources:
        if resource.type.startswith("kubernetes:"):
            assert resource.provider == provider


def test_single_slice_single_host_stack_makes_no_dcn_or_gpu_networks(plan_with):
    def single_2x2(values):
        values["trainyard:tpuSlices"] = [{"name": "small", "topology": "2x2"}]
        values["trainyard:gpuPools"] = []
        values.pop("trainyard:jobs", None)  # the dev jobs name the dev pools

    plan = plan_with(single_2x2)
    assert [n.name for n in plan.of_type("gcp:compute/network:Network")] == ["trainyard-dev-primary"]
    pool = one(plan, "gcp:container/nodePool:NodePool", "small-0")
    assert "placementPolicy" not in pool and "networkConfig" not in pool
    assert pool["nodeCount"] == 1.0 and pool["nodeConfig"]["machineType"] == "ct6e-standard-4t"


def test_slice_count_and_topology_drive_the_pools(plan_with):
    def two_4x8(values):
        values["trainyard:tpuSlices"][0].update(topology="4x8", count=2, name="v6e-32")
        values.pop("trainyard:jobs", None)  # the dev jobs name the dev slices

    plan = plan_with(two_4x8)
    pools = [p for p in plan.of_type("gcp:container/nodePool:NodePool") if p.name.startswith("v6e-32")]
    assert [p.name for p in pools] == ["v6e-32-0", "v6e-32-1"]  # plans list resources in URN order
    assert {p.inputs["nodeCount"] for p in pools} == {8.0}
    assert {p.inputs["placementPolicy"]["tpuTopology"] for p in pools} == {"4x8"}


def test_capacity_modes(plan_with):
    def modes(values):
        values["trainyard:tpuSlices"] = [
            {"name": "spot", "topology": "4x4", "capacity": "spot"},
            {"name": "res", "topology": "4x4", "capacity": "reservation", "reservation": "v6e-res"},
        ]
        values["trainyard:gpuPools"] = [
            {"name": "a4-spot", "maxNodes": 2, "capacity": "spot"},
            {"name": "a4-flex", "maxNodes": 2, "capacity": "flexStart"},
        ]
        values.pop("trainyard:jobs", None)  # the dev jobs name the dev pools

    plan = plan_with(modes)
    spot = one(plan, "gcp:container/nodePool:NodePool", "spot-0")
    assert spot["nodeConfig"]["spot"] is True and spot["management"] == {"autoRepair": True, "autoUpgrade": True}
    reserved = one(plan, "gcp:container/nodePool:NodePool", "res-0")
    assert reserved["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["v6e-res"],
    }
    a4_spot = one(plan, "gcp:container/nodePool:NodePool", "a4-spot")
    assert a4_spot["nodeConfig"]["spot"] is True and "queuedProvisioning" not in a4_spot
    assert "locationPolicy" not in a4_spot["autoscaling"]
    a4_flex = one(plan, "gcp:container/nodePool:NodePool", "a4-flex")
    assert a4_flex["nodeConfig"]["flexStart"] is True and "queuedProvisioning" not in a4_flex


def test_bucket_is_locked_down_and_outlives_destroy(dev_plan):
    bucket = one(dev_plan, "gcp:storage/bucket:Bucket", "trainyard-dev-data")
    assert bucket["uniformBucketLevelAccess"] is True
    assert bucket["publicAccessPrevention"] == "enforced"
    assert bucket["hierarchicalNamespace"] == {"enabled": True}
    assert bucket["forceDestroy"] is False


def test_deleted_checkpoints_stay_restorable_for_the_configured_days(dev_plan, plan_with):
    bucket = one(dev_plan, "gcp:storage/bucket:Bucket", "trainyard-dev-data")
    assert bucket["softDeletePolicy"] == {"retentionDurationSeconds": 7 * 86_400}
    plan = plan_with(lambda values: values["trainyard:storage"].update({"softDeleteDays": 30}))
    bucket = one(plan, "gcp:storage/bucket:Bucket", "trainyard-dev-data")
    assert bucket["softDeletePolicy"] == {"retentionDurationSeconds": 30 * 86_400}


@pytest.mark.parametrize(("days", "shown"), [(0, "0 is out of range"), (6, "6 is out of range"), (91, "91 is out")])
def test_soft_delete_cannot_be_switched_off_or_set_outside_what_gcs_takes(days, shown):
    values = dev_config_values()
    values["trainyard:storage"]["softDeleteDays"] = days
    with pytest.raises(ConfigError) as error:
        load_stack_config(as_engine_config(values), "dev")
    assert f"trainyard:storage.softDeleteDays: {shown}" in str(error.value)
    assert "(allowed: 7 to 90)" in str(error.value)


def test_workload_identity_principal_gets_object_user(dev_plan):
    member = one(dev_plan, "gcp:storage/bucketIAMMember:BucketIAMMember", "trainyard-dev-data-workload-object-user")
    assert member["role"] == "roles/storage.objectUser"
    assert member["member"] == (
        "principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/"
        "trainyard-dev.svc.id.goog/subject/ns/trainyard/sa/trainyard-runner"
    )
    assert not any("serviceaccount/key" in r.type or "serviceAccountKey" in r.type for r in dev_plan.resources)


def test_outputs(dev_plan):
    dns_endpoint = dev_plan.outputs.pop("clusterDnsEndpoint")
    assert re.fullmatch(r"gke-[0-9a-f]{32}-123456789012\.us-east5\.gke\.goog", dns_endpoint)
    assert dev_plan.outputs == {
        "clusterName": "trainyard-dev",
        "clusterEndpoint": "203.0.113.10",
        "kubeconfig": "[secret]",
        "bucket": "trainyard-dev-data",
        "tpuPools": ["v6e-16-0", "v6e-16-1"],
        "gpuPools": ["gpu-nodepool-dws"],
        "getCredentials": (
            "gcloud container clusters get-credentials trainyard-dev --location us-east5-b --project trainyard-dev"
            " --dns-endpoint"
        ),
    }


PINNED_URNS_FILE = Path(__file__).with_name("dev_plan_urns.txt")
CODE_CONFIG_MAP = re.compile(
    r"::workloads-(fsdp|maxtext)-[0-9a-f]{16}$"
)  # named by the trainer code's hash, on purpose


def pinned_urns() -> set[str]:
    lines = PINNED_URNS_FILE.read_text().splitlines()
    return {line for line in lines if line and not line.startswith("#")}


def test_every_pinned_urn_is_kept_or_aliased(dev_plan):
    current = {r.urn for r in dev_plan.resources}
    aliased = {alias for r in dev_plan.resources for alias in r.aliases}
    assert sorted(pinned_urns() - current - aliased) == []


def test_every_urn_is_pinned_so_new_identities_are_deliberate(dev_plan):
    pinned = pinned_urns()
    unpinned = [
        r.urn
        for r in dev_plan.resources
        if r.urn not in pinned and not CODE_CONFIG_MAP.search(r.urn) and not set(r.aliases) & pinned
    ]
    assert unpinned == []


def test_namespace_and_service_account_keep_their_urns_under_storage_through_aliases(dev_plan):
    old_parent = "urn:pulumi:dev::trainyard::trainyard:infra:Stack$trainyard:infra:Storage"
    for type_, name in (
        ("kubernetes:core/v1:Namespace", "trainyard"),
        ("kubernetes:core/v1:ServiceAccount", "trainyard-runner"),
    ):
        [resource] = [r for r in dev_plan.resources if (r.type, r.name) == (type_, name)]
        assert resource.parent.endswith("$trainyard:k8s:WorkloadNamespace::workload-namespace")
        assert resource.aliases == [f"{old_parent}${type_}::{name}"]


def test_every_gcp_name_the_stack_derives_is_one_gcp_accepts(plan_with):
    from components.facts import gcp_names

    def longest_names(values):
        values["trainyard:cluster"]["name"] = "c" * gcp_names.CLUSTER_NAME_MAX
        values["trainyard:tpuSlices"][0]["name"] = "t" * (gcp_names.NODE_POOL_NAME_MAX - 2)
        values["trainyard:jobs"]["maxtext"][0]["slices"] = "t" * (gcp_names.NODE_POOL_NAME_MAX - 2)

    plan = plan_with(longest_names)
    limits = {
        "gcp:container/cluster:Cluster": gcp_names.CLUSTER_NAME_MAX,
        "gcp:container/nodePool:NodePool": gcp_names.NODE_POOL_NAME_MAX,
    }
    named = [r for r in plan.resources if r.type.startswith(("gcp:compute/", "gcp:container/")) and "name" in r.inputs]
    assert len(named) > 20
    for resource in named:
        longest = limits.get(resource.type, gcp_names.COMPUTE_NAME_MAX)
        assert gcp_names.rfc1035_problem(resource.inputs["name"], longest) is None, (
            resource.type,
            resource.inputs["name"],
        )


def test_private_nodes_egress_through_cloud_nat_on_the_primary_vpc(dev_plan):
    cluster = one(dev_plan, "gcp:container/cluster:Cluster", "trainyard-dev")
    assert cluster["privateClusterConfig"]["enablePrivateNodes"] is True
    assert one(dev_plan, "gcp:compute/subnetwork:Subnetwork", "trainyard-dev-primary")["privateIpGoogleAccess"] is True
    router = one(dev_plan, gke.ROUTER_TYPE, "trainyard-dev-router")
    assert router["network"].endswith("trainyard-dev-primary-id") and router["region"] == "us-east5"
    nat = one(dev_plan, gke.ROUTER_NAT_TYPE, "trainyard-dev-nat")
    assert nat["router"] == "trainyard-dev-router"
    assert nat["sourceSubnetworkIpRangesToNat"] == "ALL_SUBNETWORKS_ALL_IP_RANGES"
    nat_urn = next(r.urn for r in dev_plan.resources if r.name == "trainyard-dev-nat")
    assert nat_urn in next(r for r in dev_plan.resources if r.name == "trainyard-dev").dependencies


def test_public_nodes_make_no_nat(plan_with):
    office = {"name": "office", "cidr": "203.0.113.0/24"}
    plan = plan_with(
        lambda values: values["trainyard:cluster"].update(
            privateNodes=False, publicEndpoint=True, authorizedNetworks=[office]
        )
    )
    assert one(plan, "gcp:container/cluster:Cluster", "trainyard-dev")["privateClusterConfig"] == {
        "enablePrivateNodes": False
    }
    assert not plan.of_type(gke.ROUTER_NAT_TYPE) and not plan.of_type(gke.ROUTER_TYPE)


def test_the_control_plane_ip_endpoint_is_closed_and_the_dns_endpoint_checks_iam(dev_plan):
    cluster = one(dev_plan, gke.CLUSTER_TYPE, "trainyard-dev")
    assert cluster["privateClusterConfig"] == {"enablePrivateNodes": True, "enablePrivateEndpoint": True}
    assert "masterAuthorizedNetworksConfig" not in cluster
    assert cluster["controlPlaneEndpointsConfig"] == {"dnsEndpointConfig": {"allowExternalTraffic": True}}


def test_a_public_ip_endpoint_admits_only_the_configured_ranges(plan_with):
    def public(values):
        office = {"name": "office", "cidr": "203.0.113.0/24"}
        values["trainyard:cluster"].update(publicEndpoint=True, authorizedNetworks=[office])

    cluster = one(plan_with(public), gke.CLUSTER_TYPE, "trainyard-dev")
    assert cluster["privateClusterConfig"] == {"enablePrivateNodes": True}
    assert cluster["masterAuthorizedNetworksConfig"] == {
        "cidrBlocks": [{"displayName": "office", "cidrBlock": "203.0.113.0/24"}],
        "gcpPublicCidrsAccessEnabled": False,
    }


def test_the_kubeconfig_reaches_the_dns_endpoint_through_the_gcloud_plugin():
    config = json.loads(kubeconfig("trainyard-dev", "gke-abc-1.us-east5.gke.goog"))
    assert config["clusters"] == [
        {"name": "trainyard-dev", "cluster": {"server": "https://gke-abc-1.us-east5.gke.goog"}}
    ]
    assert config["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"


def test_every_pool_boots_securely(dev_plan):
    pools = dev_plan.of_type(gke.NODE_POOL_TYPE)
    assert {pool.name for pool in pools} == {"system", "v6e-16-0", "v6e-16-1", "gpu-nodepool-dws"}
    for pool in pools:
        shielded = pool.inputs["nodeConfig"]["shieldedInstanceConfig"]
        assert shielded == {"enableSecureBoot": True, "enableIntegrityMonitoring": True}, pool.name


SECRETS_KEY = "projects/trainyard-kms/locations/us-east5/keyRings/gke/cryptoKeys/etcd"


def test_secrets_are_encrypted_with_the_configured_key_gke_may_use(plan_with):
    plan = plan_with(lambda values: values["trainyard:cluster"].update(secretsEncryptionKey=SECRETS_KEY))
    cluster = one(plan, gke.CLUSTER_TYPE, "trainyard-dev")
    assert cluster["databaseEncryption"] == {"state": "ENCRYPTED", "keyName": SECRETS_KEY}
    grant = one(plan, "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember", "trainyard-dev-secrets-key-gke")
    assert grant == {
        "cryptoKeyId": SECRETS_KEY,
        "role": "roles/cloudkms.cryptoKeyEncrypterDecrypter",
        "member": "serviceAccount:service-123456789012@container-engine-robot.iam.gserviceaccount.com",
    }
    grant_urn = next(r.urn for r in plan.resources if r.name == "trainyard-dev-secrets-key-gke")
    assert grant_urn in next(r for r in plan.resources if r.name == "trainyard-dev").dependencies


def test_without_a_key_secrets_use_google_managed_encryption(dev_plan):
    assert "databaseEncryption" not in one(dev_plan, gke.CLUSTER_TYPE, "trainyard-dev")
    assert not dev_plan.of_type("gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember")
