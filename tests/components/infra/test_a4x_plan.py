"""The A4X example stack (Pulumi.a4x.yaml) as it plans: what the machine's record makes of its pool and its jobs."""

from __future__ import annotations

import functools
import json
import subprocess
import sys

import yaml

from components.facts import gke, gpu_software
from tests.helpers.plans import PROJECT_DIR, manifest, one, quotas


@functools.cache
def plan():
    from preflight.engine.plan import plan_stack

    return plan_stack("a4x", PROJECT_DIR)


def pod(kind: str, name: str) -> dict:
    return manifest(plan(), kind, name)["spec"]["template"]


def test_the_pool_takes_rdma_through_dranet_on_one_nvl72_domain():
    pool = one(plan(), gke.NODE_POOL_TYPE, "a4x")
    policy = one(plan(), "gcp:compute/resourcePolicy:ResourcePolicy", "a4x-nvlink")
    assert pool["networkConfig"] == {"acceleratorNetworkProfile": "auto"}
    assert pool["nodeConfig"]["labels"] == {gke.DRANET_LABEL: "true"}
    assert policy["name"] == "trainyard-a4x-a4x-1x72"  # <cluster>-<pool>-<topology>: unique to the stack
    assert pool["placementPolicy"] == {"type": "COMPACT", "policyName": policy["name"]}
    assert policy["workloadPolicy"] == {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "1x72"}
    assert policy["region"] == "us-central1"
    assert pool["nodeConfig"]["guestAccelerators"][0]["type"] == "nvidia-gb200"
    assert pool["nodeConfig"]["reservationAffinity"]["consumeReservationType"] == "SPECIFIC_RESERVATION"
    assert pool["nodeConfig"]["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 4.0}


def test_the_pool_keeps_the_placement_type_gke_does_not_store():
    """GKE keeps a workload-policy placement without its type; the pool ignores the type, or every update would
    replace the 18-VM pool (the block is ForceNew)."""
    (pool,) = [r for r in plan().of_type(gke.NODE_POOL_TYPE) if r.name == "a4x"]
    assert "placementPolicy.type" in pool.ignore_changes


def test_no_rdma_vpcs_or_gke_networks_are_made_beside_dranet():
    networks = [r.name for r in plan().resources if r.type == gke.NETWORK_TYPE]
    assert networks == ["trainyard-a4x-primary"]
    assert not [m for m in plan().manifests if m["kind"] in ("GKENetworkParamSet", "Network")]


def test_pods_claim_the_machines_rdma_nics_and_name_no_interfaces():
    template = manifest(plan(), "ResourceClaimTemplate", "rdma-nvidia-gb200")
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"] == {"deviceClassName": "mrdma.google.com", "allocationMode": "ExactCount", "count": 4}
    for kind, name in (("Job", "llama31-8b-fsdp"), ("Job", "smoke-nccl-a4x")):
        spec = pod(kind, name)
        assert spec["spec"]["resourceClaims"][0] == {"name": "rdma", "resourceClaimTemplateName": "rdma-nvidia-gb200"}
        (container,) = spec["spec"]["containers"]
        assert container["resources"]["claims"][0] == {"name": "rdma"}  # then the NVLink channel (test_nvidia_dra)
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "4"
        assert gke.INTERFACES_ANNOTATION not in spec["metadata"]["annotations"]
        assert "NCCL_TUNER_CONFIG_PATH" not in {env["name"] for env in container["env"]}


def test_kueue_counts_the_rdma_nics_and_admits_both_jobs_on_the_arm_flavor():
    config_map = one(plan(), "kubernetes:core/v1:ConfigMap", "kueue-system/kueue-manager-config")
    mappings = yaml.safe_load(config_map["data"]["controller_manager_config.yaml"])["resources"]["deviceClassMappings"]
    assert {"name": gke.RDMA_NIC_RESOURCE, "deviceClassNames": ["mrdma.google.com"]} in mappings
    assert quotas(manifest(plan(), "ClusterQueue", "trainyard"))["a4x"][gke.RDMA_NIC_RESOURCE] == 72
    flavor = manifest(plan(), "ResourceFlavor", "a4x")
    assert {"key": "kubernetes.io/arch", "operator": "Exists", "effect": "NoSchedule"} in flavor["spec"]["tolerations"]


def test_the_arm64_gib_installer_and_image():
    installer = pod("DaemonSet", "nccl-rdma-installer-arm64")["spec"]
    assert installer["initContainers"][0]["image"] == gpu_software.GIB_ARM64.reference
    assert {"key": "kubernetes.io/arch", "operator": "Exists", "effect": "NoSchedule"} in installer["tolerations"]
    terms = installer["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert json.dumps(terms).count("nvidia-gb200") == 1
    image = one(plan(), "docker-build:index:Image", "image-fsdp")
    assert image["platforms"] == ["linux/arm64"]
    assert not [m for m in plan().manifests if m["metadata"]["name"] == gke.NCCL_INSTALLER_NAME]


def test_the_a4x_stack_plans_ok_with_both_jobs_admitted(tmp_path):
    out = tmp_path / "plan.json"
    command = [sys.executable, "-m", "cli.main", "plan", "--stack", "a4x", "--json", str(out)]
    result = subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True, check=False, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "trainyard: OK" in result.stdout
    data = json.loads(out.read_text())
    assert data["admission"]["problems"] == []
    admitted = {a["workload"].split("/")[1].rsplit("-", 1)[0]: a["flavors"] for a in data["admission"]["admitted"]}
    assert admitted == {"llama31-8b-fsdp": {"main": "a4x"}, "smoke-nccl": {"main": "a4x"}}
