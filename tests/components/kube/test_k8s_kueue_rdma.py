"""Kueue and RDMA objects of the dev stack and of variations: flavors, quotas, DWS checks, NIC networks."""

from __future__ import annotations

import json

import yaml

from components.facts.gke import QUEUE_LABEL
from components.facts.gpu_software import GIB
from components.kube.kueue import INTEGRATIONS
from tests.helpers.plans import everything_on, manifest, one, quotas

KUEUE = "kueue.x-k8s.io/v1beta2"


def test_dev_cluster_queue_quotas_are_what_the_pools_hold(dev_plan):
    queue = manifest(dev_plan, "ClusterQueue", "trainyard")
    assert queue["apiVersion"] == KUEUE
    assert queue["spec"]["resourceGroups"][0]["coveredResources"] == [
        "cpu",
        "memory",
        "google.com/tpu",
        "nvidia.com/gpu",
        "trainyard/dcn-nic",
    ]
    no_accelerators = {"google.com/tpu": 0, "nvidia.com/gpu": 0, "trainyard/dcn-nic": 0}
    assert quotas(queue) == {
        "system": {"cpu": "40", "memory": "160Gi", **no_accelerators},  # 5 x e2-standard-8
        # 8 x ct6e-4t, each claiming one NIC per DCN VPC (2)
        "v6e-16": {"cpu": "1440", "memory": "5760Gi", **no_accelerators, "google.com/tpu": 32, "trainyard/dcn-nic": 16},
        "gpu-nodepool-dws": {"cpu": "2240", "memory": "39680Gi", **no_accelerators, "nvidia.com/gpu": 80},
    }


def test_single_slice_groups_claim_no_nics_and_the_queue_covers_none(plan_with):
    def single(values):
        values["trainyard:tpuSlices"][0]["count"] = 1

    queue = manifest(plan_with(single), "ClusterQueue", "trainyard")
    assert "trainyard/dcn-nic" not in queue["spec"]["resourceGroups"][0]["coveredResources"]


def test_kueue_counts_dranet_claims_and_leaves_local_ssd_to_the_scheduler(dev_plan):
    resources = manager_config(dev_plan)["resources"]
    mapping = {"name": "trainyard/dcn-nic", "deviceClassNames": ["netdev.google.com"]}
    assert resources["deviceClassMappings"] == [mapping]
    assert resources["excludeResourcePrefixes"] == ["ephemeral-storage"]


def test_dws_admission_check_only_on_dws_flavors(dev_plan):
    queue = manifest(dev_plan, "ClusterQueue", "trainyard")
    assert queue["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "dws-prov", "onFlavors": ["gpu-nodepool-dws"]}]
    }
    check = manifest(dev_plan, "AdmissionCheck", "dws-prov")["spec"]
    assert check["controllerName"] == "kueue.x-k8s.io/provisioning-request"
    assert check["parameters"] == {
        "apiGroup": "kueue.x-k8s.io",
        "kind": "ProvisioningRequestConfig",
        "name": "dws-prov",
    }
    config = manifest(dev_plan, "ProvisioningRequestConfig", "dws-prov")["spec"]
    assert config == {"provisioningClassName": "queued-provisioning.gke.io", "managedResources": ["nvidia.com/gpu"]}


def test_flavors_select_their_nodes(dev_plan):
    assert manifest(dev_plan, "ResourceFlavor", "v6e-16")["spec"] == {
        "nodeLabels": {
            "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
            "cloud.google.com/gke-tpu-topology": "4x4",
            "trainyard/tpu-slice-group": "v6e-16",
        }
    }
    gpu = manifest(dev_plan, "ResourceFlavor", "gpu-nodepool-dws")["spec"]
    assert gpu["nodeLabels"] == {"cloud.google.com/gke-nodepool": "gpu-nodepool-dws"}
    assert gpu["tolerations"] == [{"key": "cloud.google.com/gke-queued", "operator": "Exists", "effect": "NoSchedule"}]


def test_local_queue_in_the_workload_namespace(dev_plan):
    queue = manifest(dev_plan, "LocalQueue", "trainyard")
    assert queue["metadata"]["namespace"] == "trainyard" and queue["spec"] == {"clusterQueue": "trainyard"}


