"""Kueue admission: would Kueue ever admit each workload the stack queues, and on which flavors?

Plays Kueue v0.19.2's admission of every object labelled with a LocalQueue, following its code (tag v0.19.2 of
kubernetes-sigs/kueue; docs/cloud-facts.md: Kueue admits only what its ClusterQueue covers):

- pod sets as each integration builds them: a Job's `main` (min of parallelism and completions); a RayJob's or
  RayCluster's `head`, one per worker group (its lowercased name, replicas x numOfHosts) and, for a RayJob in
  K8sJobMode (KubeRay's default), the `submitter` (KubeRay's default template when none is given):
  `pkg/controller/jobs/{job,raycluster,rayjob}`;
- per-pod requests as Kueue sums them (containers, sidecars, the largest init container, overhead; a limit
  where the request is missing), less the configuration's `excludeResourcePrefixes`, plus DRA devices mapped by
  `deviceClassMappings`: `pkg/workload/workload.go`, `pkg/workload/resources.go`, `pkg/dra/claims.go`;
- every requested resource covered by the ClusterQueue (`BlockUndeclared`), and a flavor per pod set whose node
  labels, taints, Topology and quota admit it, the pod sets of one workload adding up:
  `pkg/scheduler/flavorassigner/{flavorassigner,tas_flavorassigner}.go`;
- the ProvisioningRequest admission check satisfiable: a pod set using a managed resource on a checked flavor
  needs a queued-provisioning node pool that the flavor's labels select and whose taints the pods tolerate.
- nothing waits for what never ends: a standalone RayCluster, once admitted, keeps its quota until deleted, so
  every other workload must also be admitted beside it (a later revision queues behind it, whatever the order).

Not modelled: quota borrowed from other ClusterQueues of a cohort (the stack's own quota must hold the workload),
preemption, and LimitRanges or RuntimeClass overheads (the stack sets none).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from components.config.models import StackConfig
from components.facts import gke
from components.kube.kueue import INTEGRATIONS, MANAGER_CONFIG
from policies.props import items, lookup
from policies.workloads import kind_of, selects_pool
from preflight.checks.placement import (
    Pool,
    node_pools,
    parse_quantity,
    pods_per_node,
    show_amount,
    tolerates,
    untolerated,
    with_flavor,
)

# Feature gates at their v0.19.2 defaults (pkg/features/kube_features.go), as far as admission depends on them.
DEFAULT_GATES = {"KueueDRAIntegration": True, "KueueDRARejectWorkloadsWhenDRADisabled": True}
TOPOLOGY_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
)
# KubeRay's submitter when a RayJob gives no template: 500m CPU and 200Mi requested (ray-operator v1.6.2,
# `controllers/ray/common/job.go`), no node selector, no tolerations.
DEFAULT_SUBMITTER = {
    "containers": [{"name": "ray-job-submitter", "resources": {"requests": {"cpu": "500m", "memory": "200Mi"}}}]
}
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
# Workloads that run until deleted: admitted once, they keep their quota for good.
NEVER_ENDING = ("RayCluster",)


@dataclass(frozen=True)
class PodSet:
    name: str
    count: int
    spec: Mapping[str, Any]
    annotations: Mapping[str, Any]


@dataclass(frozen=True)
class KueueSetup:
    """What the Kueue release is told: its manager configuration and feature gates."""

    frameworks: tuple[str, ...] | None  # None: the release's own default
    excluded_prefixes: tuple[str, ...] = ()
    device_classes: Mapping[str, str] = field(default_factory=dict)  # DeviceClass -> logical resource
    ignore_undeclared: bool = False
    gates: Mapping[str, bool] = field(default_factory=lambda: dict(DEFAULT_GATES))


@dataclass(frozen=True)
class Admission:
    workload: str
    flavors: dict[str, str]  # pod set -> flavor

    @property
    def flavor_list(self) -> str:
        return ", ".join(f"{flavor} ({pod_set})" for pod_set, flavor in self.flavors.items())


@dataclass(frozen=True)
class AdmissionProblem:
    workload: str
    pod_set: str
    reason: str  # Kueue's own message where Kueue gives one
    key: str  # the stack config key to change

    def __str__(self) -> str:
        return f"{self.workload} (pod set {self.pod_set}): {self.reason} (change {self.key})"


# ---- reading the plan --------------------------------------------------------------------------------


def kueue_setup(resources: Iterable[Mapping[str, Any]]) -> KueueSetup:
    chart = next(
        (
            r["inputs"]
            for r in resources
            if r["type"] == gke.HELM_CHART_TYPE and str(r["inputs"].get("chart", "")).endswith("/kueue")
        ),
        None,
    )
    # Without the chart (trainyard:kueue.install false) the cluster's Kueue is taken to run trainyard's configuration.
    values = (
        chart.get("values") or {}
        if chart
        else {"managerConfig": {"controllerManagerConfigYaml": json.dumps(MANAGER_CONFIG)}}
    )
    config = yaml.safe_load(lookup(values, "managerConfig.controllerManagerConfigYaml") or "{}") or {}
    gates = dict(DEFAULT_GATES)
    gates.update({g["name"]: bool(g["enabled"]) for g in items(values, "controllerManager.featureGates")})
    frameworks = lookup(config, "integrations.frameworks")
    return KueueSetup(
        frameworks=tuple(frameworks) if frameworks is not None else ("batch/job",),
        excluded_prefixes=tuple(lookup(config, "resources.excludeResourcePrefixes") or ()),
        device_classes={
            device_class: mapping["name"]
            for mapping in items(config, "resources.deviceClassMappings")
            for device_class in mapping.get("deviceClassNames") or []
        },
        ignore_undeclared=lookup(config, "resources.quotaCheckStrategy") == "IgnoreUndeclared",
        gates=gates,
    )


def pod_sets(kind: str, obj: Mapping[str, Any]) -> list[PodSet]:
    if kind == "Job":
        parallelism = int(lookup(obj, "spec.parallelism") or 1)
        completions = lookup(obj, "spec.completions")
        count = min(parallelism, int(completions)) if completions is not None else parallelism
        return [_pod_set("main", count, lookup(obj, "spec.template"))]
    cluster = lookup(obj, "spec.rayClusterSpec") if kind == "RayJob" else lookup(obj, "spec")
    sets = [_pod_set("head", 1, lookup(cluster, "headGroupSpec.template"))]
    for group in items(cluster, "workerGroupSpecs"):
        hosts = int(group.get("numOfHosts") or 1)
        replicas = int(group["replicas"]) if group.get("replicas") is not None else 1
        sets.append(_pod_set(str(group.get("groupName", "")).lower(), replicas * max(hosts, 1), group.get("template")))
    if kind == "RayJob" and (lookup(obj, "spec.submissionMode") or "K8sJobMode") == "K8sJobMode":
        template = lookup(obj, "spec.submitterPodTemplate") or {"spec": DEFAULT_SUBMITTER}
        sets.append(_pod_set("submitter", 1, template))
    return sets


def _pod_set(name: str, count: int, template: Any) -> PodSet:
    template = template or {}
    return PodSet(name, count, template.get("spec") or {}, lookup(template, "metadata.annotations") or {})


# ---- what a pod asks Kueue for -----------------------------------------------------------------------


def _container_requests(container: Mapping[str, Any]) -> dict[str, float]:
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {name: parse_quantity(value) for name, value in merged.items()}


def _add(total: dict[str, float], more: Mapping[str, float]) -> None:
    for name, amount in more.items():
        total[name] = total.get(name, 0.0) + amount


def kueue_pod_requests(spec: Mapping[str, Any]) -> dict[str, float]:
    """component-helpers' PodRequests, as Kueue calls it: containers and sidecars summed, the largest init
    container (with the sidecars started before it) where that is more, then the pod's overhead."""
    total: dict[str, float] = {}
    for container in spec.get("containers") or []:
        _add(total, _container_requests(container))
    sidecars: dict[str, float] = {}
    init_peak: dict[str, float] = {}
    for container in spec.get("initContainers") or []:
        requests = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add(sidecars, requests)
            continue
        for name, amount in requests.items():
            init_peak[name] = max(init_peak.get(name, 0.0), amount + sidecars.get(name, 0.0))
    _add(total, sidecars)
    for name, amount in init_peak.items():
        total[name] = max(total.get(name, 0.0), amount)
    _add(total, {name: parse_quantity(value) for name, value in (spec.get("overhead") or {}).items()})
    return total


