"""Resource rules for the Google Cloud resources: networks, the cluster and its nodes' identity, buckets, firewalls
and regions (accelerator pools have pool_rules.py).

Each rule is one function ``(args, report_violation)``; the first docstring line becomes the policy's
description, the rest says why. Values unknown during preview are skipped, never reported.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs

from components.facts.gke import (
    BUCKET_TYPE,
    CLUSTER_TYPE,
    FIREWALL_TYPE,
    NETWORK_TYPE,
    NODE_POOL_TYPE,
)
from policies.addresses import admits_the_internet, share_shown
from policies.props import as_number, is_true, is_unknown, items, lookup

ACCELERATOR_MTU = 8896


def accelerator_vpc_mtu(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """VPC networks use MTU 8896.

    Every VPC here carries accelerator traffic (TPU DCN between slices, GPUDirect RDMA, gVNIC); at GCP's
    default 1460 multislice and NCCL throughput drop and large frames fragment. Cluster Toolkit and xpk
    create these networks with 8896.
    """
    if args.resource_type != NETWORK_TYPE:
        return
    mtu = lookup(args.props, "mtu")
    if is_unknown(mtu):
        return
    if as_number(mtu) != ACCELERATOR_MTU:
        shown = "unset (GCP default 1460)" if mtu is None else f"{as_number(mtu):g}"
        report_violation(f"network '{args.name}': mtu is {shown}; accelerator VPCs need {ACCELERATOR_MTU}.", None)


def cluster_workload_identity(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The cluster has Workload Identity on.

    Trainers reach the bucket as Kubernetes service accounts through Workload Identity; without it pods
    fall back to the node's service account, which every pod on the node shares.
    """
    if args.resource_type != CLUSTER_TYPE:
        return
    pool = lookup(args.props, "workloadIdentityConfig.workloadPool")
    if not is_unknown(pool) and not pool:
        report_violation(f"cluster '{args.name}': workloadIdentityConfig.workloadPool is not set.", None)


