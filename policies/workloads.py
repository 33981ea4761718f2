"""Kubernetes workloads as the engine sees them: pod templates, accelerator requests, where pods can land.

A Kubernetes resource's type token is ``kubernetes:<group>/<version>:<Kind>``; its inputs are the object
(camelCase, numbers as floats). Pod templates sit at different paths per kind; Ray worker groups carry
their own replicas and ``numOfHosts``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import StackValidationArgs

from components.facts.gke import ACCELERATOR_RESOURCES
from policies.pools import MODELED_LABELS, PLATFORM_LABEL_PREFIXES, PoolFacts, stack_pools
from policies.props import as_number, entries, has_unknown, is_unknown, items, lookup

_POD_SPEC_PATHS = {
    "Pod": ("spec",),
    "Job": ("spec.template.spec",),
    "Deployment": ("spec.template.spec",),
    "StatefulSet": ("spec.template.spec",),
    "DaemonSet": ("spec.template.spec",),
    "ReplicaSet": ("spec.template.spec",),
    "ReplicationController": ("spec.template.spec",),
    "PodTemplate": ("template.spec",),
    "CronJob": ("spec.jobTemplate.spec.template.spec",),
    "RayJob": ("spec.submitterPodTemplate.spec",),  # the submitter KubeRay runs beside the RayJob's cluster
}
# pulumi-kubernetes' server-side-apply patch of each kind (`DaemonSetPatch`, ...) takes the same fields.
PATCH_SUFFIX = "Patch"
RAY_KINDS = ("RayCluster", "RayJob", "RayService")
BATCH_KINDS = ("Job", "RayJob", "JobSet")


def kind_of(resource_type: str) -> str | None:
    """``kubernetes:batch/v1:Job`` -> ``Job``; None for non-Kubernetes types."""
    if not resource_type.startswith("kubernetes:"):
        return None
    return resource_type.rsplit(":", 1)[-1]


def patched_kind(kind: str) -> str:
    """The kind a server-side-apply patch kind sets (`DaemonSetPatch` -> `DaemonSet`); any other kind as it is."""
    return kind.removesuffix(PATCH_SUFFIX)


def base_kind(resource_type: str) -> str | None:
    """The Kubernetes kind a resource is or patches; None for non-Kubernetes types."""
    kind = kind_of(resource_type)
    return patched_kind(kind) if kind else None


@dataclass(frozen=True)
class PodTemplate:
    where: str
    spec: Any
    group: Any = None  # the Ray worker group holding this template, if any

    @property
    def is_ray_worker(self) -> bool:
        return self.group is not None


def _ray_cluster_spec_path(kind: str) -> str:
    return {"RayCluster": "spec", "RayJob": "spec.rayClusterSpec", "RayService": "spec.rayClusterConfig"}[kind]


def ray_cluster_spec(kind: str, props: Any) -> Any:
    """The RayCluster spec a RayCluster, RayJob or RayService holds."""
    return lookup(props, _ray_cluster_spec_path(kind))


def pod_templates(kind: str, props: Any) -> list[PodTemplate]:
    """Every pod spec the object would create (or a patch of it would set), with where it sits."""
    kind = patched_kind(kind)
    templates: list[PodTemplate] = []
    for path in _POD_SPEC_PATHS.get(kind, ()):
        spec = lookup(props, path)
        if isinstance(spec, Mapping):
            templates.append(PodTemplate(path, spec))
    if kind in RAY_KINDS:
        templates += ray_node_templates(kind, props)
    if kind == "JobSet":
        for index, job in enumerate(items(props, "spec.replicatedJobs")):
            spec = lookup(job, "template.spec.template.spec")
            if isinstance(spec, Mapping):
                templates.append(PodTemplate(f"spec.replicatedJobs[{index}]", spec))
    return templates


def ray_node_templates(kind: str, props: Any) -> list[PodTemplate]:
    """The Ray head's and every worker group's pod template of a RayCluster, RayJob or RayService (not a RayJob's
    submitter: it runs no Ray node)."""
    base = _ray_cluster_spec_path(kind)
    templates = []
    head = lookup(props, f"{base}.headGroupSpec.template.spec")
    if isinstance(head, Mapping):
        templates.append(PodTemplate(f"{base}.headGroupSpec", head))
    for index, group in enumerate(items(props, f"{base}.workerGroupSpecs")):
        spec = lookup(group, "template.spec")
        if isinstance(spec, Mapping):
            templates.append(PodTemplate(f"{base}.workerGroupSpecs[{index}]", spec, group))
    return templates


def containers(pod_spec: Any) -> list[Any]:
    """Every container a pod runs: its own, its init containers and any ephemeral (debug) ones."""
    return items(pod_spec, "containers") + items(pod_spec, "initContainers") + items(pod_spec, "ephemeralContainers")


def accelerator_requests(pod_spec: Any) -> dict[str, float]:
    """Accelerators one pod asks for, by resource name (limits, or requests where no limit)."""
    totals: dict[str, float] = {}
    for container in containers(pod_spec):
        for resource in ACCELERATOR_RESOURCES:
            amount = as_number(lookup(container, ("resources", "limits", resource)))
            if amount is None:
                amount = as_number(lookup(container, ("resources", "requests", resource)))
            if amount:
                totals[resource] = totals.get(resource, 0.0) + amount
    return totals


def _required_terms(pod_spec: Any) -> list[list[Any]]:
    path = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    return [items(term, "matchExpressions") for term in items(pod_spec, path)]


def _expression_matches(expression: Any, labels: Mapping[str, str]) -> bool:
    key, operator = lookup(expression, "key"), lookup(expression, "operator")
    values = [str(value) for value in items(expression, "values")]
    unmodelled = key not in labels and key not in MODELED_LABELS and str(key).startswith(PLATFORM_LABEL_PREFIXES)
    if unmodelled and operator in ("In", "Exists"):
        return True
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return True  # Gt/Lt and unknowns: cannot rule the pool out


def _label_matches(pool: PoolFacts, key: str, value: str) -> bool:
    if key in pool.labels:
        return pool.labels[key] == value
    return key not in MODELED_LABELS and key.startswith(PLATFORM_LABEL_PREFIXES)


def selects_pool(pod_spec: Any, pool: PoolFacts) -> bool:
    """Whether the pod's node selector and required node affinity admit the pool's nodes' labels."""
    return _admits(entries(pod_spec, "nodeSelector"), _required_terms(pod_spec), pool)