def _claim_templates(objects: list[Mapping[str, Any]]) -> dict[tuple[str, str], Mapping[str, Any]]:
    return {
        (lookup(o, "metadata.namespace") or "default", lookup(o, "metadata.name")): o
        for o in objects
        if o.get("kind") == "ResourceClaimTemplate"
    }


def dra_requests(
    pod_set: PodSet, namespace: str, setup: KueueSetup, templates: Mapping[tuple[str, str], Mapping[str, Any]]
) -> tuple[dict[str, float], str | None]:
    """The logical resources one pod's claims count as (pkg/dra/claims.go), or Kueue's reason to refuse."""
    claims = items(pod_set.spec, "resourceClaims")
    if not claims:
        return {}, None
    if not setup.gates["KueueDRAIntegration"]:
        if setup.gates["KueueDRARejectWorkloadsWhenDRADisabled"]:
            return {}, "Workload uses DRA resources but the KueueDRAIntegration feature gate is not enabled"
        return {}, None
    totals: dict[str, float] = {}
    for claim in claims:
        if claim.get("resourceClaimName"):
            return {}, "KueueDRAIntegration feature does not support use of resource claims"
        name = claim.get("resourceClaimTemplateName")
        template = templates.get((namespace, name))
        if template is None:
            return {}, f"failed to get claim spec for ResourceClaimTemplate {name} in podset {pod_set.name}"
        for request in items(template, "spec.spec.devices.requests"):
            exactly = request.get("exactly") or {}
            mode = exactly.get("allocationMode") or "ExactCount"
            if mode != "ExactCount":
                return {}, f"ResourceClaimTemplate {name}: AllocationMode '{mode}' is not supported"
            device_class = exactly.get("deviceClassName")
            if device_class not in setup.device_classes:
                return {}, f"DeviceClass {device_class} is not mapped in DRA configuration for podset {pod_set.name}"
            _add(totals, {setup.device_classes[device_class]: float(exactly.get("count") or 1)})
    return totals, None


