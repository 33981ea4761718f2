"""Stack rules: checks that need several resources at once (workloads against pools, Kueue, cost).

Each rule reads ``args.resources`` (every resource of the stack, engine-shaped) and reports with the URN of
the offending resource.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs

from components.facts import cost
from components.facts.gke import (
    FIREWALL_TYPE,
    GPU_RESOURCE,
    NETWORK_TYPE,
    NODE_POOL_TYPE,
    PREFERRED_TOPOLOGY_ANNOTATION,
    PROVISIONING_REQUEST_CONTROLLER,
    QUEUE_LABEL,
    QUEUED_PROVISIONING_CLASS,
    REQUIRED_TOPOLOGY_ANNOTATION,
    SUBNETWORK_TYPE,
    TPU_RESOURCE,
)
from policies.pools import PoolFacts, stack_pools
from policies.props import as_number, has_unknown, is_unknown, items, lookup, plain
from policies.workloads import (
    BATCH_KINDS,
    RAY_KINDS,
    accelerator_requests,
    kind_of,
    labels_of,
    landing_pools,
    namespace_of,
    object_name,
    pod_templates,
    uncertain,
)

_FLAG = r"--?{name}[= ]+(\d+)"


def _objects(args: StackValidationArgs, kind: str) -> list[Any]:
    return [r for r in args.resources if kind_of(r.resource_type) == kind]


def _known_pools(args: StackValidationArgs) -> list[PoolFacts] | None:
    """The stack's pools, or None when any pool's facts are unknown during preview (cannot judge yet)."""
    pools = stack_pools(args.resources)
    return None if any(pool.uncertain for pool in pools) else pools


def _any_uncertain(args: StackValidationArgs, *kinds: str) -> bool:
    return any(uncertain(kind, r.props) for kind in kinds for r in _objects(args, kind))


def dws_workloads_use_kueue(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Jobs and RayJobs that can land on DWS pools carry a Kueue queue label naming a LocalQueue.

    DWS capacity arrives all at once for an admitted workload; a job that bypasses Kueue either waits
    forever on a queued-provisioning pool or grabs flex-start nodes piecemeal, so gang jobs deadlock.
    """
    pools = _known_pools(args)
    if pools is None or _any_uncertain(args, "LocalQueue"):
        return
    local_queues = {(namespace_of(r.props), object_name(r.props, r.name)) for r in _objects(args, "LocalQueue")}
    for resource in args.resources:
        kind = kind_of(resource.resource_type)
        if kind not in BATCH_KINDS + RAY_KINDS or uncertain(kind, resource.props):
            continue
        dws = sorted(
            {p.name for t in pod_templates(kind, resource.props) for p in landing_pools(t.spec, pools) if p.is_dws}
        )
        if not dws:
            continue
        queue = labels_of(resource.props).get(QUEUE_LABEL)
        if not queue:
            report_violation(
                f"{kind} '{resource.name}' can land on DWS pools {dws} but has no '{QUEUE_LABEL}' label.", resource.urn
            )
        elif local_queues and (namespace_of(resource.props), queue) not in local_queues:
            report_violation(
                f"{kind} '{resource.name}' names queue '{queue}', which is not a LocalQueue of namespace "
                f"'{namespace_of(resource.props)}' in this stack.",
                resource.urn,
            )


