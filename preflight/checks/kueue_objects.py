"""Kueue's objects as a plan holds them, read as Kueue v0.19.2 reads them (admission.py plays the admission).

- the release's manager configuration and feature gates (its ConfigMap, the controller's --feature-gates);
- a LocalQueue's ClusterQueue: resource groups, flavors in order, admission checks;
- a workload's pod sets as each integration builds them (`pkg/controller/jobs/{job,raycluster,rayjob}`), and
  the DRA devices a pod's claims count as (`pkg/dra/claims.go`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from components.facts import kueue_release
from components.facts.kueue_release import HEAD_POD_SET, SUBMITTER_POD_SET, manager_config
from components.kube.kueue import MANAGER_CONFIG
from policies.props import items, lookup
from preflight.checks.pods import add_requests

# Feature gates at their v0.19.2 defaults (pkg/features/kube_features.go), as far as admission depends on them.
DEFAULT_GATES = {"KueueDRAIntegration": True, "KueueDRARejectWorkloadsWhenDRADisabled": True}
# KubeRay's submitter when a RayJob gives no template: 500m CPU and 200Mi requested (ray-operator v1.6.2,
# `controllers/ray/common/job.go`), no node selector, no tolerations.
DEFAULT_SUBMITTER = {
    "containers": [{"name": "ray-job-submitter", "resources": {"requests": {"cpu": "500m", "memory": "200Mi"}}}]
}


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


def kueue_setup(resources: Iterable[Mapping[str, Any]]) -> KueueSetup:
    objects = [r.get("inputs") or {} for r in resources]
    config = kueue_release.planned_manager_config(objects)
    # Without the release (trainyard:kueue.install false) the cluster's Kueue is taken to run trainyard's
    # configuration.
    config = manager_config({}, MANAGER_CONFIG) if config is None else config
    gates = dict(DEFAULT_GATES)
    gates.update(kueue_release.planned_feature_gates(objects))
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


def named(objects: list[Mapping[str, Any]], kind: str, name: Any) -> Mapping[str, Any] | None:
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
    cluster_queue = named(objects, "ClusterQueue", lookup(local, "spec.clusterQueue")) if local else None
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


def pod_sets(kind: str, obj: Mapping[str, Any]) -> list[PodSet]:
    if kind == "Job":
        parallelism = int(lookup(obj, "spec.parallelism") or 1)
        completions = lookup(obj, "spec.completions")
        count = min(parallelism, int(completions)) if completions is not None else parallelism
        return [_pod_set("main", count, lookup(obj, "spec.template"))]
    cluster = lookup(obj, "spec.rayClusterSpec") if kind == "RayJob" else lookup(obj, "spec")
    sets = [_pod_set(HEAD_POD_SET, 1, lookup(cluster, "headGroupSpec.template"))]
    for group in items(cluster, "workerGroupSpecs"):
        hosts = int(group.get("numOfHosts") or 1)
        replicas = int(group["replicas"]) if group.get("replicas") is not None else 1
        sets.append(_pod_set(str(group.get("groupName", "")).lower(), replicas * max(hosts, 1), group.get("template")))
    if kind == "RayJob" and (lookup(obj, "spec.submissionMode") or "K8sJobMode") == "K8sJobMode":
        template = lookup(obj, "spec.submitterPodTemplate") or {"spec": DEFAULT_SUBMITTER}
        sets.append(_pod_set(SUBMITTER_POD_SET, 1, template))
    return sets


def _pod_set(name: str, count: int, template: Any) -> PodSet:
    template = template or {}
    return PodSet(name, count, template.get("spec") or {}, lookup(template, "metadata.annotations") or {})


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
            add_requests(totals, {setup.device_classes[device_class]: float(exactly.get("count") or 1)})
    return totals, None