# ---- flavors and quota -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Queue:
    """A ClusterQueue with its flavors' specs, in Kueue's order."""

    name: str
    groups: list[tuple[list[str], list[Mapping[str, Any]]]]  # (covered resources, flavor entries)
    flavors: Mapping[str, Mapping[str, Any]]  # ResourceFlavor name -> spec
    checks: list[tuple[str, list[str]]]  # (AdmissionCheck, onFlavors; [] for all)

    @property
    def tas_only(self) -> bool:
        return all(
            (self.flavors.get(f["name"]) or {}).get("topologyName") for _, flavors in self.groups for f in flavors
        )


def _requests_tas(pod_set: PodSet) -> bool:
    return any(pod_set.annotations.get(annotation) for annotation in TOPOLOGY_ANNOTATIONS)


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


Usage = dict[tuple[str, str], float]  # (flavor, resource) -> quota taken


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
        check = _named(objects, "AdmissionCheck", check_name)
        if check is None or lookup(check, "spec.controllerName") != PROVISIONING_CONTROLLER:
            continue
        config = _named(objects, "ProvisioningRequestConfig", lookup(check, "spec.parameters.name"))
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
        check = _named(objects, "AdmissionCheck", check_name)
        if check is not None and lookup(check, "spec.controllerName") == PROVISIONING_CONTROLLER:
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
        requests = kueue_pod_requests(pod_set.spec)
        kept = sum(
            (p.facts.size.min_nodes or 0) * min(pods_per_node(requests, p.allocatable), pod_set.count)
            for p in pools
            if selects_pool(merged, p.facts) and not untolerated(merged, p)
        )
        if kept < pod_set.count:
            asked = [str(pod_set.annotations[a]) for a in TOPOLOGY_ANNOTATIONS[:2] if pod_set.annotations.get(a)]
            level = asked[0] if asked else "kubernetes.io/hostname"
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