def test_kueue_objects_depend_on_the_pinned_release(dev_plan):
    controller = one(dev_plan, "kubernetes:apps/v1:Deployment", "kueue-system/kueue-controller-manager")
    assert controller["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.k8s.io/kueue/kueue:v0.19.2"
    release = {r.urn for r in dev_plan.resources if "trainyard:k8s:KueueRelease" in r.urn.split("::")[-2]}
    kueue_crs = [r for r in dev_plan.resources if r.type.startswith("kubernetes:kueue.x-k8s.io/")]
    assert len(kueue_crs) == 8  # the Topology, 3 flavors, the check and its config, the two queues
    controller_urn = next(
        r.urn
        for r in dev_plan.resources
        if r.name == "kueue-system/kueue-controller-manager" and r.type == "kubernetes:apps/v1:Deployment"
    )
    assert controller_urn in release and all(controller_urn in r.dependencies for r in kueue_crs)


def manager_config(plan):
    config_map = one(plan, "kubernetes:core/v1:ConfigMap", "kueue-system/kueue-manager-config")
    return yaml.safe_load(config_map["data"]["controller_manager_config.yaml"])


def test_kueue_requeues_a_workload_whose_pods_are_not_ready_whatever_the_release_defaults(dev_plan):
    config = manager_config(dev_plan)
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2" and config["kind"] == "Configuration"
    wait = config["waitForPodsReady"]
    assert (wait["timeout"], wait["recoveryTimeout"]) == ("30m", "30m")
    # An evicted fine-tune keeps its place; no limit, as the count of requeues never resets.
    assert wait["requeuingStrategy"] == {"timestamp": "Creation", "backoffBaseSeconds": 60, "backoffMaxSeconds": 3600}


def test_every_kind_the_stack_queues_is_an_integration_kueue_manages(plan_with):
    plan = plan_with(everything_on)
    queued = {m["kind"] for m in plan.manifests if QUEUE_LABEL in m["metadata"].get("labels", {})}
    assert queued == {"Job", "RayJob", "RayCluster"}
    assert {INTEGRATIONS[kind] for kind in queued} <= set(manager_config(plan)["integrations"]["frameworks"])


def test_flex_start_tpus_come_after_on_demand_and_need_no_provisioning_request(plan_with):
    def mixed(values):
        values["trainyard:tpuSlices"].append(
            {"name": "v6e-16-flex", "topology": "4x4", "count": 1, "capacity": "flexStart"}
        )
        values["trainyard:gpuPools"][0]["capacity"] = "spot"
        values["trainyard:tpuSlices"].insert(0, values["trainyard:tpuSlices"].pop())  # DWS first in config

    plan = plan_with(mixed)
    queue = manifest(plan, "ClusterQueue", "trainyard")
    assert list(quotas(queue)) == ["system", "v6e-16", "gpu-nodepool-dws", "v6e-16-flex"]
    assert quotas(queue)["v6e-16-flex"]["google.com/tpu"] == 16
    # The autoscaler brings up a flex-start slice whole; no queued-provisioning pool could serve a request.
    assert "admissionChecksStrategy" not in queue["spec"]
    assert "ProvisioningRequestConfig" not in {m["kind"] for m in plan.manifests}
    assert (
        manifest(plan, "ResourceFlavor", "v6e-16-flex")["spec"]["nodeLabels"]["cloud.google.com/gke-flex-start"]
        == "true"
    )
    assert manifest(plan, "ResourceFlavor", "gpu-nodepool-dws")["spec"] == {
        # Spot, placed compactly, carries the block labels, but scales from zero: Kueue's TAS would wait for nodes
        "nodeLabels": {"cloud.google.com/gke-nodepool": "gpu-nodepool-dws"},
    }


def test_no_dws_pools_means_no_admission_check_and_no_install_means_no_release(plan_with):
    def on_demand_only(values):
        values["trainyard:gpuPools"][0]["capacity"] = "onDemand"
        values["trainyard:kueue"]["install"] = False

    plan = plan_with(on_demand_only)
    kinds = {m["kind"] for m in plan.manifests}
    assert "AdmissionCheck" not in kinds and "ProvisioningRequestConfig" not in kinds
    assert "admissionChecksStrategy" not in manifest(plan, "ClusterQueue", "trainyard")["spec"]
    assert not plan.of_type("kubernetes:apps/v1:Deployment") and not plan.of_type(
        "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
    )


def test_rdma_networks_name_the_vpcs_and_subnets(dev_plan):
    sets = {m["metadata"]["name"]: m["spec"] for m in dev_plan.manifests if m["kind"] == "GKENetworkParamSet"}
    assert sets["gvnic-1"] == {
        "vpc": "trainyard-dev-gvnic-1-net",
        "vpcSubnet": "trainyard-dev-gvnic-1-sub",
        "deviceMode": "NetDevice",
    }
    for index in range(8):
        assert sets[f"rdma-{index}"] == {
            "vpc": "trainyard-dev-rdma-net",
            "vpcSubnet": f"trainyard-dev-rdma-sub-{index}",
            "deviceMode": "RDMA",
        }
    subnets = {r.name for r in dev_plan.of_type("gcp:compute/subnetwork:Subnetwork")}
    assert {spec["vpcSubnet"] for spec in sets.values()} <= subnets
    networks = {m["metadata"]["name"]: m["spec"] for m in dev_plan.manifests if m["kind"] == "Network"}
    assert set(networks) == set(sets)
    for name, spec in networks.items():
        assert spec == {
            "type": "Device",
            "parametersRef": {"group": "networking.gke.io", "kind": "GKENetworkParamSet", "name": name},
        }


def test_gib_installer_is_pinned_and_lands_on_a4_nodes(dev_plan):
    daemonset = manifest(dev_plan, "DaemonSet", "nccl-rdma-installer")
    pod = daemonset["spec"]["template"]["spec"]
    (installer,) = pod["initContainers"]
    assert installer["image"] == GIB.reference
    # The plugin only: each job loads its own NCCL (the FSDP wheel's), which the plugin accepts.
    assert "--install-nccl" not in installer["args"][0]
    assert "/scripts/container_entry.sh install\n" in installer["args"][0]
    (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": ["nvidia-b200"]}
    ]
    assert {v["hostPath"]["path"] for v in pod["volumes"]} == {
        "/home/kubernetes/bin/nvidia/lib64",
        "/home/kubernetes/bin/gib",
    }
    # Only the A4 pools' taints, not a key-less Exists that tolerates every taint on every node.
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "cloud.google.com/gke-queued", "operator": "Exists", "effect": "NoSchedule"},
    ]


