"""One assertion per gcloud flag of the seeds, on the engine-shaped inputs of the dev stack's plan.

Sources: docs/cloud-facts.md ("the A4 fine-tune": the A4/DWS tutorial's setup.sh) and the node-pool commands
of the Ray MaxText multislice and first-JAX-job TPU tutorials.
"""

from __future__ import annotations

import pytest

from tests.helpers.plans import one

CLUSTER = ("gcp:container/cluster:Cluster", "trainyard-dev")
DWS_POOL = ("gcp:container/nodePool:NodePool", "gpu-nodepool-dws")
TPU_POOL = ("gcp:container/nodePool:NodePool", "v6e-16-0")
SYSTEM_POOL = ("gcp:container/nodePool:NodePool", "system")
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"


@pytest.fixture(scope="module")
def cluster(dev_plan):
    return one(dev_plan, *CLUSTER)


@pytest.fixture(scope="module")
def dws(dev_plan):
    return one(dev_plan, *DWS_POOL)


@pytest.fixture(scope="module")
def tpu(dev_plan):
    return one(dev_plan, *TPU_POOL)


def secondary_range(plan, name):
    subnet = one(plan, "gcp:compute/subnetwork:Subnetwork", "trainyard-dev-primary")
    return {r["rangeName"]: r["ipCidrRange"] for r in subnet["secondaryIpRanges"]}[name]


# --- cluster: FACTS A and the multislice seed's `clusters create`
def test_enable_dataplane_v2(cluster):
    assert cluster["datapathProvider"] == "ADVANCED_DATAPATH"


def test_enable_ip_alias(cluster):
    assert cluster["ipAllocationPolicy"] == {
        "clusterSecondaryRangeName": "pods",
        "servicesSecondaryRangeName": "services",
    }


def test_enable_multi_networking(cluster):
    assert cluster["enableMultiNetworking"] is True


def test_workload_pool(cluster):
    assert cluster["workloadIdentityConfig"] == {"workloadPool": "trainyard-dev.svc.id.goog"}


def test_cluster_ipv4_cidr(dev_plan):
    assert secondary_range(dev_plan, "pods") == "10.64.0.0/19"


def test_services_ipv4_cidr(dev_plan):
    assert secondary_range(dev_plan, "services") == "10.65.0.0/19"


def test_addons_ray_operator_with_logging_and_monitoring(cluster):
    (ray,) = cluster["addonsConfig"]["rayOperatorConfigs"]
    assert ray == {
        "enabled": True,
        "rayClusterLoggingConfig": {"enabled": True},
        "rayClusterMonitoringConfig": {"enabled": True},
    }


def test_addons_gcs_fuse_csi_driver(cluster):
    assert cluster["addonsConfig"]["gcsFuseCsiDriverConfig"] == {"enabled": True}


def test_no_enable_autoupgrade_means_no_release_channel(cluster):
    assert cluster["releaseChannel"] == {"channel": "UNSPECIFIED"}


def test_cluster_version(cluster):
    assert cluster["minMasterVersion"] == "1.35"


def test_enable_managed_prometheus(cluster):
    assert cluster["monitoringConfig"]["managedPrometheus"] == {"enabled": True}


def test_monitoring_system_and_dcgm(cluster):
    assert cluster["monitoringConfig"]["enableComponents"] == ["SYSTEM_COMPONENTS", "DCGM"]


def test_default_pool_replaced_by_system_pool(cluster, dev_plan):
    assert cluster["removeDefaultNodePool"] is True
    system = one(dev_plan, *SYSTEM_POOL)
    assert system["nodeConfig"]["machineType"] == "e2-standard-8"
    assert system["autoscaling"] == {"minNodeCount": 3.0, "maxNodeCount": 5.0}


# --- DWS pool: FACTS A `node-pools create gpu-nodepool-dws`
def test_dws_machine_type(dws):
    assert dws["nodeConfig"]["machineType"] == "a4-highgpu-8g"