def _named(objects: list[Mapping[str, Any]], kind: str, name: Any) -> Mapping[str, Any] | None:
    return next((o for o in objects if o.get("kind") == kind and lookup(o, "metadata.name") == name), None)


def cluster_queue_of(objects: list[Mapping[str, Any]], namespace: str, local_queue: str) -> Queue | None:
    local = next(
        (
            o
            for o in objects
            if o.get("kind") == "LocalQueue"
            and lookup(o, "metadata.name") == local_queue
            and (lookup(o, "metadata.namespace") or "default") == namespace
        ),
        None,
    )
    cluster_queue = _named(objects, "ClusterQueue", lookup(local, "spec.clusterQueue")) if local else None
    if cluster_queue is None:
        return None
    return Queue(
        name=lookup(cluster_queue, "metadata.name"),
        groups=[
            (list(g.get("coveredResources") or []), list(g.get("flavors") or []))
            for g in items(cluster_queue, "spec.resourceGroups")
        ],
        flavors={
            lookup(o, "metadata.name"): lookup(o, "spec") or {} for o in objects if o.get("kind") == "ResourceFlavor"
        },
        checks=[
            (c["name"], list(c.get("onFlavors") or []))
            for c in items(cluster_queue, "spec.admissionChecksStrategy.admissionChecks")
        ],
    )


# ---- the check -----------------------------------------------------------------------------------------


def check_admission(
    resources: list[Mapping[str, Any]], config_keys: Mapping[str, str] | None = None
) -> tuple[list[Admission], list[AdmissionProblem]]:
    """Every queued workload's admission, or why Kueue would never admit it. `config_keys` names the stack config
    key of each workload (by its `trainyard/workload` label or object name)."""
    setup = kueue_setup(resources)
    objects = [r["inputs"] for r in resources if kind_of(r["type"])]
    context = _Context(setup, objects, _claim_templates(objects), node_pools(resources))
    queued = [obj for obj in objects if _managed(obj, setup)]
    outcomes = {id(obj): _admit(obj, context) for obj in queued}
    endless = [obj for obj in queued if obj.get("kind") in NEVER_ENDING and isinstance(outcomes[id(obj)][0], dict)]
    admitted, problems = [], []
    for obj in queued:
        found, _ = outcomes[id(obj)]
        key = _config_key(obj, config_keys or {})
        blockers = [other for other in endless if other is not obj]
        if isinstance(found, dict) and blockers:
            found, key = _behind(obj, blockers, outcomes, context, key, config_keys or {})
        if isinstance(found, dict):
            admitted.append(Admission(_workload(obj), found))
        else:
            problems.extend(AdmissionProblem(_workload(obj), pod_set, reason, key) for pod_set, reason in found)
    return admitted, problems


@dataclass(frozen=True)
class _Context:
    setup: KueueSetup
    objects: list[Mapping[str, Any]]
    templates: Mapping[tuple[str, str], Mapping[str, Any]]
    pools: list[Pool]


def _managed(obj: Mapping[str, Any], setup: KueueSetup) -> bool:
    """Labelled with a queue, of a Kind Kueue manages (one it does not manage starts without quota; tests hold
    every queued Kind to an integration)."""
    kind = obj.get("kind")
    if not (lookup(obj, "metadata.labels") or {}).get(gke.QUEUE_LABEL) or kind not in INTEGRATIONS:
        return False
    return setup.frameworks is None or INTEGRATIONS[kind] in setup.frameworks


def _workload(obj: Mapping[str, Any]) -> str:
    return f"{obj.get('kind')} {lookup(obj, 'metadata.namespace') or 'default'}/{lookup(obj, 'metadata.name')}"


