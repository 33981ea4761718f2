"""Node settings every pool shares, and what each capacity mode means for a node pool."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.config.models import ClusterConfig
from components.facts.capacity import SPECIFIC_RESERVATION, Capacity
from components.facts.gcp_names import compute_name
from components.facts.hardening import KUBELET_READ_ONLY_PORT
from components.infra.fixed_names import fixed_name_options
from components.infra.network import NodeNetwork


@dataclass(frozen=True)
class NodeHardening:
    """What every pool's nodes get beyond GKE's defaults, from `trainyard:cluster` (None: GKE's default)."""

    kubelet_read_only_port: bool | None = None
    boot_disk_kms_key: str | None = None

    @classmethod
    def of(cls, cluster: ClusterConfig) -> NodeHardening:
        return cls(cluster.kubelet_read_only_port, cluster.boot_disk_encryption_key)

    def kubelet_config(self) -> gcp.container.NodePoolNodeConfigKubeletConfigArgs | None:
        if self.kubelet_read_only_port is None:
            return None
        return gcp.container.NodePoolNodeConfigKubeletConfigArgs(
            insecure_kubelet_readonly_port_enabled=KUBELET_READ_ONLY_PORT[self.kubelet_read_only_port]
        )


@dataclass(frozen=True)
class PoolPlacement:
    """What every accelerator pool of one role shares: where it goes and as whom its nodes run."""

    zone: str
    region: str  # the zone's region, where workload policies live
    name_prefix: str  # the cluster's name: workload policies are named <prefix>-<owner>-<topology>
    cluster: gcp.container.Cluster
    node_networks: list[NodeNetwork]  # attached in this order (a pod's eth1, eth2, ...)
    service_account: pulumi.Input[str] | None  # the role's node account (None: the role has no pools)
    identity_ready: pulumi.Resource | None  # its grant, which the pools wait for
    release_channel: bool  # the cluster is enrolled in a release channel: node auto-upgrade stays on
    hardening: NodeHardening  # the kubelet's read-only port, the boot disks' key


CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
RESERVATION_NAME_KEY = "compute.googleapis.com/reservation-name"


def reservation_affinity(capacity: Capacity, reservation: str | None):
    if capacity is Capacity.RESERVATION:
        return gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type=SPECIFIC_RESERVATION, key=RESERVATION_NAME_KEY, values=[reservation]
        )
    if capacity.flex_start:
        return gcp.container.NodePoolNodeConfigReservationAffinityArgs(consume_reservation_type="NO_RESERVATION")
    return None


def node_config(
    machine_type: str,
    service_account: pulumi.Input[str],
    node_hardening: NodeHardening,
    capacity: Capacity = Capacity.ON_DEMAND,
    reservation: str | None = None,
    **extra: object,
) -> gcp.container.NodePoolNodeConfigArgs:
    """The role's own service account, Workload Identity's metadata server, gVNIC, secure boot and the
    cloud-platform scope on every node (with a least-privilege account, GKE recommends that scope and lets IAM
    decide), and the stack's kubelet and boot disk settings. Secure boot holds on TPU and GPU nodes too: GKE's
    drivers are signed (docs/cloud-facts.md)."""
    return gcp.container.NodePoolNodeConfigArgs(
        machine_type=machine_type,
        service_account=service_account,
        oauth_scopes=[CLOUD_PLATFORM_SCOPE],
        gvnic=gcp.container.NodePoolNodeConfigGvnicArgs(enabled=True),
        workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
        shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
            enable_secure_boot=True, enable_integrity_monitoring=True
        ),
        spot=True if capacity is Capacity.SPOT else None,
        flex_start=True if capacity.flex_start else None,
        reservation_affinity=reservation_affinity(capacity, reservation),
        kubelet_config=node_hardening.kubelet_config(),
        boot_disk_kms_key=node_hardening.boot_disk_kms_key,
        **extra,
    )


def management(capacity: Capacity, release_channel: bool) -> gcp.container.NodePoolManagementArgs:
    """Flex-start VMs are not repaired in place (Cluster Toolkit's gke-node-pool: "enable_flex_start needs node
    auto_repair set to false"), nor upgraded where GKE lets a pool choose: only a cluster outside a release channel
    may turn node auto-upgrade off; in a channel GKE refuses a pool without it (docs/cloud-facts.md: node
    auto-upgrade and release channels)."""
    return gcp.container.NodePoolManagementArgs(
        auto_repair=not capacity.flex_start, auto_upgrade=release_channel or not capacity.flex_start
    )


def additional_networks(node_networks: Sequence[NodeNetwork]) -> gcp.container.NodePoolNetworkConfigArgs | None:
    if not node_networks:
        return None
    return gcp.container.NodePoolNetworkConfigArgs(
        additional_node_network_configs=[
            gcp.container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs(
                network=node_network.network.name, subnetwork=node_network.subnetwork.name
            )
            for node_network in node_networks
        ]
    )


# GKE keeps a pool placed by a workload policy as policyName (and tpuTopology), without the type the provider requires
# on create: the type read back differs from the one sent, and the block is ForceNew, so without this every update
# would replace the pool (vllm-project/ci-infra PR #552; docs/cloud-facts.md: TPU7x workload policies).
WORKLOAD_POLICY_IGNORED = ("placementPolicy.type",)


def workload_policy(
    parent: pulumi.Resource, resource_name: str, placement: PoolPlacement, owner: str, accelerator_topology: str
) -> gcp.compute.ResourcePolicy:
    """A HIGH_THROUGHPUT workload policy: its pool's VMs on one accelerator fabric of `accelerator_topology` (a TPU7x
    slice, an A4X NVL72 domain). Named <cluster>-<owner>-<topology>: unique to the stack, and a new topology makes a
    new policy beside the old one instead of renaming it in place."""
    return gcp.compute.ResourcePolicy(
        resource_name,
        name=compute_name(placement.name_prefix, owner, accelerator_topology),
        region=placement.region,
        workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
            type="HIGH_THROUGHPUT", accelerator_topology=accelerator_topology
        ),
        opts=pulumi.ResourceOptions(parent=parent),
    )


def pool_options(
    parent: pulumi.Resource,
    capacity: Capacity,
    depends_on: Sequence[pulumi.Resource] = (),
    workload_policy: bool = False,
) -> pulumi.ResourceOptions:
    """GKE rewrites flex-start pools' upgrade settings (strategy SHORT_LIVED) whatever is sent, so the
    field would show a diff on every preview (docs/cloud-facts.md: flex-start pools and upgradeSettings); a pool
    placed by a workload policy keeps the type it was created with (WORKLOAD_POLICY_IGNORED)."""
    ignored = (["upgradeSettings"] if capacity.flex_start else []) + (
        list(WORKLOAD_POLICY_IGNORED) if workload_policy else []
    )
    return fixed_name_options(parent, ignore_changes=ignored or None, depends_on=list(depends_on))