def test_dws_accelerator(dws):
    assert dws["nodeConfig"]["guestAccelerators"] == [
        {"type": "nvidia-b200", "count": 8.0, "gpuDriverInstallationConfig": {"gpuDriverVersion": "DEFAULT"}}
    ]


def test_dws_reservation_affinity_none(dws):
    assert dws["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}


def test_dws_location_policy_any(dws):
    assert dws["autoscaling"]["locationPolicy"] == "ANY"


def test_dws_enable_queued_provisioning(dws):
    assert dws["queuedProvisioning"] == {"enabled": True}


def test_dws_flex_start(dws):
    assert dws["nodeConfig"]["flexStart"] is True


def test_dws_no_autoupgrade_no_autorepair(dws):
    assert dws["management"] == {"autoUpgrade": False, "autoRepair": False}


def test_dws_autoscaling_from_zero_to_total_max(dws):
    assert dws["initialNodeCount"] == 0.0
    assert (dws["autoscaling"]["totalMinNodeCount"], dws["autoscaling"]["totalMaxNodeCount"]) == (0.0, 10.0)


def test_dws_scopes(dws):
    assert dws["nodeConfig"]["oauthScopes"] == [CLOUD_PLATFORM]


def test_dws_nine_additional_node_networks(dws):
    networks = dws["networkConfig"]["additionalNodeNetworkConfigs"]
    assert networks == [{"network": "trainyard-dev-gvnic-1-net", "subnetwork": "trainyard-dev-gvnic-1-sub"}] + [
        {"network": "trainyard-dev-rdma-net", "subnetwork": f"trainyard-dev-rdma-sub-{n}"} for n in range(8)
    ]


# --- A4 networks: FACTS A
def test_gvnic_subnet(dev_plan):
    assert (
        one(dev_plan, "gcp:compute/subnetwork:Subnetwork", "trainyard-dev-gvnic-1-sub")["ipCidrRange"]
        == "192.168.0.0/24"
    )


def test_gvnic_firewall(dev_plan):
    firewall = one(dev_plan, "gcp:compute/firewall:Firewall", "trainyard-dev-gvnic-1-internal")
    assert firewall["allows"] == [
        {"protocol": "tcp", "ports": ["0-65535"]},
        {"protocol": "udp", "ports": ["0-65535"]},
        {"protocol": "icmp"},
    ]
    assert firewall["sourceRanges"] == ["192.168.0.0/24"]


def test_rdma_network_profile(dev_plan):
    rdma = one(dev_plan, "gcp:compute/network:Network", "trainyard-dev-rdma-net")
    assert rdma["networkProfile"] == "projects/trainyard-dev/global/networkProfiles/us-east5-b-vpc-roce"


def test_rdma_eight_subnets(dev_plan):
    ranges = [
        one(dev_plan, "gcp:compute/subnetwork:Subnetwork", f"trainyard-dev-rdma-sub-{n}")["ipCidrRange"]
        for n in range(8)
    ]
    assert ranges == [f"192.168.{n + 1}.0/24" for n in range(8)]


# --- TPU networks and pools: the multislice seed
def test_every_vpc_mtu_8896_and_custom_subnets(dev_plan):
    networks = dev_plan.of_type("gcp:compute/network:Network")
    assert len(networks) == 5
    assert all(n.inputs["mtu"] == 8896.0 and n.inputs["autoCreateSubnetworks"] is False for n in networks)


def test_dcn_subnet_ranges(dev_plan):
    subnets = dev_plan.of_type("gcp:compute/subnetwork:Subnetwork")
    dcn = {s.name: s.inputs["ipCidrRange"] for s in subnets if "-dcn-" in s.name}
    assert dcn == {"trainyard-dev-dcn-1-sub": "10.50.0.0/16", "trainyard-dev-dcn-2-sub": "10.60.0.0/16"}


def test_tpu_one_pool_per_slice(dev_plan):
    pools = {p.name for p in dev_plan.of_type("gcp:container/nodePool:NodePool")}
    assert {"v6e-16-0", "v6e-16-1"} <= pools


def test_tpu_machine_type(tpu):
    assert tpu["nodeConfig"]["machineType"] == "ct6e-standard-4t"


def test_tpu_threads_per_core(tpu):
    assert tpu["nodeConfig"]["advancedMachineFeatures"] == {"threadsPerCore": 1.0}


def test_tpu_topology_compact_placement(tpu):
    assert tpu["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x4"}


def test_tpu_num_nodes(tpu):
    assert tpu["nodeCount"] == 4.0


def test_tpu_additional_node_networks(tpu):
    assert tpu["networkConfig"]["additionalNodeNetworkConfigs"] == [
        {"network": "trainyard-dev-dcn-1-net", "subnetwork": "trainyard-dev-dcn-1-sub"},
        {"network": "trainyard-dev-dcn-2-net", "subnetwork": "trainyard-dev-dcn-2-sub"},
    ]


def test_tpu_dranet_label_and_the_slice_group_label_kueue_selects(tpu):
    assert tpu["nodeConfig"]["labels"] == {
        "cloud.google.com/gke-networking-dra-driver": "true",
        "trainyard/tpu-slice-group": "v6e-16",
    }


def test_tpu_enable_gvnic(tpu):
    assert tpu["nodeConfig"]["gvnic"] == {"enabled": True}


def test_tpu_scopes(tpu):
    assert tpu["nodeConfig"]["oauthScopes"] == [CLOUD_PLATFORM]


def test_every_pool_on_gke_metadata_server(dev_plan):
    pools = dev_plan.of_type("gcp:container/nodePool:NodePool")
    assert {p.inputs["nodeConfig"]["workloadMetadataConfig"]["mode"] for p in pools} == {"GKE_METADATA"}


# --- the first-JAX-job seed's flex-start 2x4 pool, as a variation of the dev stack
def test_first_jax_job_flex_start_pool(plan_with):
    def flex_2x4(values):
        values["trainyard:tpuSlices"] = [
            {"name": "nodepool", "topology": "2x4", "machineType": "ct6e-standard-4t", "capacity": "flexStart"}
        ]
        values.pop("trainyard:jobs", None)  # the dev jobs name the dev slices

    pool = one(plan_with(flex_2x4), "gcp:container/nodePool:NodePool", "nodepool-0")
    assert pool["nodeConfig"]["machineType"] == "ct6e-standard-4t"  # --machine-type
    assert pool["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "2x4"}  # --tpu-topology
    assert pool["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert pool["autoscaling"] == {"minNodeCount": 0.0, "maxNodeCount": 2.0}  # --min-nodes 0 --max-nodes 2
    assert pool["initialNodeCount"] == 0.0 and "nodeCount" not in pool  # --num-nodes=0
    assert pool["nodeConfig"]["flexStart"] is True
    assert pool["management"] == {"autoRepair": False, "autoUpgrade": False}


def test_flex_start_pools_keep_auto_upgrade_in_a_release_channel(plan_with):
    """GKE keeps node auto-upgrade on for every pool of a cluster in a release channel and refuses a pool that
    turns it off; flex-start pools turn off only auto-repair there (docs/cloud-facts.md)."""
    plan = plan_with(lambda values: values["trainyard:cluster"].update(releaseChannel="REGULAR"))
    flex_pools = ("gpu-nodepool-dws",)
    for name in flex_pools:
        assert one(plan, "gcp:container/nodePool:NodePool", name)["management"] == {
            "autoRepair": False,
            "autoUpgrade": True,
        }
    assert one(plan, "gcp:container/nodePool:NodePool", "system")["management"] == {
        "autoRepair": True,
        "autoUpgrade": True,
    }