def _behind(
    obj: Mapping[str, Any],
    blockers: list[Mapping[str, Any]],
    outcomes: Mapping[int, tuple[Any, Usage]],
    context: _Context,
    key: str,
    keys: Mapping[str, str],
) -> tuple[dict[str, str] | list[tuple[str, str]], str]:
    """The workload admitted beside what never finishes (a standalone RayCluster keeps its quota for good),
    whichever `pulumi up` creates first: a later revision of the workload queues behind it either way."""
    held: Usage = {}
    for blocker in blockers:
        for resource, amount in outcomes[id(blocker)][1].items():
            held[resource] = held.get(resource, 0.0) + amount
    found, _ = _admit(obj, context, held)
    if isinstance(found, dict):
        return found, key
    names = ", ".join(_workload(blocker) for blocker in blockers)
    waits = [
        (pod_set, f"waits forever behind {names}, which never finishes and keeps its quota: {reason}")
        for pod_set, reason in found
    ]
    return waits, _config_key(blockers[0], keys)


def _admit(
    obj: Mapping[str, Any], context: _Context, held: Usage | None = None
) -> tuple[dict[str, str] | list[tuple[str, str]], Usage]:
    """(each pod set's flavor, or why Kueue refuses it; the quota it takes)."""
    setup, namespace = context.setup, lookup(obj, "metadata.namespace") or "default"
    local_queue = (lookup(obj, "metadata.labels") or {}).get(gke.QUEUE_LABEL)
    queue = cluster_queue_of(context.objects, namespace, local_queue)
    if queue is None:
        return [("*", f"LocalQueue {local_queue} doesn't exist")], {}
    sets = pod_sets(str(obj.get("kind")), obj)
    requests: dict[str, dict[str, float]] = {}
    for pod_set in sets:
        own = kueue_pod_requests(pod_set.spec)
        own = {n: a for n, a in own.items() if not any(n.startswith(p) for p in setup.excluded_prefixes)}
        devices, refused = dra_requests(pod_set, namespace, setup, context.templates)
        if refused:
            return [(pod_set.name, refused)], {}
        _add(own, devices)
        requests[pod_set.name] = own
    assigned, problems, usage = assign_flavors([(s, requests[s.name]) for s in sets], queue, setup, held)
    if problems:
        return problems, usage
    by_name = {s.name: s for s in sets}
    if len(by_name) < len(sets):
        names = [s.name for s in sets]
        twice = min(name for name in names if names.count(name) > 1)
        reason = f"pod set {twice} is named twice: Kueue cannot create the Workload (pod set names must be unique)"
        return [(twice, reason)], {}
    provisioned = provisioned_flavors(queue, context.objects)
    problems = unserved_provisioning(assigned, requests, by_name, queue, context.objects, context.pools)
    problems += topology_without_nodes(assigned, by_name, queue, provisioned, context.pools)
    return problems or assigned, usage


def _config_key(obj: Mapping[str, Any], keys: Mapping[str, str]) -> str:
    labels = lookup(obj, "metadata.labels") or {}
    name = str(lookup(obj, "metadata.name") or "")
    return keys.get(labels.get(gke.WORKLOAD_LABEL, ""), keys.get(name, "trainyard:kueue"))


def workload_config_keys(config: StackConfig) -> dict[str, str]:
    """The stack config key behind each workload, by its `trainyard/workload` label or object name."""
    keys = {job.name: f"trainyard:jobs.maxtext[{i}]" for i, job in enumerate(config.jobs.maxtext)}
    keys.update({job.name: f"trainyard:jobs.fsdp[{i}]" for i, job in enumerate(config.jobs.fsdp)})
    keys.update({f"smoke-jax-{group.name}": "trainyard:jobs.smoke" for group in config.tpu_slices})
    keys.update({f"smoke-nccl-{pool.name}": "trainyard:jobs.smoke" for pool in config.gpu_pools})
    keys[config.jobs.ray.name] = "trainyard:jobs.ray"
    return keys
