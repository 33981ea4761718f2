"""The production profile: a stack the pack config marks production holds every CIS GKE item the stack sets.

One stack rule, which judges nothing unless its config says `"production": true` (policies/config.prod-like.json).
Each item is a small function that yields what a resource lacks and the stack file setting that gives it. Values
unknown during preview are skipped, never reported. docs/security.md lists the items, what the prod-like stack sets
for each and why the dev stack leaves them to GKE's defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs

from components.facts.gke import (
    BUCKET_TYPE,
    CLUSTER_TYPE,
    NETWORK_TYPE,
    NODE_POOL_TYPE,
    ROUTER_NAT_TYPE,
    SUBNETWORK_TYPE,
)
from components.facts.hardening import (
    ALL_SERVICES,
    AUDIT_CONFIG_TYPE,
    BINARY_AUTHORIZATION_ENFORCE,
    CONTAINER_SERVICE,
    DATA_LOG_TYPES,
    KUBELET_READ_ONLY_PORT,
    SECURITY_POSTURE_ON,
    STORAGE_SERVICE,
)
from policies.props import as_number, is_unknown, items, lookup

# The resource's URN (None: the stack), what it lacks, and the stack file setting that gives it.
Finding = tuple[str | None, str, str]
PORT_OFF = KUBELET_READ_ONLY_PORT[False]
CLUSTER_PORT = "nodePoolDefaults.nodeConfigDefaults.insecureKubeletReadonlyPortEnabled"
POOL_PORT = "nodeConfig.kubeletConfig.insecureKubeletReadonlyPortEnabled"


def cis_gke_profile(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """A production stack holds the CIS GKE items (pack config `production: true`).

    A release channel, Secrets encrypted in etcd and every node's boot disk with a customer-managed key, the kubelet's
    read-only port off on every pool and in the cluster's defaults, Binary Authorization enforced, the security
    posture on, VPC flow logs on every subnet but RDMA ones, Cloud NAT logging, and Data Access audit logs for the
    GKE and Cloud Storage APIs. Off by default: the dev stack leaves these to GKE's defaults on purpose
    (docs/security.md), and a stack becomes production by its pack config, not by a value it could drop itself.
    """
    if not args.get_config().get("production", False):
        return
    resources = list(args.resources)
    for item in ITEMS:
        for urn, lacking, setting in item(resources):
            report_violation(f"{lacking}; a production stack sets {setting} (docs/security.md)", urn)


def _of_type(resources: Sequence[Any], type_: str) -> list[Any]:
    return [resource for resource in resources if resource.resource_type == type_]


def _missing(value: Any, wanted: Callable[[Any], bool]) -> bool:
    """The value is known and is not what the item wants."""
    return not is_unknown(value) and not wanted(value)


def _shown(value: Any) -> str:
    return "unset" if value is None else repr(value)


def release_channel(resources: Sequence[Any]) -> Iterator[Finding]:
    for cluster in _of_type(resources, CLUSTER_TYPE):
        channel = lookup(cluster.props, "releaseChannel.channel")
        if _missing(channel, lambda value: value not in (None, "UNSPECIFIED")):
            lacking = f"cluster '{cluster.name}' is in no release channel (releaseChannel {_shown(channel)})"
            yield cluster.urn, lacking, "trainyard:cluster.releaseChannel (a channel, not UNSPECIFIED)"


def secrets_encryption(resources: Sequence[Any]) -> Iterator[Finding]:
    for cluster in _of_type(resources, CLUSTER_TYPE):
        state = lookup(cluster.props, "databaseEncryption.state")
        key = lookup(cluster.props, "databaseEncryption.keyName")
        if _missing(state, lambda value: value == "ENCRYPTED") or _missing(key, bool):
            lacking = f"cluster '{cluster.name}' does not encrypt Kubernetes Secrets in etcd with a Cloud KMS key"
            yield cluster.urn, lacking, "trainyard:cluster.secretsEncryptionKey"


def boot_disk_encryption(resources: Sequence[Any]) -> Iterator[Finding]:
    for pool in _of_type(resources, NODE_POOL_TYPE):
        if _missing(lookup(pool.props, "nodeConfig.bootDiskKmsKey"), bool):
            lacking = f"pool '{pool.name}' boots from disks without a customer-managed key (nodeConfig.bootDiskKmsKey)"
            yield pool.urn, lacking, "trainyard:cluster.bootDiskEncryptionKey"


def kubelet_read_only_port(resources: Sequence[Any]) -> Iterator[Finding]:
    """Off on every pool of the stack, and in the cluster's defaults for pools made outside it."""
    clusters = [(cluster, CLUSTER_PORT, "cluster") for cluster in _of_type(resources, CLUSTER_TYPE)]
    pools = [(pool, POOL_PORT, "pool") for pool in _of_type(resources, NODE_POOL_TYPE)]
    for resource, path, kind in clusters + pools:
        enabled = lookup(resource.props, path)
        if _missing(enabled, lambda value: value == PORT_OFF):
            lacking = (
                f"{kind} '{resource.name}' leaves the kubelet's unauthenticated read-only port (10255) to GKE or open "
                f"({path} {_shown(enabled)})"
            )
            yield resource.urn, lacking, "trainyard:cluster.kubeletReadOnlyPort: false"