def test_tpu_only_stack_has_no_rdma_objects(plan_with):
    def tpu_only(values):
        values["trainyard:gpuPools"] = []
        values["trainyard:jobs"]["fsdp"] = []

    kinds = {m["kind"] for m in plan_with(tpu_only).manifests}
    assert not kinds & {"GKENetworkParamSet", "Network", "DaemonSet", "Job"}
    assert "nvidia.com/gpu" not in json.dumps(manifest(plan_with(tpu_only), "ClusterQueue", "trainyard"))


TAS_LEVELS = [
    "cloud.google.com/gce-topology-block",
    "cloud.google.com/gce-topology-subblock",
    "cloud.google.com/gce-topology-host",
    "kubernetes.io/hostname",
]


def test_the_a4_flavor_places_by_gke_topology_and_the_fine_tune_prefers_one_block(dev_plan):
    topology = manifest(dev_plan, "Topology", "gke-default")
    assert topology["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert topology["spec"] == {"levels": [{"nodeLabel": label} for label in TAS_LEVELS]}
    assert manifest(dev_plan, "ResourceFlavor", "gpu-nodepool-dws")["spec"]["topologyName"] == "gke-default"
    for tpu_or_cpu in ("v6e-16", "system"):
        assert "topologyName" not in manifest(dev_plan, "ResourceFlavor", tpu_or_cpu)["spec"]
    annotations = manifest(dev_plan, "Job", "llama31-70b-fsdp")["spec"]["template"]["metadata"]["annotations"]
    assert annotations["kueue.x-k8s.io/podset-preferred-topology"] == "cloud.google.com/gce-topology-block"
    assert "kueue.x-k8s.io/podset-required-topology" not in annotations
    by_name = {r.name: r for r in dev_plan.resources}
    assert by_name["topology-gke-default"].urn in by_name["resourceflavor-gpu-nodepool-dws"].dependencies


def test_compact_placement_where_the_capacity_allows_and_tas_only_where_nodes_carry_the_labels_and_exist(plan_with):
    def pools(values):
        values["trainyard:gpuPools"] = [
            {"name": "a4-demand", "maxNodes": 2, "capacity": "onDemand"},
            {"name": "a4-demand-held", "minNodes": 2, "maxNodes": 2, "capacity": "onDemand"},
            {"name": "a4-flex", "maxNodes": 2, "capacity": "flexStart"},
            {"name": "a4-spot-spread", "maxNodes": 2, "capacity": "spot", "compactPlacement": False},
            {"name": "a4-queued", "maxNodes": 2},
        ]
        values.pop("trainyard:jobs", None)  # the dev jobs name the dev pools

    plan = plan_with(pools)
    placement = {
        name: one(plan, "gcp:container/nodePool:NodePool", name).get("placementPolicy")
        for name in ("a4-demand", "a4-demand-held", "a4-flex", "a4-spot-spread", "a4-queued")
    }
    assert placement == {
        "a4-demand": {"type": "COMPACT"},
        "a4-demand-held": {"type": "COMPACT"},
        "a4-flex": {"type": "COMPACT"},
        "a4-spot-spread": None,
        "a4-queued": None,
    }
    topology = {name: manifest(plan, "ResourceFlavor", name)["spec"].get("topologyName") for name in placement}
    # Kueue's TAS places only on nodes that exist or that a ProvisioningRequest brings: a pool the autoscaler grows
    # from zero would never be admitted by topology.
    assert topology == {
        "a4-demand": None,
        "a4-demand-held": "gke-default",
        "a4-flex": None,
        "a4-spot-spread": None,
        "a4-queued": "gke-default",
    }
