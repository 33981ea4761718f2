"""cis-gke-profile: the prod-like stack, marked production by policies/config.prod-like.json, holds every CIS GKE item;
taking any one away fails it, naming the stack file key that sets the item; the dev stack is not held to it, and
differs by exactly the items docs/security.md says."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from components.facts.gke import CLUSTER_TYPE, NODE_POOL_TYPE
from components.facts.hardening import ALL_SERVICES, AUDIT_CONFIG_TYPE, CONTAINER_SERVICE, STORAGE_SERVICE
from preflight.checks.policy_runner import evaluate, pack_config_for_stack
from preflight.engine.plan import plan_stack
from tests.helpers import policy_stacks as fx
from tests.helpers.plans import PROJECT_DIR

POLICY = "cis-gke-profile"
PRODUCTION = {POLICY: {"production": True}}
Plan = dict[str, Any]


@pytest.fixture(scope="module")
def prod_plan() -> Plan:
    return plan_stack("prod-like", PROJECT_DIR).to_json()


@pytest.fixture(scope="module")
def dev_plan_json() -> Plan:
    return plan_stack("dev", PROJECT_DIR).to_json()


def keys_named(plan: Plan, config: dict[str, Any] | None = PRODUCTION) -> set[str]:
    """The stack file keys the profile's verdicts name; another policy's mandatory verdict fails the test."""
    verdicts = [v for v in evaluate(plan, config) if v.level == "mandatory"]
    assert {v.policy for v in verdicts} <= {POLICY}, verdicts
    return {key for v in verdicts for key in re.findall(r"trainyard:\w+\.\w+", v.message)}


def test_the_prod_like_stack_is_marked_production_and_holds_every_item(prod_plan):
    config = pack_config_for_stack("prod-like", PROJECT_DIR)
    assert config == PRODUCTION
    assert evaluate(prod_plan, config) == []


def test_the_dev_stack_is_not_held_to_the_profile(dev_plan_json):
    assert pack_config_for_stack("dev", PROJECT_DIR) == {}
    assert [v for v in evaluate(dev_plan_json) if v.level == "mandatory"] == []


def test_dev_differs_by_every_item_but_nat_logging(dev_plan_json):
    """What docs/security.md's profile table says dev leaves to GKE's defaults: its Cloud NAT logs errors."""
    assert keys_named(dev_plan_json) == {
        "trainyard:cluster.releaseChannel",
        "trainyard:cluster.secretsEncryptionKey",
        "trainyard:cluster.bootDiskEncryptionKey",
        "trainyard:cluster.kubeletReadOnlyPort",
        "trainyard:cluster.binaryAuthorization",
        "trainyard:cluster.securityPosture",
        "trainyard:network.flowLogSampling",
        "trainyard:cluster.dataAccessLogs",
        "trainyard:storage.dataAccessLogs",
    }


Edit = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def change(type_: str, name: str, path: str, value: Any) -> Edit:
    def edit(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
        (target,) = [r for r in resources if r["type"] == type_ and r["name"] == name]
        return fx.replace(resources, fx.changed(target, path, value))

    return edit


def drop_audit_config(service: str) -> Edit:
    return lambda resources: [
        r for r in resources if not (r["type"] == AUDIT_CONFIG_TYPE and r["inputs"]["service"] == service)
    ]


def exempt_a_member(service: str) -> Edit:
    def edit(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
        (config,) = [r for r in resources if r["type"] == AUDIT_CONFIG_TYPE and r["inputs"]["service"] == service]
        return fx.replace(resources, fx.changed(config, "auditLogConfigs.1.exemptedMembers", ["user:ci@example.com"]))

    return edit


CLUSTER = (CLUSTER_TYPE, "trainyard-prod")
SUBNET, NAT = "gcp:compute/subnetwork:Subnetwork", "gcp:compute/routerNat:RouterNat"
KUBELET_PORT = "nodeConfig.kubeletConfig.insecureKubeletReadonlyPortEnabled"
ITEM_REMOVED: list[tuple[str, Edit, str]] = [
    ("no release channel", change(*CLUSTER, "releaseChannel.channel", "UNSPECIFIED"), "cluster.releaseChannel"),
    ("Secrets in etcd unencrypted", change(*CLUSTER, "databaseEncryption", fx.DELETE), "cluster.secretsEncryptionKey"),
    (
        "Secrets encryption decrypted",
        change(*CLUSTER, "databaseEncryption.state", "DECRYPTED"),
        "cluster.secretsEncryptionKey",
    ),
    (
        "a spot slice's boot disk without the key",
        change(NODE_POOL_TYPE, "v6e-16-spot-0", "nodeConfig.bootDiskKmsKey", fx.DELETE),
        "cluster.bootDiskEncryptionKey",
    ),
    (
        "the kubelet's read-only port on in a DWS pool",
        change(NODE_POOL_TYPE, "a4-dws", KUBELET_PORT, "TRUE"),
        "cluster.kubeletReadOnlyPort",
    ),
    (
        "the system pool's kubelet left to GKE",
        change(NODE_POOL_TYPE, "system", "nodeConfig.kubeletConfig", fx.DELETE),
        "cluster.kubeletReadOnlyPort",
    ),
    (
        "the cluster's default for new pools left to GKE",
        change(*CLUSTER, "nodePoolDefaults", fx.DELETE),
        "cluster.kubeletReadOnlyPort",
    ),
    (
        "Binary Authorization disabled",
        change(*CLUSTER, "binaryAuthorization.evaluationMode", "DISABLED"),
        "cluster.binaryAuthorization",
    ),
    ("security posture off", change(*CLUSTER, "securityPostureConfig.mode", "DISABLED"), "cluster.securityPosture"),
    (
        "no flow logs on the node subnet",
        change(SUBNET, "trainyard-prod-primary", "logConfig", fx.DELETE),
        "network.flowLogSampling",
    ),
    (
        "flow logs sampling nothing on a DCN subnet",
        change(SUBNET, "trainyard-prod-dcn-1-sub", "logConfig.flowSampling", 0.0),
        "network.flowLogSampling",
    ),
    ("Cloud NAT logging off", change(NAT, "trainyard-prod-nat", "logConfig.enable", False), "network.natLogs"),
    ("no GKE Data Access logs", drop_audit_config(CONTAINER_SERVICE), "cluster.dataAccessLogs"),
    ("no Cloud Storage Data Access logs", drop_audit_config(STORAGE_SERVICE), "storage.dataAccessLogs"),
    ("a member exempt from Cloud Storage reads", exempt_a_member(STORAGE_SERVICE), "storage.dataAccessLogs"),
]


@pytest.mark.parametrize(("label", "edit", "key"), ITEM_REMOVED, ids=[case[0] for case in ITEM_REMOVED])
def test_each_item_taken_away_fails_the_production_stack_naming_its_key(prod_plan, label, edit, key):
    plan = {**prod_plan, "resources": edit(copy.deepcopy(prod_plan["resources"]))}
    assert keys_named(plan) == {f"trainyard:{key}"}


def test_every_item_has_a_case_that_fires_it(dev_plan_json):
    every_item = keys_named(dev_plan_json) | {"trainyard:network.natLogs"}  # dev logs its NAT's errors
    assert {f"trainyard:{key}" for _, _, key in ITEM_REMOVED} == every_item


def test_one_audit_config_for_all_services_covers_both(prod_plan):
    resources = drop_audit_config(STORAGE_SERVICE)(copy.deepcopy(prod_plan["resources"]))
    (container,) = [r for r in resources if r["type"] == AUDIT_CONFIG_TYPE]
    everything = fx.changed(container, "service", ALL_SERVICES)
    assert keys_named({**prod_plan, "resources": fx.replace(resources, everything)}) == set()


def test_rdma_subnets_need_no_flow_logs_and_values_unknown_in_preview_are_not_judged(prod_plan):
    rdma = [r for r in prod_plan["resources"] if r["name"].startswith("trainyard-prod-rdma-sub-")]
    assert rdma and all("logConfig" not in r["inputs"] for r in rdma)
    unknown = change(*CLUSTER, "binaryAuthorization.evaluationMode", fx.UNKNOWN_STRING)
    assert keys_named({**prod_plan, "resources": unknown(copy.deepcopy(prod_plan["resources"]))}) == set()


def test_without_the_mark_a_stack_lacking_every_item_passes(dev_plan_json):
    assert keys_named(dev_plan_json, {POLICY: {"production": False}}) == set()