def _admits(selector: Mapping[str, Any], terms: list[list[Any]], pool: PoolFacts) -> bool:
    if any(not _label_matches(pool, key, str(value)) for key, value in selector.items()):
        return False
    return not terms or any(all(_expression_matches(e, pool.labels) for e in term) for term in terms)


def can_land_on(pod_spec: Any, pool: PoolFacts) -> bool:
    """Whether the pod's node selector, required node affinity and accelerator requests fit the pool."""
    return bool(landing_pools(pod_spec, [pool]))


def landing_pools(pod_spec: Any, pools: list[PoolFacts]) -> list[PoolFacts]:
    """The pools the pod can land on (``can_land_on``), its scheduling read once for all of them."""
    if not pools:
        return []
    selector, terms = entries(pod_spec, "nodeSelector"), _required_terms(pod_spec)
    requested = accelerator_requests(pod_spec)
    return [pool for pool in pools if _lands(selector, terms, requested, pool)]


def _lands(selector: Mapping[str, Any], terms: list[list[Any]], requested: dict[str, float], pool: PoolFacts) -> bool:
    if not _admits(selector, terms, pool):
        return False
    if requested:
        return pool.accelerator_resource in requested
    # Accelerator nodes are tainted; only pods aimed at them by label land there without requests.
    return pool.accelerator_resource is None or bool(selector) or bool(terms)


def labels_of(props: Any) -> dict[str, Any]:
    return entries(props, "metadata.labels")


def annotations_of(props: Any) -> dict[str, Any]:
    return entries(props, "metadata.annotations")


def namespace_of(props: Any) -> str:
    namespace = lookup(props, "metadata.namespace")
    return namespace if isinstance(namespace, str) else "default"


def object_name(props: Any, fallback: str) -> str:
    name = lookup(props, "metadata.name")
    return name if isinstance(name, str) else fallback


def uncertain(kind: str, props: Any) -> bool:
    """Whether what the stack rules read of this object (metadata, scheduling, sizes) is unknown yet."""
    if has_unknown(lookup(props, "metadata")):
        return True
    if kind not in _POD_SPEC_PATHS and kind not in RAY_KINDS and kind != "JobSet":
        return has_unknown(lookup(props, "spec"))  # Kueue objects: the whole spec matters
    containers_at = list(_POD_SPEC_PATHS.get(kind, ()))
    if kind in RAY_KINDS:
        base = _ray_cluster_spec_path(kind)
        containers_at.append(f"{base}.headGroupSpec.template.spec")
        groups = lookup(props, f"{base}.workerGroupSpecs")
        if is_unknown(groups) or any(
            is_unknown(lookup(g, "template.spec")) for g in items(props, f"{base}.workerGroupSpecs")
        ):
            return True
    if kind == "JobSet" and is_unknown(lookup(props, "spec.replicatedJobs")):
        return True
    if any(is_unknown(lookup(props, path)) for path in containers_at):
        return True
    for template in pod_templates(kind, props):
        scheduling = [lookup(template.spec, key) for key in ("nodeSelector", "affinity", "containers")]
        scheduling += [lookup(c, "resources") for c in containers(template.spec)]
        scheduling += [lookup(template.group, key) for key in ("replicas", "maxReplicas", "numOfHosts")]
        if any(has_unknown(value) for value in scheduling if not isinstance(value, list)) or any(
            is_unknown(value) for value in scheduling
        ):
            return True
    return is_unknown(lookup(props, "spec.entrypoint"))


def stack_objects(args: StackValidationArgs, kind: str) -> list[Any]:
    return [r for r in args.resources if kind_of(r.resource_type) == kind]


def known_pools(args: StackValidationArgs) -> list[PoolFacts] | None:
    """The stack's pools, or None when any pool's facts are unknown during preview (cannot judge yet)."""
    pools = stack_pools(args.resources)
    return None if any(pool.uncertain for pool in pools) else pools


def any_uncertain(args: StackValidationArgs, *kinds: str) -> bool:
    return any(uncertain(kind, r.props) for kind in kinds for r in stack_objects(args, kind))
