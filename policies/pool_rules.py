"""Resource rules for accelerator node pools: their capacity modes (flex-start, queued provisioning), multi-host
TPU placement, DRANET networking, zones and size.

Each rule is one function ``(args, report_violation)``; the first docstring line becomes the policy's
description, the rest says why. Values unknown during preview are skipped, never reported.
"""

from __future__ import annotations

from pulumi_policy import ReportViolation, ResourceValidationArgs

from components.facts import gpu_machines
from components.facts.gke import ACCELERATOR_NETWORK_PROFILE, CLUSTER_TYPE, NODE_POOL_TYPE
from components.facts.zones import zone_advisory
from policies.pools import pool_facts
from policies.props import UNKNOWN, as_number, is_true, is_unknown, items, lookup


def flex_start_pool_settings(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Flex-start pools: auto-repair off, scale from 0, no reservation.

    GKE rejects or fights flex-start VMs otherwise: they cannot be repaired in place (Cluster Toolkit's
    precondition "enable_flex_start needs node auto_repair set to false"), DWS provisions them on demand from
    zero, and they never consume reservations (--reservation-affinity=none). Auto-upgrade is not the pool's
    to choose in a cluster enrolled in a release channel (GKE keeps it on there), so it is not judged here.
    """
    if args.resource_type != NODE_POOL_TYPE or not is_true(lookup(args.props, "nodeConfig.flexStart")):
        return
    props = args.props
    for setting in ("autoRepair",):
        value = lookup(props, f"management.{setting}")
        if value is None or value is True:
            shown = "unset (GKE default true)" if value is None else "true"
            report_violation(f"pool '{args.name}': management.{setting} is {shown}; flex-start pools need false.", None)
    _require_scale_from_zero(args, "flex-start", report_violation)
    _require_no_reservation(args, "flex-start", report_violation)


def queued_provisioning_pool_settings(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Queued-provisioning pools: autoscaled from 0, no reservation, auto-repair off.

    Queued provisioning only ever adds nodes for an accepted ProvisioningRequest, all at once, and removes
    them when it ends; a static node count, a reservation or auto-repair contradicts that model and GKE
    refuses the pool (GKE "flex-start with queued provisioning" guide; the A4 seed's setup.sh).
    """
    if args.resource_type != NODE_POOL_TYPE or not is_true(lookup(args.props, "queuedProvisioning.enabled")):
        return
    _require_scale_from_zero(args, "queued-provisioning", report_violation)
    _require_no_reservation(args, "queued-provisioning", report_violation)
    if lookup(args.props, "management.autoRepair") in (None, True):
        report_violation(f"pool '{args.name}': management.autoRepair must be false with queued provisioning.", None)


def tpu_queued_provisioning(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """TPU pools do not use queued provisioning unless the pack config allows it.

    GKE has rejected flex-start TPU pools with queued provisioning (xpk PR #900 quotes the API error) while
    Cluster Toolkit ships an example with both: the combination is unproven, so it needs an explicit
    `allowTpuQueuedProvisioning: true`.
    """
    if args.resource_type != NODE_POOL_TYPE or not is_true(lookup(args.props, "queuedProvisioning.enabled")):
        return
    if args.get_config().get("allowTpuQueuedProvisioning", False):
        return
    facts = pool_facts(args.name, args.urn, args.props)
    if facts.is_tpu:
        report_violation(
            f"pool '{facts.name}' ({facts.machine_type}) enables queued provisioning on TPUs; set "
            "allowTpuQueuedProvisioning: true in the pack config to accept it.",
            None,
        )


def multi_host_tpu_placement(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Multi-host TPU pools: COMPACT placement with tpuTopology, in one zone, sized to the slice's VMs; a generation
    GKE places by workload policy (TPU7x) names one in policyName; a single-host pool takes no placement policy.

    A slice is only formed when GKE places every VM of the topology together; a pool with more or fewer
    nodes than the topology's VMs never becomes a usable slice (a 4x4 of ct6e-standard-4t is 4 VMs).
    """
    if args.resource_type != NODE_POOL_TYPE:
        return
    facts = pool_facts(args.name, args.urn, args.props)
    if facts.tpu_error:
        report_violation(f"pool '{facts.name}': placementPolicy.tpuTopology: {facts.tpu_error}", None)
        return
    if facts.tpu_slice is None:
        return
    if not facts.tpu_slice.multi_host:
        placement = lookup(args.props, "placementPolicy")
        if placement not in (None, {}) and not is_unknown(placement):
            report_violation(
                f"pool '{facts.name}': a single-host {facts.tpu_slice.pod_type} pool takes no placementPolicy; GKE "
                'refuses it ("TPU topology can\'t be specified with single-host TPU slice pool").',
                None,
            )
        return
    policy_name = lookup(args.props, "placementPolicy.policyName")
    if facts.tpu_slice.workload_policy and not policy_name and not is_unknown(policy_name):
        report_violation(
            f"pool '{facts.name}': a multi-host {facts.tpu_slice.pod_type} pool needs a HIGH_THROUGHPUT workload "
            "policy in placementPolicy.policyName; GKE refuses a compact placement policy for "
            f'{facts.machine_type} ("Use workload policy instead").',
            None,
        )
    vms = facts.tpu_slice.vms
    placement_type = lookup(args.props, "placementPolicy.type")
    if not is_unknown(placement_type) and placement_type != "COMPACT":
        report_violation(
            f"pool '{facts.name}': placementPolicy.type is {placement_type!r}; multi-host slices need 'COMPACT'.", None
        )
    node_locations = items(args.props, "nodeLocations")
    if len(node_locations) > 1:
        report_violation(
            f"pool '{facts.name}': a slice lives in one zone, nodeLocations has {len(node_locations)}.", None
        )
    size = facts.size
    if size.max_nodes is not None and size.max_nodes != vms:
        report_violation(
            f"pool '{facts.name}': {facts.tpu_slice.pod_type} ({facts.tpu_topology} of {facts.machine_type}) is "
            f"{vms} VMs, the pool's maximum is {size.max_nodes} nodes.",
            None,
        )
    if size.min_nodes is not None and size.min_nodes not in (0, vms):
        report_violation(
            f"pool '{facts.name}': minimum {size.min_nodes} nodes is neither 0 nor the slice's {vms} VMs.", None
        )


def dranet_pool_networks(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """GPU pools on managed DRANET: the accelerator network profile, and no additional node networks.

    GKE refuses a node pool with both an accelerator network profile and additional node networks (its DRANET
    how-to; Cluster Toolkit's gke-node-pool check `dranet_additional_networks_conflict`), and a machine whose RDMA
    NICs reach pods only through DRANET (A4X) gives its pods none without the profile.
    """
    if args.resource_type != NODE_POOL_TYPE:
        return
    profile = lookup(args.props, "networkConfig.acceleratorNetworkProfile")
    if is_unknown(profile):
        return
    networks = items(args.props, "networkConfig.additionalNodeNetworkConfigs")
    if profile and networks:
        report_violation(
            f"pool '{args.name}': networkConfig has acceleratorNetworkProfile {profile!r} and {len(networks)} "
            "additionalNodeNetworkConfigs; GKE refuses both on one pool.",
            None,
        )
    machine_type = lookup(args.props, "nodeConfig.machineType")
    machine = gpu_machines.GPU_MACHINES.get(machine_type) if isinstance(machine_type, str) else None
    if machine is not None and machine.dranet and not profile:
        report_violation(
            f"pool '{args.name}' ({machine_type}): its RDMA NICs reach pods only through DRANET, and "
            f"networkConfig.acceleratorNetworkProfile is unset (needs '{ACCELERATOR_NETWORK_PROFILE}').",
            None,
        )


def accelerator_zone_offered(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Accelerator pools sit in zones GCP lists for their accelerator (advisory; the table is dated).

    A zone without the accelerator fails only when GKE creates the pool, after the cluster is up. GCP adds
    zones, so a zone missing from components/facts/zones.py is worth a look, not a refusal.
    """
    if args.resource_type != NODE_POOL_TYPE:
        return
    machine_type = lookup(args.props, "nodeConfig.machineType")
    zones = [z for z in items(args.props, "nodeLocations") if isinstance(z, str)]
    if not zones and isinstance(lookup(args.props, "location"), str):
        zones = [lookup(args.props, "location")]
    for zone in zones:
        if isinstance(machine_type, str) and (advisory := zone_advisory(machine_type, zone)) is not None:
            report_violation(f"'{args.name}' ({machine_type}): {advisory}.", None)


def pool_has_max_size(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Autoscaled pools and node auto-provisioning have a maximum size (advisory).

    Without a maximum a runaway workload can scale accelerator nodes until the quota stops it, and the
    cost estimate cannot bound the bill.
    """
    if args.resource_type == NODE_POOL_TYPE and lookup(args.props, "autoscaling") is not None:
        facts = pool_facts(args.name, args.urn, args.props)
        if facts.size.max_nodes is None and lookup(args.props, "autoscaling.maxNodeCount") is not UNKNOWN:
            report_violation(f"pool '{facts.name}': autoscaling has no maxNodeCount or totalMaxNodeCount.", None)
    nap_enabled = args.resource_type == CLUSTER_TYPE and is_true(lookup(args.props, "clusterAutoscaling.enabled"))
    if nap_enabled and not items(args.props, "clusterAutoscaling.resourceLimits"):
        report_violation(f"cluster '{args.name}': node auto-provisioning has no resourceLimits.", None)


def _require_scale_from_zero(args: ResourceValidationArgs, mode: str, report_violation: ReportViolation) -> None:
    facts = pool_facts(args.name, args.urn, args.props)
    if not facts.size.autoscaled:
        report_violation(f"pool '{facts.name}': {mode} pools need autoscaling from 0; autoscaling is not set.", None)
    elif facts.size.min_nodes not in (0, None):
        report_violation(
            f"pool '{facts.name}': {mode} pools scale from 0, the minimum is {facts.size.min_nodes}.", None
        )
    for key in ("nodeCount", "initialNodeCount"):
        count = as_number(lookup(args.props, key))
        if count:
            report_violation(f"pool '{facts.name}': {key} is {count:g}; {mode} pools start at 0 nodes.", None)


def _require_no_reservation(args: ResourceValidationArgs, mode: str, report_violation: ReportViolation) -> None:
    kind = lookup(args.props, "nodeConfig.reservationAffinity.consumeReservationType")
    if not is_unknown(kind) and kind != "NO_RESERVATION":
        shown = "unset" if kind is None else repr(kind)
        report_violation(
            f"pool '{args.name}': nodeConfig.reservationAffinity.consumeReservationType is {shown}; "
            f"{mode} pools need 'NO_RESERVATION'.",
            None,
        )
