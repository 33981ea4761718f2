"""Stack rules about Kueue: DWS workloads queue through it, queued-provisioning pools are reachable through its
ProvisioningRequest check, its quotas are what the pools hold, and topology requests name a real level.

Each rule reads ``args.resources`` (every resource of the stack, engine-shaped) and reports with the URN of
the offending resource.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs

from components.facts.gke import (
    GPU_RESOURCE,
    PREFERRED_TOPOLOGY_ANNOTATION,
    PROVISIONING_REQUEST_CONTROLLER,
    QUEUE_LABEL,
    QUEUED_PROVISIONING_CLASS,
    REQUIRED_TOPOLOGY_ANNOTATION,
    TPU_RESOURCE,
)
from policies.pools import PoolFacts
from policies.props import as_number, has_unknown, is_unknown, items, lookup, plain
from policies.workloads import (
    BATCH_KINDS,
    RAY_KINDS,
    any_uncertain,
    kind_of,
    known_pools,
    labels_of,
    landing_pools,
    namespace_of,
    object_name,
    pod_templates,
    stack_objects,
    uncertain,
)


def dws_workloads_use_kueue(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Jobs and RayJobs that can land on DWS pools carry a Kueue queue label naming a LocalQueue.

    DWS capacity arrives all at once for an admitted workload; a job that bypasses Kueue either waits
    forever on a queued-provisioning pool or grabs flex-start nodes piecemeal, so gang jobs deadlock.
    """
    pools = known_pools(args)
    if pools is None or any_uncertain(args, "LocalQueue"):
        return
    local_queues = {(namespace_of(r.props), object_name(r.props, r.name)) for r in stack_objects(args, "LocalQueue")}
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
    pools = known_pools(args)
    kueue_kinds = ("ProvisioningRequestConfig", "AdmissionCheck", "ClusterQueue")
    if pools is None or any_uncertain(args, *kueue_kinds):
        return
    queued = [pool for pool in pools if pool.queued]
    configs = {
        object_name(r.props, r.name): {str(x) for x in items(r.props, "spec.managedResources")}
        for r in stack_objects(args, "ProvisioningRequestConfig")
        if lookup(r.props, "spec.provisioningClassName") == QUEUED_PROVISIONING_CLASS
    }
    checks = {
        object_name(r.props, r.name): lookup(r.props, "spec.parameters.name")
        for r in stack_objects(args, "AdmissionCheck")
        if lookup(r.props, "spec.controllerName") == PROVISIONING_REQUEST_CONTROLLER
    }
    used_checks = {name for r in stack_objects(args, "ClusterQueue") for name in _cluster_queue_checks(r.props)}
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


def kueue_quotas_match_pools(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Kueue quotas for TPU and GPU equal what the flavor's node pools hold at maximum scale.

    A larger quota admits workloads no node can ever run (they sit admitted, holding quota); a smaller one
    leaves slices idle. Quota = nodes at maximum scale x chips or GPUs per node over the pools the
    ResourceFlavor's nodeLabels select.
    """
    pools = known_pools(args)
    if pools is None or any_uncertain(args, "ResourceFlavor", "ClusterQueue"):
        return
    flavors = {object_name(r.props, r.name): r for r in stack_objects(args, "ResourceFlavor")}
    for queue in stack_objects(args, "ClusterQueue"):
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
    topologies = {object_name(r.props, r.name): r for r in stack_objects(args, "Topology")}
    flavors = stack_objects(args, "ResourceFlavor")
    if any(has_unknown(r.props) for r in (*topologies.values(), *flavors)):
        return
    used = {lookup(flavor.props, "spec.topologyName") for flavor in flavors}
    levels = {
        str(lookup(level, "nodeLabel"))
        for name, topology in topologies.items()
        if name in used
        for level in items(topology.props, "spec.levels")
        if isinstance(lookup(level, "nodeLabel"), str)  # a malformed level names nothing (the schema check says so)
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
