"""The CIS GKE items as the stack config turns them on (Pulumi.prod-like.yaml's settings on the dev stack), and the
dev stack without them: what each key puts in the plan."""

from __future__ import annotations

from typing import Any

import pytest

from components.facts import gke
from components.facts.hardening import AUDIT_CONFIG_TYPE
from tests.helpers.plans import one

BOOT_KEY = "projects/trainyard-dev/locations/us-east5/keyRings/gke/cryptoKeys/nodes"
KMS_GRANT = "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember"
DATA_ACCESS = [{"logType": "ADMIN_READ"}, {"logType": "DATA_READ"}, {"logType": "DATA_WRITE"}]


def production(values: dict[str, Any]) -> None:
    values["trainyard:cluster"].update(
        bootDiskEncryptionKey=BOOT_KEY,
        kubeletReadOnlyPort=False,
        binaryAuthorization=True,
        securityPosture="BASIC",
        dataAccessLogs=True,
    )
    values["trainyard:network"].update(flowLogSampling=0.5, natLogs="ALL")
    values["trainyard:storage"].update(dataAccessLogs=True)


@pytest.fixture(scope="module")
def profile_plan(plan_with):
    return plan_with(production)


def test_the_cluster_enforces_binary_authorization_and_audits_its_posture(profile_plan):
    cluster = one(profile_plan, gke.CLUSTER_TYPE, "trainyard-dev")
    assert cluster["binaryAuthorization"] == {"evaluationMode": "PROJECT_SINGLETON_POLICY_ENFORCE"}
    # GKE retired the posture's vulnerability scanning: the cluster states it off rather than take a default.
    assert cluster["securityPostureConfig"] == {"mode": "BASIC", "vulnerabilityMode": "VULNERABILITY_DISABLED"}


def test_every_pool_and_the_clusters_default_close_the_kubelets_read_only_port(profile_plan):
    cluster = one(profile_plan, gke.CLUSTER_TYPE, "trainyard-dev")
    assert cluster["nodePoolDefaults"] == {"nodeConfigDefaults": {"insecureKubeletReadonlyPortEnabled": "FALSE"}}
    pools = profile_plan.of_type(gke.NODE_POOL_TYPE)
    assert {pool.name for pool in pools} == {"system", "v6e-16-0", "v6e-16-1", "gpu-nodepool-dws"}
    for pool in pools:
        assert pool.inputs["nodeConfig"]["kubeletConfig"] == {"insecureKubeletReadonlyPortEnabled": "FALSE"}, pool.name


def test_every_boot_disk_is_encrypted_with_the_key_compute_engine_may_use(profile_plan):
    for pool in profile_plan.of_type(gke.NODE_POOL_TYPE):
        assert pool.inputs["nodeConfig"]["bootDiskKmsKey"] == BOOT_KEY, pool.name
    grant = one(profile_plan, KMS_GRANT, "trainyard-dev-boot-disk-key-compute")
    assert grant == {
        "cryptoKeyId": BOOT_KEY,
        "role": "roles/cloudkms.cryptoKeyEncrypterDecrypter",
        "member": "serviceAccount:service-123456789012@compute-system.iam.gserviceaccount.com",
    }
    grant_urn = next(r.urn for r in profile_plan.resources if r.name == "trainyard-dev-boot-disk-key-compute")
    # Every pool waits for the cluster, which waits for the grant: no node boots before Compute Engine may use the key.
    assert grant_urn in next(r for r in profile_plan.resources if r.name == "trainyard-dev").dependencies


def test_flow_logs_on_every_subnet_but_rdma_and_nat_logs_every_translation(profile_plan):
    subnets = {subnet.name: subnet.inputs.get("logConfig") for subnet in profile_plan.of_type(gke.SUBNETWORK_TYPE)}
    logged = {"aggregationInterval": "INTERVAL_5_SEC", "flowSampling": 0.5, "metadata": "INCLUDE_ALL_METADATA"}
    rdma = {name for name in subnets if name.startswith("trainyard-dev-rdma-sub-")}
    assert len(rdma) == 8 and all(subnets[name] is None for name in rdma)
    others = (
        "trainyard-dev-primary",
        "trainyard-dev-dcn-1-sub",
        "trainyard-dev-dcn-2-sub",
        "trainyard-dev-gvnic-1-sub",
    )
    assert {name: config for name, config in subnets.items() if name not in rdma} == dict.fromkeys(others, logged)
    assert one(profile_plan, gke.ROUTER_NAT_TYPE, "trainyard-dev-nat")["logConfig"] == {"enable": True, "filter": "ALL"}


def test_data_access_logs_for_the_gke_and_storage_apis(profile_plan):
    configs = {config.name: config.inputs for config in profile_plan.of_type(AUDIT_CONFIG_TYPE)}
    assert configs == {
        "trainyard-dev-container-data-access": {
            "project": "trainyard-dev",
            "service": "container.googleapis.com",
            "auditLogConfigs": DATA_ACCESS,
        },
        "trainyard-dev-data-storage-data-access": {
            "project": "trainyard-dev",
            "service": "storage.googleapis.com",
            "auditLogConfigs": DATA_ACCESS,
        },
    }


def test_dev_leaves_every_item_to_the_defaults_but_logs_nat_errors(dev_plan):
    cluster = one(dev_plan, gke.CLUSTER_TYPE, "trainyard-dev")
    assert not {"binaryAuthorization", "securityPostureConfig", "nodePoolDefaults"} & set(cluster)
    for pool in dev_plan.of_type(gke.NODE_POOL_TYPE):
        assert not {"kubeletConfig", "bootDiskKmsKey"} & set(pool.inputs["nodeConfig"]), pool.name
    assert all("logConfig" not in subnet.inputs for subnet in dev_plan.of_type(gke.SUBNETWORK_TYPE))
    assert one(dev_plan, gke.ROUTER_NAT_TYPE, "trainyard-dev-nat")["logConfig"] == {
        "enable": True,
        "filter": "ERRORS_ONLY",
    }
    assert not dev_plan.of_type(AUDIT_CONFIG_TYPE) and not dev_plan.of_type(KMS_GRANT)