def binary_authorization(resources: Sequence[Any]) -> Iterator[Finding]:
    for cluster in _of_type(resources, CLUSTER_TYPE):
        mode = lookup(cluster.props, "binaryAuthorization.evaluationMode")
        if _missing(mode, lambda value: value == BINARY_AUTHORIZATION_ENFORCE):
            lacking = (
                f"cluster '{cluster.name}' does not enforce the project's Binary Authorization policy "
                f"(binaryAuthorization.evaluationMode {_shown(mode)})"
            )
            yield cluster.urn, lacking, "trainyard:cluster.binaryAuthorization: true"


def security_posture(resources: Sequence[Any]) -> Iterator[Finding]:
    for cluster in _of_type(resources, CLUSTER_TYPE):
        mode = lookup(cluster.props, "securityPostureConfig.mode")
        if _missing(mode, lambda value: value in SECURITY_POSTURE_ON):
            lacking = (
                f"cluster '{cluster.name}' does not audit its workloads' configuration "
                f"(securityPostureConfig.mode {_shown(mode)})"
            )
            yield cluster.urn, lacking, f"trainyard:cluster.securityPosture ({' or '.join(SECURITY_POSTURE_ON)})"


def flow_logs(resources: Sequence[Any]) -> Iterator[Finding]:
    """Every subnet but those of RDMA (RoCE) VPCs, whose traffic goes from NIC to NIC past what flow logs sample."""
    rdma_networks = {
        network.urn for network in _of_type(resources, NETWORK_TYPE) if lookup(network.props, "networkProfile")
    }
    for subnet in _of_type(resources, SUBNETWORK_TYPE):
        if rdma_networks & {dependency.urn for dependency in subnet.dependencies}:
            continue
        log_config = lookup(subnet.props, "logConfig")
        sampling = lookup(subnet.props, "logConfig.flowSampling")
        if is_unknown(log_config) or is_unknown(sampling):
            continue
        if log_config is None or (sampling is not None and not as_number(sampling)):
            yield subnet.urn, f"subnet '{subnet.name}' logs no VPC flows", "trainyard:network.flowLogSampling"


def nat_logs(resources: Sequence[Any]) -> Iterator[Finding]:
    for nat in _of_type(resources, ROUTER_NAT_TYPE):
        enabled = lookup(nat.props, "logConfig.enable")
        if _missing(enabled, lambda value: value is True):
            lacking = f"Cloud NAT '{nat.name}' logs nothing (logConfig.enable {_shown(enabled)})"
            yield nat.urn, lacking, "trainyard:network.natLogs"


def data_access_logs(resources: Sequence[Any]) -> Iterator[Finding]:
    """Reads and writes of the GKE and Cloud Storage APIs are audit-logged, for every principal (no exemptions)."""
    audited = {
        lookup(config.props, "service")
        for config in _of_type(resources, AUDIT_CONFIG_TYPE)
        if _logs_data_of_everyone(config.props)
    }
    wanted = (
        (CLUSTER_TYPE, CONTAINER_SERVICE, "trainyard:cluster.dataAccessLogs: true"),
        (BUCKET_TYPE, STORAGE_SERVICE, "trainyard:storage.dataAccessLogs: true"),
    )
    for type_, service, setting in wanted:
        if _of_type(resources, type_) and not audited & {service, ALL_SERVICES}:
            lacking = (
                f"the project records no Data Access audit logs ({' and '.join(DATA_LOG_TYPES)}, nobody exempt) "
                f"for {service}: who read or wrote what goes unrecorded"
            )
            yield None, lacking, setting


def _logs_data_of_everyone(props: Any) -> bool:
    configs = items(props, "auditLogConfigs")
    logged = {lookup(config, "logType") for config in configs if not items(config, "exemptedMembers")}
    return set(DATA_LOG_TYPES) <= logged


ITEMS: tuple[Callable[[Sequence[Any]], Iterator[Finding]], ...] = (
    release_channel,
    secrets_encryption,
    boot_disk_encryption,
    kubelet_read_only_port,
    binary_authorization,
    security_posture,
    flow_logs,
    nat_logs,
    data_access_logs,
)