def cluster_no_legacy_auth(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The cluster has no legacy ABAC, no basic auth and no client certificate.

    Each is a long-lived credential or an authorizer that bypasses RBAC; GKE's hardening guide turns all off.
    """
    if args.resource_type != CLUSTER_TYPE:
        return
    if is_true(lookup(args.props, "enableLegacyAbac")):
        report_violation(f"cluster '{args.name}': enableLegacyAbac is true.", None)
    if lookup(args.props, "masterAuth.username") or lookup(args.props, "masterAuth.password"):
        report_violation(f"cluster '{args.name}': masterAuth sets basic-auth credentials.", None)
    if is_true(lookup(args.props, "masterAuth.clientCertificateConfig.issueClientCertificate")):
        report_violation(
            f"cluster '{args.name}': masterAuth.clientCertificateConfig.issueClientCertificate is true.", None
        )


def cluster_shielded_nodes(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The cluster keeps shielded nodes on.

    Shielded nodes prove node identity to the control plane, so a compromised VM cannot join as a node.
    The provider's default is true; only an explicit false is a violation.
    """
    if args.resource_type == CLUSTER_TYPE and lookup(args.props, "enableShieldedNodes") is False:
        report_violation(f"cluster '{args.name}': enableShieldedNodes is false.", None)


def pools_use_gke_metadata_server(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Every node pool runs the GKE metadata server (workloadMetadataConfig.mode GKE_METADATA).

    Workload Identity only works, and the node's own credentials are only hidden from pods, on pools
    with the GKE metadata server; state it on each pool instead of relying on the cluster's default.
    """
    if args.resource_type == NODE_POOL_TYPE:
        _require_gke_metadata(args.props, f"pool '{args.name}'", report_violation)
    elif (
        args.resource_type == CLUSTER_TYPE
        and not is_true(lookup(args.props, "removeDefaultNodePool"))
        and lookup(args.props, "nodeConfig") is not None
    ):
        _require_gke_metadata(args.props, f"cluster '{args.name}' default pool", report_violation)
    if args.resource_type == CLUSTER_TYPE:
        for index, pool in enumerate(items(args.props, "nodePools")):
            _require_gke_metadata(pool, f"cluster '{args.name}' nodePools[{index}]", report_violation)


def bucket_uniform_access(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Buckets use uniform bucket-level access and enforce public access prevention.

    Datasets and checkpoints are private: uniform access turns off per-object ACLs (IAM is the only way in)
    and public access prevention refuses any public grant even by mistake.
    """
    if args.resource_type != BUCKET_TYPE:
        return
    uniform = lookup(args.props, "uniformBucketLevelAccess")
    if not is_unknown(uniform) and uniform is not True:
        report_violation(f"bucket '{args.name}': uniformBucketLevelAccess is {uniform!r}, must be true.", None)
    prevention = lookup(args.props, "publicAccessPrevention")
    if not is_unknown(prevention) and prevention != "enforced":
        report_violation(f"bucket '{args.name}': publicAccessPrevention is {prevention!r}, must be 'enforced'.", None)


def bucket_soft_delete_on(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Buckets keep deleted and overwritten objects restorable (soft delete not turned off).

    A checkpoint deleted by a mistake, a bad job or a stolen token is gone for good once soft delete is off
    (softDeletePolicy.retentionDurationSeconds 0); unset, GCS keeps objects 7 days. The stack sets
    trainyard:storage.softDeleteDays (components/infra/storage.py).
    """
    if args.resource_type != BUCKET_TYPE:
        return
    retention = lookup(args.props, "softDeletePolicy.retentionDurationSeconds")
    if as_number(retention) == 0:
        report_violation(
            f"bucket '{args.name}': softDeletePolicy.retentionDurationSeconds is 0; deleted objects are gone.", None
        )


def firewall_not_open_to_the_internet(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """No firewall rule admits traffic from the internet: no source at all, 0.0.0.0/0, or ranges that add up to it.

    Accelerator nodes only talk to each other and to Google's front ends; an open ingress rule exposes every
    port it allows on every node of the network. An ingress rule without sourceRanges, sourceTags or
    sourceServiceAccounts admits 0.0.0.0/0 (docs/cloud-facts.md: firewall rules without a source), and
    0.0.0.0/1 + 128.0.0.0/1 is the internet in two halves: the rule counts the public addresses
    the ranges cover together (policies/addresses.py). Deny rules and egress rules are not judged.
    """
    if args.resource_type != FIREWALL_TYPE or str(lookup(args.props, "direction") or "INGRESS").upper() != "INGRESS":
        return
    if not items(args.props, "allows"):
        return
    sources = lookup(args.props, "sourceRanges")
    if is_unknown(sources) or any(is_unknown(source) for source in items(args.props, "sourceRanges")):
        return
    ranges = items(args.props, "sourceRanges")
    if not ranges:
        if not items(args.props, "sourceTags") and not items(args.props, "sourceServiceAccounts"):
            report_violation(
                f"firewall '{args.name}': an ingress rule with no source (sourceRanges, sourceTags or "
                "sourceServiceAccounts) admits 0.0.0.0/0.",
                None,
            )
        return
    if admits_the_internet(ranges):
        report_violation(
            f"firewall '{args.name}': sourceRanges {', '.join(map(str, ranges))} admit {share_shown(ranges)}.", None
        )


def allowed_regions(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Resources stay in the regions the pack config allows.

    Data residency and quota live per region; an empty allowedRegions list allows every region.
    """
    allowed = [region.lower() for region in args.get_config().get("allowedRegions", [])]
    if not allowed:
        return
    for key in ("location", "region"):
        location = lookup(args.props, key)
        if isinstance(location, str) and not _within(location.lower(), allowed):
            report_violation(f"'{args.name}': {key} {location!r} is outside the allowed regions {allowed}.", None)


def cluster_deletion_protection_off(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The cluster has deletion protection off (advisory).

    Fine for a dev stack that is torn down often; a shared cluster should keep it on so `pulumi destroy`
    or a replacement cannot delete it by accident. The provider's default is on.
    """
    if args.resource_type == CLUSTER_TYPE and lookup(args.props, "deletionProtection") is False:
        report_violation(f"cluster '{args.name}': deletionProtection is false; `pulumi destroy` will delete it.", None)


# ---- helpers ------------------------------------------------------------------------------------


def _require_gke_metadata(props: Any, where: str, report_violation: ReportViolation) -> None:
    mode = lookup(props, "nodeConfig.workloadMetadataConfig.mode")
    if not is_unknown(mode) and mode != "GKE_METADATA":
        shown = "unset" if mode is None else repr(mode)
        report_violation(f"{where}: nodeConfig.workloadMetadataConfig.mode is {shown}, must be 'GKE_METADATA'.", None)


def _within(location: str, allowed: list[str]) -> bool:
    """A zone (us-east5-b) is within its region; multi-regions (US, EU) must be listed themselves."""
    return any(location == region or location.startswith(f"{region}-") for region in allowed)