def queued_provisioning_has_kueue(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Queued-provisioning pools are reachable through Kueue's ProvisioningRequest admission check.

    Such a pool only scales up for a ProvisioningRequest; without a ProvisioningRequestConfig of class
    queued-provisioning.gke.io managing the pool's accelerator, an AdmissionCheck using it and a
    ClusterQueue running that check, nothing can ever start a node in it.
    """
    pools = _known_pools(args)
    kueue_kinds = ("ProvisioningRequestConfig", "AdmissionCheck", "ClusterQueue")
    if pools is None or _any_uncertain(args, *kueue_kinds):
        return
    queued = [pool for pool in pools if pool.queued]
    configs = {
        object_name(r.props, r.name): {str(x) for x in items(r.props, "spec.managedResources")}
        for r in _objects(args, "ProvisioningRequestConfig")
        if lookup(r.props, "spec.provisioningClassName") == QUEUED_PROVISIONING_CLASS
    }
    checks = {
        object_name(r.props, r.name): lookup(r.props, "spec.parameters.name")
        for r in _objects(args, "AdmissionCheck")
        if lookup(r.props, "spec.controllerName") == PROVISIONING_REQUEST_CONTROLLER
    }
    used_checks = {name for r in _objects(args, "ClusterQueue") for name in _cluster_queue_checks(r.props)}
    for pool in queued:
        resource = pool.accelerator_resource
        managing = {name for name, managed in configs.items() if resource in managed}
        usable = {check for check, config in checks.items() if config in managing and check in used_checks}
        if not managing:
            report_violation(
                f"pool '{pool.name}' uses queued provisioning but no ProvisioningRequestConfig of class "
                f"'{QUEUED_PROVISIONING_CLASS}' manages {resource or 'its resources'}.",
                pool.urn,
            )
        elif not usable:
            report_violation(
                f"pool '{pool.name}': no ClusterQueue runs an AdmissionCheck ({PROVISIONING_REQUEST_CONTROLLER}) "
                f"with ProvisioningRequestConfig {sorted(managing)}.",
                pool.urn,
            )


def _cluster_queue_checks(props: Any) -> list[str]:
    names = [str(name) for name in items(props, "spec.admissionChecks")]
    names += [str(lookup(c, "name")) for c in items(props, "spec.admissionChecksStrategy.admissionChecks")]
    return names


def ray_worker_groups_match_pools(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Ray TPU worker groups match the slices they land on: hosts, chips per host, slice count.

    KubeRay creates numOfHosts pods per replica, one per VM of a slice; a group whose numOfHosts or
    google.com/tpu request differs from the slice, or with more replicas than slices, never schedules.
    """
    pools = _known_pools(args)
    if pools is None:
        return
    for resource in args.resources:
        kind = kind_of(resource.resource_type)
        if kind not in RAY_KINDS or uncertain(kind, resource.props):
            continue
        for template in pod_templates(kind, resource.props):
            if template.is_ray_worker:
                for problem in _worker_group_problems(template, pools):
                    report_violation(f"{kind} '{resource.name}' {template.where}: {problem}", resource.urn)


def _worker_group_problems(template: Any, pools: list[PoolFacts]) -> list[str]:
    requested = accelerator_requests(template.spec)
    if not requested:
        return []
    targets = landing_pools(template.spec, pools)
    if not targets:
        return [f"requests {requested} but no node pool in the stack fits its selectors"]
    replicas = max(_number(template.group, "replicas"), _number(template.group, "maxReplicas"))
    hosts = _number(template.group, "numOfHosts") or 1
    if TPU_RESOURCE in requested:
        return _tpu_group_problems(requested[TPU_RESOURCE], int(hosts), int(replicas), targets)
    per_node = min(pool.accelerators_per_node for pool in targets)
    capacity = sum((pool.size.max_nodes or 0) * pool.accelerators_per_node for pool in targets)
    problems = []
    if requested.get(GPU_RESOURCE, 0) > per_node:
        problems.append(f"requests {requested[GPU_RESOURCE]:g} GPUs per pod, its nodes have {per_node}")
    if replicas * hosts * requested.get(GPU_RESOURCE, 0) > capacity:
        problems.append(f"needs {replicas * hosts * requested[GPU_RESOURCE]:g} GPUs, its pools hold {capacity} at most")
    return problems


def _tpu_group_problems(chips: float, hosts: int, replicas: int, targets: list[PoolFacts]) -> list[str]:
    slices = [pool for pool in targets if pool.tpu_slice is not None]
    problems = []
    for shape in {(pool.tpu_slice.pod_type, pool.tpu_slice.vms, pool.tpu_slice.chips_per_vm) for pool in slices}:  # type: ignore[union-attr]
        pod_type, vms, chips_per_vm = shape
        if hosts != vms:
            problems.append(f"numOfHosts is {hosts}, a {pod_type} slice is {vms} VMs")
        if chips != chips_per_vm:
            problems.append(f"requests {chips:g} google.com/tpu per pod, a {pod_type} VM has {chips_per_vm} chips")
    if slices and replicas > len(slices):
        problems.append(f"asks for {replicas} slices (replicas), the stack has {len(slices)} matching slice pools")
    return problems


def jax_trainer_workers_match_slices(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """A RayJob's JaxTrainer worker counts equal its TPU worker groups' hosts, in whole slices.

    The trainer is told its shape on the entrypoint (--slices/--hosts-per-slice/--chips-per-host, or
    --num-workers with elastic --min-workers/--max-workers); Ray Train reserves one worker per TPU host and
    scales elastic jobs by whole slices (ray PRs #61299, #64284), so any other number hangs waiting for
    hosts that never come.
    """
    pools = _known_pools(args)
    if pools is None:
        return
    for resource in _objects(args, "RayJob"):
        if uncertain("RayJob", resource.props):
            continue
        entrypoint = lookup(resource.props, "spec.entrypoint")
        if not isinstance(entrypoint, str):
            continue
        counts = {flag: _flag(entrypoint, flag) for flag in TRAINER_FLAGS}
        shape = _tpu_shape(resource.props)
        if shape is None or not any(value is not None for value in counts.values()):
            continue
        for problem in _worker_count_problems(counts, *shape):
            report_violation(f"RayJob '{resource.name}': {problem}", resource.urn)


TRAINER_FLAGS = ("num-workers", "min-workers", "max-workers", "slices", "hosts-per-slice", "chips-per-host")


def _worker_count_problems(
    counts: Mapping[str, int | None], hosts_per_slice: int, total_hosts: int, chips: float
) -> list[str]:
    problems = []
    if counts["hosts-per-slice"] is not None and counts["hosts-per-slice"] != hosts_per_slice:
        problems.append(
            f"--hosts-per-slice {counts['hosts-per-slice']}, the worker group has numOfHosts {hosts_per_slice}"
        )
    if counts["chips-per-host"] is not None and counts["chips-per-host"] != chips:
        problems.append(f"--chips-per-host {counts['chips-per-host']}, the workers request {chips:g} google.com/tpu")
    if counts["slices"] is not None and counts["slices"] * hosts_per_slice != total_hosts:
        problems.append(
            f"--slices {counts['slices']} x {hosts_per_slice} hosts, the TPU worker groups have {total_hosts} hosts"
        )
    top = counts["max-workers"] if counts["max-workers"] is not None else counts["num-workers"]
    if top is not None and top != total_hosts:
        problems.append(f"the trainer asks for {top} workers, the TPU worker groups have {total_hosts} hosts")
    for flag in ("num-workers", "min-workers", "max-workers"):
        value = counts[flag]
        if value is not None and value % hosts_per_slice:
            problems.append(f"--{flag} {value} is not a whole number of {hosts_per_slice}-host slices")
    return problems


def _tpu_shape(props: Any) -> tuple[int, int, float] | None:
    """(hosts per slice, hosts at maximum scale, chips per host) over the RayJob's TPU worker groups."""
    hosts_per_slice, total, chips = 0, 0, 0.0
    for template in pod_templates("RayJob", props):
        requested = accelerator_requests(template.spec)
        if template.is_ray_worker and TPU_RESOURCE in requested:
            hosts = int(_number(template.group, "numOfHosts") or 1)
            replicas = int(max(_number(template.group, "replicas"), _number(template.group, "maxReplicas")))
            hosts_per_slice, chips = hosts_per_slice or hosts, chips or requested[TPU_RESOURCE]
            total += hosts * replicas
    return (hosts_per_slice, total, chips) if total else None


def kueue_quotas_match_pools(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Kueue quotas for TPU and GPU equal what the flavor's node pools hold at maximum scale.

    A larger quota admits workloads no node can ever run (they sit admitted, holding quota); a smaller one
    leaves slices idle. Quota = nodes at maximum scale x chips or GPUs per node over the pools the
    ResourceFlavor's nodeLabels select.
    """
    pools = _known_pools(args)
    if pools is None or _any_uncertain(args, "ResourceFlavor", "ClusterQueue"):
        return
    flavors = {object_name(r.props, r.name): r for r in _objects(args, "ResourceFlavor")}
    for queue in _objects(args, "ClusterQueue"):
        for group in items(queue.props, "spec.resourceGroups"):
            for flavor in items(group, "flavors"):
                for problem in _flavor_problems(flavor, flavors, pools):
                    report_violation(f"ClusterQueue '{queue.name}': {problem}", queue.urn)


def _flavor_problems(flavor: Any, flavors: Mapping[str, Any], pools: list[PoolFacts]) -> list[str]:
    name = str(lookup(flavor, "name"))
    problems = []
    for quota in items(flavor, "resources"):
        resource = lookup(quota, "name")
        if resource not in (TPU_RESOURCE, GPU_RESOURCE):
            continue
        nominal = lookup(quota, "nominalQuota")
        if is_unknown(nominal):
            continue
        if name not in flavors:
            problems.append(f"flavor '{name}' is not a ResourceFlavor of this stack")
            break
        node_labels = {k: str(v) for k, v in (plain(lookup(flavors[name].props, "spec.nodeLabels")) or {}).items()}
        matched = [
            p
            for p in pools
            if p.accelerator_resource == resource and all(p.labels.get(k) == v for k, v in node_labels.items())
        ]
        capacity = sum((pool.size.max_nodes or 0) * pool.accelerators_per_node for pool in matched)
        amount = as_number(nominal)
        if amount == capacity:
            continue  # includes 0 for a resource the flavor's nodes do not have (Kueue lists every one)
        if not matched:
            problems.append(
                f"flavor '{name}' ({node_labels}) has {resource} nominalQuota {nominal} but selects "
                f"no node pool with {resource}"
            )
        else:
            problems.append(
                f"flavor '{name}' {resource} nominalQuota is {nominal}, its pools "
                f"{sorted(p.name for p in matched)} hold {capacity} at maximum scale"
            )
    return problems


TOPOLOGY_ANNOTATIONS = (PREFERRED_TOPOLOGY_ANNOTATION, REQUIRED_TOPOLOGY_ANNOTATION)


def topology_requests_name_a_level(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """A pod template's Kueue topology request names a level of a Topology that a ResourceFlavor uses.

    Kueue places such a PodSet only by a TAS flavor's Topology; a level no such Topology has (a typo, a
    flavor without topologyName, a missing Topology object) leaves the workload unadmitted for good.
    """
    topologies = {object_name(r.props, r.name): r for r in _objects(args, "Topology")}
    flavors = _objects(args, "ResourceFlavor")
    if any(has_unknown(r.props) for r in (*topologies.values(), *flavors)):
        return
    used = {lookup(flavor.props, "spec.topologyName") for flavor in flavors}
    levels = {
        lookup(level, "nodeLabel")
        for name, topology in topologies.items()
        if name in used
        for level in items(topology.props, "spec.levels")
    }
    for resource in args.resources:
        if kind_of(resource.resource_type) is None:
            continue
        for annotation, level in _topology_requests(plain(resource.props)):
            if not is_unknown(level) and level not in levels:
                shown = ", ".join(sorted(levels)) or "none: no ResourceFlavor names an existing Topology"
                report_violation(
                    f"{kind_of(resource.resource_type)} '{resource.name}': {annotation} '{level}' is no level of a "
                    f"Topology a ResourceFlavor uses (levels: {shown}).",
                    resource.urn,
                )


def _topology_requests(value: Any) -> list[tuple[str, Any]]:
    """(annotation, level) of every Kueue topology request in a pod template anywhere under `value`."""
    found: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        annotations = lookup(value, "template.metadata.annotations")
        if isinstance(annotations, dict):
            found += [(key, annotations[key]) for key in TOPOLOGY_ANNOTATIONS if key in annotations]
        for item in value.values():
            found += _topology_requests(item)
    elif isinstance(value, list):
        for item in value:
            found += _topology_requests(item)
    return found


def node_networks_allow_internal_ingress(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Every additional node network (but RDMA) has an ingress rule from its own subnet.

    GCP's implied rules deny all ingress on a new VPC, and GKE adds no firewall rules for additional node
    networks: without a rule, TPU DCN (cross-slice) or gVNIC traffic between nodes is dropped. RoCE VPCs
    are the exception: they refuse VPC firewall rules and let their own traffic through.
    """
    networks = {lookup(r.props, "name"): r for r in args.resources if r.resource_type == NETWORK_TYPE}
    subnets = {lookup(r.props, "name"): r for r in args.resources if r.resource_type == SUBNETWORK_TYPE}
    firewalls = [r for r in args.resources if r.resource_type == FIREWALL_TYPE]
    used = {
        (lookup(extra, "network"), lookup(extra, "subnetwork"))
        for pool in args.resources
        if pool.resource_type == NODE_POOL_TYPE
        for extra in items(pool.props, "networkConfig.additionalNodeNetworkConfigs")
    }
    for network_name, subnet_name in sorted(used, key=str):
        network, subnet = networks.get(network_name), subnets.get(subnet_name)
        if network is None or subnet is None or lookup(network.props, "networkProfile"):
            continue  # not this stack's, unknown during preview, or RDMA (RoCE takes no VPC firewall rules)
        cidr = lookup(subnet.props, "ipCidrRange")
        if is_unknown(cidr) or any(_allows_ingress_from(rule, network, cidr) for rule in firewalls):
            continue
        report_violation(
            f"network '{network_name}' is a node network with no ingress rule from its subnet {cidr}: "
            "GCP denies ingress by default, so traffic between the nodes' extra NICs would be dropped.",
            network.urn,
        )


def _allows_ingress_from(rule: Any, network: Any, cidr: str) -> bool:
    attached = network.urn in {dependency.urn for dependency in rule.dependencies}
    ingress = lookup(rule.props, "direction") in (None, "INGRESS")
    return attached and ingress and bool(items(rule.props, "allows")) and cidr in items(rule.props, "sourceRanges")


def cost_within_budget(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """The stack's cost at maximum scale stays within the budget (advisory unless configured).

    Accelerator pools cost hundreds of dollars an hour at full scale; a budget in the pack config
    (maxUsdPerHour) makes an overrun visible before `pulumi up`, and mandatory if the config says so.
    """
    budget = args.get_config().get("maxUsdPerHour")
    if budget is None:
        return
    resources = [
        {"type": r.resource_type, "name": r.name, "urn": r.urn, "inputs": plain(r.props)} for r in args.resources
    ]
    estimate = cost.estimate(resources)
    if estimate.max_usd_per_hour > float(budget):
        pools = ", ".join(f"{p.name} ${p.max_usd_per_hour:,.2f}/h" for p in estimate.pools)
        report_violation(
            f"at maximum scale the stack costs ${estimate.max_usd_per_hour:,.2f}/h, over the budget of "
            f"${float(budget):,.2f}/h ({pools}).",
            None,
        )


def _number(props: Any, key: str) -> float:
    return as_number(lookup(props, key)) or 0.0


def _flag(entrypoint: str, name: str) -> int | None:
    match = re.search(_FLAG.format(name=re.escape(name).replace("\\-", "[-_]")), entrypoint)
    return int(match.group(1)) if match else None
