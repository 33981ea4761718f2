"""Flavor assignment and admission checks as Kueue v0.19.2 plays them, for one workload's pod sets.

`pkg/scheduler/flavorassigner/{flavorassigner,tas_flavorassigner}.go`: a flavor per pod set by its labels,
taints, Topology and quota, the pod sets of one workload adding up; `pkg/controller/admissionchecks/provisioning`:
a ProvisioningRequest that some queued-provisioning pool must serve.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.facts import gke
from policies.props import lookup
from policies.workloads import selects_pool
from preflight.checks.kueue_objects import KueueSetup, PodSet, Queue, named
from preflight.checks.placement import Pool, pods_per_node, show_amount, tolerates, untolerated, with_flavor
from preflight.checks.pods import parse_quantity, pod_requests

Usage = dict[tuple[str, str], float]  # (flavor, resource) -> quota taken


def _requests_tas(pod_set: PodSet) -> bool:
    return any(pod_set.annotations.get(annotation) for annotation in gke.TOPOLOGY_ANNOTATIONS)


def flavor_misfit(
    pod_set: PodSet, queue: Queue, name: str, covered: list[str], requests: Mapping[str, float]
) -> str | None:
    """Why `flavor` cannot take the pod set whatever its quota (checkPodSetAndFlavorMatchForTAS,
    checkFlavorForPodSets), or None."""
    flavor = queue.flavors.get(name)
    if flavor is None:
        return f"flavor {name} not found"
    if _requests_tas(pod_set):
        if not flavor.get("topologyName") and any(r in covered for r in requests):
            return f'Flavor "{name}" does not support TopologyAwareScheduling'
    elif flavor.get("topologyName") and not queue.tas_only:
        return f'Flavor "{name}" supports only TopologyAwareScheduling'
    selector = pod_set.spec.get("nodeSelector") or {}
    labels = flavor.get("nodeLabels") or {}
    if any(key in selector and str(selector[key]) != str(value) for key, value in labels.items()):
        return f"flavor {name} doesn't match node affinity"
    tolerations = pod_set.spec.get("tolerations") or []
    for taint in flavor.get("nodeTaints") or []:
        if not _tolerated(tolerations, taint):
            return (
                f"untolerated taint {taint.get('key')}={taint.get('value', '')}:{taint.get('effect')} in flavor {name}"
            )
    return None


def _tolerated(tolerations: list[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    return tolerates(tolerations, (taint.get("key", ""), taint.get("value", ""), taint.get("effect", "")))


def _quota(entry: Mapping[str, Any], resource: str) -> float:
    for quota in entry.get("resources") or []:
        if quota.get("name") == resource:
            return parse_quantity(quota.get("nominalQuota", 0))
    return 0.0


def assign_flavors(
    pod_sets_requests: list[tuple[PodSet, dict[str, float]]],
    queue: Queue,
    setup: KueueSetup,
    held: Mapping[tuple[str, str], float] | None = None,
) -> tuple[dict[str, str], list[tuple[str, str]], Usage]:
    """Each pod set's flavor, the workload's pod sets adding up per flavor beside the quota `held` by workloads
    already admitted, or (pod set, Kueue's message); and the quota the workload takes."""
    used: Usage = dict(held or {})
    own: Usage = {}
    assigned: dict[str, str] = {}
    problems: list[tuple[str, str]] = []
    for pod_set, requests in pod_sets_requests:
        requests = {name: amount for name, amount in requests.items() if amount}
        reasons = [
            f"resource {name} unavailable in ClusterQueue"
            for name in sorted(requests)
            if not setup.ignore_undeclared and not any(name in covered for covered, _ in queue.groups)
        ]
        for covered, entries in queue.groups:
            wanted = [name for name in requests if name in covered]
            if not wanted or reasons:
                continue
            chosen, misses = None, []
            for entry in entries:
                misfit = flavor_misfit(pod_set, queue, entry["name"], covered, requests)
                if misfit is None:
                    misfit = _over_quota(pod_set, entry, wanted, requests, used)
                if misfit is None:
                    chosen = entry
                    break
                misses.append(misfit)
            if chosen is None:
                reasons.extend(misses)
                continue
            for name in wanted:
                key = (chosen["name"], name)
                for usage in (used, own):
                    usage[key] = usage.get(key, 0.0) + requests[name] * pod_set.count
            assigned[pod_set.name] = chosen["name"]
        if reasons:
            problems.append(
                (pod_set.name, f"couldn't assign flavors to pod set {pod_set.name}: {', '.join(sorted(reasons))}")
            )
    return assigned, problems, own


def _over_quota(
    pod_set: PodSet,
    entry: Mapping[str, Any],
    wanted: list[str],
    requests: Mapping[str, float],
    used: Mapping[tuple[str, str], float],
) -> str | None:
    for name in sorted(wanted):
        before, now, cap = used.get((entry["name"], name), 0.0), requests[name] * pod_set.count, _quota(entry, name)
        if before + now > cap:
            shown = [show_amount(name, amount) for amount in (before, now, cap)]
            return (
                f"insufficient quota for {name} in flavor {entry['name']}, previously considered podsets requests "
                f"({shown[0]}) + current podset request ({shown[1]}) > maximum capacity ({shown[2]})"
            )
    return None


def unserved_provisioning(
    assigned: Mapping[str, str],
    requests: Mapping[str, Mapping[str, float]],
    sets: Mapping[str, PodSet],
    queue: Queue,
    objects: list[Mapping[str, Any]],
    pools: list[Pool],
) -> list[tuple[str, str]]:
    """Pod sets whose ProvisioningRequest no node pool can serve: GKE provisions a queued-provisioning.gke.io
    request only in a pool with queued provisioning, whose nodes carry its taint (docs/cloud-facts.md)."""
    problems = []
    for check_name, on_flavors in queue.checks:
        check = named(objects, "AdmissionCheck", check_name)
        if check is None or lookup(check, "spec.controllerName") != gke.PROVISIONING_REQUEST_CONTROLLER:
            continue
        config = named(objects, "ProvisioningRequestConfig", lookup(check, "spec.parameters.name"))
        managed = set(lookup(config, "spec.managedResources") or [])
        if on_flavors and not set(assigned.values()) & set(on_flavors):
            continue  # the check applies to the whole workload once any of its flavors is checked
        for pod_set_name, flavor in assigned.items():
            if managed and not managed & {r for r, amount in requests[pod_set_name].items() if amount}:
                continue  # "the provisioning request is not needed" for this pod set
            spec = with_flavor(sets[pod_set_name].spec, queue.flavors.get(flavor) or {}) or {}
            if not any(p.facts.queued and selects_pool(spec, p.facts) and not untolerated(spec, p) for p in pools):
                problems.append((pod_set_name, unserved_message(check_name, flavor)))
    return problems


def provisioned_flavors(queue: Queue, objects: list[Mapping[str, Any]]) -> set[str] | None:
    """The flavors a ProvisioningRequest check covers (None: every flavor)."""
    covered: set[str] = set()
    for check_name, on_flavors in queue.checks:
        check = named(objects, "AdmissionCheck", check_name)
        if check is not None and lookup(check, "spec.controllerName") == gke.PROVISIONING_REQUEST_CONTROLLER:
            if not on_flavors:
                return None
            covered.update(on_flavors)
    return covered


def topology_without_nodes(
    assigned: Mapping[str, str],
    sets: Mapping[str, PodSet],
    queue: Queue,
    provisioned: set[str] | None,
    pools: list[Pool],
) -> list[tuple[str, str]]:
    """Topology-Aware Scheduling places a pod set on nodes that exist, unless a ProvisioningRequest check covers
    its flavor (then it waits for the provisioned nodes): `tas_flavorassigner.go` podSetTopologyRequest. Nodes
    the autoscaler would add never come, since the workload's pods are only created once it is admitted."""
    problems = []
    for name, flavor in assigned.items():
        spec = queue.flavors.get(flavor) or {}
        if not spec.get("topologyName") or provisioned is None or flavor in provisioned:
            continue
        pod_set = sets[name]
        merged = with_flavor(pod_set.spec, spec) or {}
        requests = pod_requests(pod_set.spec)
        kept = sum(
            (p.facts.size.min_nodes or 0) * min(pods_per_node(requests, p.allocatable), pod_set.count)
            for p in pools
            if selects_pool(merged, p.facts) and not untolerated(merged, p)
        )
        if kept < pod_set.count:
            levels = (gke.REQUIRED_TOPOLOGY_ANNOTATION, gke.PREFERRED_TOPOLOGY_ANNOTATION)
            asked = [str(pod_set.annotations[a]) for a in levels if pod_set.annotations.get(a)]
            level = asked[0] if asked else gke.TAS_LEVELS[-1]
            reason = (
                f"no topology domains at level: {level} (flavor {flavor} places by topology on nodes that exist, "
                f"and no ProvisioningRequest check brings them: its pools keep {kept} places for {pod_set.count} pods)"
            )
            problems.append((name, reason))
    return problems


def unserved_message(check: str, flavor: str) -> str:
    return (
        f"admission check {check} asks GKE for nodes of flavor {flavor}, but no node pool with queued "
        "provisioning has its labels and a taint the pods tolerate: the ProvisioningRequest would never be provisioned"
    )
