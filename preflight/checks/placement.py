"""Placement check: could the scheduler put every pod the stack creates on a node of one of its pools?

For each pod template of the plan (Jobs, RayJob and RayCluster heads and worker groups, DaemonSets,
Deployments and the like) this plays the scheduler's filter step against every node pool of the plan:

- labels: the node selector and required node affinity against the labels GKE puts on the pool's nodes
  (the policy pack's reading of a pool, `policies.pools`);
- taints: GKE's own (TPU, GPU, queued provisioning) and the pool's, against the pod's tolerations;
- resources: CPU, memory, ephemeral storage, `google.com/tpu` and `nvidia.com/gpu` against a node's
  allocatable (`facts.node_shapes.node_allocatable`: the machine minus GKE's reservations) minus the requests
  of the stack's DaemonSets that land on the pool;
- count: a multi-host Ray worker group needs `numOfHosts` such nodes in one pool, a Job `parallelism`
  pods within the pools' maximum size.

A workload queued by Kueue is placed with the flavor Kueue assigns it merged in (the first of its ClusterQueue's
flavors, in order, whose labels its node selector allows and whose quota holds its accelerators; Kueue adds
that flavor's node labels and tolerations when it admits the workload), never with another flavor that would
have placed it. Not modelled: GKE's own system pods and the
sidecars webhooks inject (GCS FUSE), which take a little more of each node.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from components.facts import gke, gpu_machines, node_shapes
from policies.pools import PoolFacts, pool_facts
from policies.props import items, lookup
from policies.workloads import RAY_KINDS, kind_of, pod_templates, selects_pool
from preflight.checks import pods
from preflight.checks.kueue_objects import cluster_queue_of

CHECKED_RESOURCES = ("cpu", "memory", "ephemeral-storage", gke.TPU_RESOURCE, gke.GPU_RESOURCE)
Taint = tuple[str, str, str]


def show_amount(resource: str, amount: float) -> str:
    if resource in ("memory", "ephemeral-storage"):
        return f"{amount / node_shapes.GIB:.2f} GiB"
    return f"{amount:g}"


@dataclass(frozen=True)
class Pool:
    facts: PoolFacts
    allocatable: dict[str, float]  # one node, after GKE's reservations and the DaemonSets landing here
    taints: tuple[Taint, ...]

    @property
    def name(self) -> str:
        return self.facts.name

    @property
    def max_nodes(self) -> int:
        return self.facts.size.max_nodes or 0


@dataclass(frozen=True)
class PodGroup:
    """Pods of one template that must be placed: `pods` of them, in one pool when `one_pool`."""

    workload: str  # "RayJob trainyard/llama3-8b"
    where: str  # "headGroupSpec", "workerGroupSpecs[0]", "" for a plain pod template
    spec: Mapping[str, Any]
    pods: int
    one_pool: bool
    queue: tuple[str, str] | None  # (namespace, LocalQueue name) when Kueue admits it
    daemon: bool = False


@dataclass(frozen=True)
class Miss:
    """Why a pod fits nowhere, and how far it got (labels 0, taints 1, resources 2, count 3): of several
    Kueue flavors, the one that got furthest is the closest miss."""

    stage: int
    reason: str
    resource: str = ""  # the resource that fits nowhere, at the resources stage


LABELS, TAINTS, RESOURCES, COUNT = range(4)
# Pods per node for a pod that requests nothing: only the kubelet's pod limit bounds it, not modelled here.
NO_REQUEST_LIMIT = 1_000_000


@dataclass(frozen=True)
class PlacementProblem:
    workload: str
    where: str
    reason: str
    resource: str = ""  # the resource it is short of, where that is why it fits no node
    key: str = ""  # the stack config key to change, where the config made the workload (with_config_key)

    def __str__(self) -> str:
        change = f" (change {self.key})" if self.key else ""
        return f"{self.workload}{f' ({self.where})' if self.where else ''}: {self.reason}{change}"


# A Ray pod's size is the Ray cluster's, not the job's: (pod template, resource) -> key.
_RAY_SIZE_KEYS = {
    ("headGroupSpec", "cpu"): "trainyard:jobs.ray.headCpu",
    ("headGroupSpec", "memory"): "trainyard:jobs.ray.headMemory",
    ("workerGroupSpecs", "cpu"): "trainyard:jobs.ray.workerCpu",
    ("workerGroupSpecs", "memory"): "trainyard:jobs.ray.workerMemory",
}


def with_config_key(problem: PlacementProblem, job_keys: Mapping[str, str]) -> PlacementProblem:
    """The problem with the key to change: a Ray pod's cpu or memory, else the job's own entry (job_keys: the
    stack's jobs by name, admission.workload_config_keys)."""
    name = problem.workload.rpartition("/")[2]
    job = next((key for job, key in job_keys.items() if name == job or name.startswith(f"{job}-")), "")
    group = problem.where.partition("[")[0]
    key = _RAY_SIZE_KEYS.get((group, problem.resource), job)
    return dataclasses.replace(problem, key=key) if key else problem


# ---- reading the plan --------------------------------------------------------------------------------


def pool_taints(facts: PoolFacts, inputs: Mapping[str, Any]) -> tuple[Taint, ...]:
    taints: list[Taint] = []
    if facts.accelerator_resource == gke.TPU_RESOURCE:
        taints.append(gke.TPU_TAINT)
    elif facts.accelerator_resource == gke.GPU_RESOURCE:
        taints.append(gke.GPU_TAINT)
    if facts.queued:
        taints.append(gke.QUEUED_TAINT)
    machine = gpu_machines.GPU_MACHINES.get(facts.machine_type or "")
    if machine is not None and machine.cpu_arch == "arm64":
        taints.append(gke.ARM64_TAINT)
    for taint in items(inputs, "nodeConfig.taints"):
        effect = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
        taints.append(
            (str(lookup(taint, "key")), str(lookup(taint, "value") or ""), effect.get(lookup(taint, "effect"), ""))
        )
    return tuple(taints)


def node_pools(resources: Iterable[Mapping[str, Any]]) -> list[Pool]:
    pools = []
    for resource in resources:
        if resource["type"] != gke.NODE_POOL_TYPE:
            continue
        inputs = resource["inputs"]
        facts = pool_facts(resource["name"], resource["urn"], inputs)
        if facts.machine_type is None:
            continue
        disk = lookup(inputs, "nodeConfig.diskSizeGb") or node_shapes.DEFAULT_BOOT_DISK_GB
        local_ssds = int(lookup(inputs, "nodeConfig.ephemeralStorageLocalSsdConfig.localSsdCount") or 0)
        allocatable = node_shapes.node_allocatable(facts.machine_type, float(disk), local_ssds).as_resources()
        pools.append(Pool(facts, allocatable, pool_taints(facts, inputs)))
    return pools


def pod_groups(resources: Iterable[Mapping[str, Any]]) -> list[PodGroup]:
    groups = []
    for resource in resources:
        kind = kind_of(resource["type"])
        if kind is None:
            continue
        obj = resource["inputs"]
        namespace = lookup(obj, "metadata.namespace") or "default"
        workload = f"{kind} {namespace}/{lookup(obj, 'metadata.name') or resource['name']}"
        queue_name = (lookup(obj, "metadata.labels") or {}).get(gke.QUEUE_LABEL)
        queue = (namespace, queue_name) if queue_name else None
        for template in pod_templates(kind, obj):
            where = template.where.rsplit(".", 1)[-1] if kind in RAY_KINDS else ""
            if template.is_ray_worker:
                pods, one_pool = int(lookup(template.group, "numOfHosts") or 1), True
            elif kind in RAY_KINDS:
                pods, one_pool = 1, True
            else:
                count_path = "spec.parallelism" if kind == "Job" else "spec.replicas"
                pods, one_pool = int(lookup(obj, count_path) or 1), False
            groups.append(PodGroup(workload, where, template.spec, pods, one_pool, queue, daemon=kind == "DaemonSet"))
    return groups


def kueue_flavors(
    resources: Iterable[Mapping[str, Any]], queue: tuple[str, str], requests: Mapping[str, float] | None = None
) -> list[Mapping[str, Any]]:
    """The ResourceFlavor specs a workload sent to LocalQueue `queue` may be admitted to, in Kueue's order: those
    with quota for each accelerator it requests (Kueue passes over a flavor without it)."""
    objects = [resource["inputs"] for resource in resources if kind_of(resource["type"])]
    found = cluster_queue_of(objects, *queue)
    if found is None:
        return []
    wanted = [name for name, amount in (requests or {}).items() if amount and name in gke.ACCELERATOR_RESOURCES]

    def holds(entry: Mapping[str, Any]) -> bool:
        quotas = {quota.get("name"): quota.get("nominalQuota") for quota in entry.get("resources") or []}
        return all(pods.parse_quantity(quotas.get(name) or 0) > 0 for name in wanted)

    entries = [entry for _, group in found.groups for entry in group if holds(entry)]
    return [found.flavors[entry["name"]] for entry in entries if entry["name"] in found.flavors]


def admitted_spec(spec: Mapping[str, Any], flavors: list[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The pod as Kueue admits it: on the first flavor whose labels its node selector allows, as Kueue's flavor
    assigner picks one (not any flavor that would place it: Kueue never tries the others once one fits)."""
    return next((merged for merged in (with_flavor(spec, flavor) for flavor in flavors) if merged), spec)


def with_flavor(spec: Mapping[str, Any], flavor: Mapping[str, Any]) -> dict[str, Any] | None:
    """The pod spec as Kueue admits it to `flavor` (its node labels and tolerations added), or None where the
    flavor's labels contradict the pod's node selector: Kueue never assigns such a flavor."""
    selector, labels = spec.get("nodeSelector") or {}, flavor.get("nodeLabels") or {}
    if any(key in selector and selector[key] != value for key, value in labels.items()):
        return None
    merged = dict(spec)
    merged["nodeSelector"] = {**selector, **labels}
    merged["tolerations"] = [*(spec.get("tolerations") or []), *(flavor.get("tolerations") or [])]
    return merged


# ---- the filter step -----------------------------------------------------------------------------------


def container_requests(container: Mapping[str, Any]) -> dict[str, float]:
    return pods.container_requests(container, CHECKED_RESOURCES)


def pod_requests(spec: Mapping[str, Any]) -> dict[str, float]:
    """The pod's requests of the resources the filter step checks, as Kubernetes sums them."""
    return pods.pod_requests(spec, CHECKED_RESOURCES)


def tolerates(tolerations: list[Mapping[str, Any]], taint: Taint) -> bool:
    key, value, effect = taint
    for toleration in tolerations:
        if toleration.get("effect") and toleration["effect"] != effect:
            continue
        if toleration.get("operator") == "Exists" and toleration.get("key") in (None, "", key):
            return True
        if toleration.get("key") == key and toleration.get("value", "") == value:
            return True
    return False


def untolerated(spec: Mapping[str, Any], pool: Pool) -> list[Taint]:
    # ExtendedResourceToleration: requesting an accelerator tolerates the taint named after it.
    automatic = [
        {"key": name, "operator": "Exists", "effect": "NoSchedule"}
        for name in pod_requests(spec)
        if name in gke.ACCELERATOR_RESOURCES
    ]
    tolerations = [*(spec.get("tolerations") or []), *automatic]
    return [t for t in pool.taints if t[2] in ("NoSchedule", "NoExecute") and not tolerates(tolerations, t)]


def pods_per_node(requests: Mapping[str, float], free: Mapping[str, float]) -> int:
    counts = [math.floor(free.get(name, 0.0) / amount) for name, amount in requests.items() if amount > 0]
    return min(counts) if counts else NO_REQUEST_LIMIT


def daemon_overhead(groups: list[PodGroup], pools: list[Pool]) -> dict[str, dict[str, float]]:
    """Pool name -> what the stack's DaemonSets request on each of its nodes."""
    overhead: dict[str, dict[str, float]] = {pool.name: {} for pool in pools}
    for group in (g for g in groups if g.daemon):
        for pool in pools:
            if selects_pool(group.spec, pool.facts) and not untolerated(group.spec, pool):
                for name, amount in pod_requests(group.spec).items():
                    overhead[pool.name][name] = overhead[pool.name].get(name, 0.0) + amount
    return overhead


def free_on(pool: Pool, overhead: Mapping[str, float]) -> dict[str, float]:
    return {name: amount - overhead.get(name, 0.0) for name, amount in pool.allocatable.items()}


def short_of(requests: Mapping[str, float], pools: list[Pool], free: Mapping[str, dict[str, float]]) -> str:
    """The resource the pod is shortest of, on the pool that comes closest."""
    short = [
        (name, pool) for pool in pools for name, amount in requests.items() if amount > free[pool.name].get(name, 0.0)
    ]
    return max(short, key=lambda item: free[item[1].name].get(item[0], 0.0) / requests[item[0]])[0]


def explain_resources(
    spec: Mapping[str, Any], requests: Mapping[str, float], pools: list[Pool], free: Mapping[str, dict[str, float]]
) -> str:
    """One line: the request that fits nowhere, its container, and the closest pool's allocatable."""
    name = short_of(requests, pools, free)
    closest = max(pools, key=lambda pool: free[pool.name].get(name, 0.0))
    containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    biggest = max(containers, key=lambda c: container_requests(c).get(name, 0.0))
    return (
        f"container {biggest.get('name')} requests {name} "
        f"{show_amount(name, container_requests(biggest).get(name, 0.0))}"
        f" (pod total {show_amount(name, requests[name])}), but the closest pool {closest.name} "
        f"({closest.facts.machine_type}) has {show_amount(name, free[closest.name].get(name, 0.0))} allocatable"
        + (" after the stack's DaemonSets" if free[closest.name] != closest.allocatable else "")
    )


def place(
    group: PodGroup, spec: Mapping[str, Any], pools: list[Pool], free: Mapping[str, dict[str, float]]
) -> Miss | None:
    """None when the pods fit; otherwise why not, naming the closest miss."""
    labelled = [pool for pool in pools if selects_pool(spec, pool.facts)]
    if not labelled:
        selector = {**(spec.get("nodeSelector") or {})}
        names = ", ".join(pool.name for pool in pools)
        return Miss(LABELS, f"its node selector {selector} and node affinity match no node pool (pools: {names})")
    tolerated = [pool for pool in labelled if not untolerated(spec, pool)]
    if not tolerated:
        pool = labelled[0]
        taints = ", ".join(f"{k}={v}:{e}" for k, v, e in untolerated(spec, pool))
        return Miss(TAINTS, f"it tolerates no taint of the pools it selects; pool {pool.name} has {taints}")
    requests = pod_requests(spec)
    per_node = {pool.name: pods_per_node(requests, free[pool.name]) for pool in tolerated}
    fitting = [pool for pool in tolerated if per_node[pool.name] > 0]
    if not fitting:
        return Miss(RESOURCES, explain_resources(spec, requests, tolerated, free), short_of(requests, tolerated, free))
    slices = [pool.name for pool in fitting if pool.facts.tpu_slice and pool.facts.tpu_slice.multi_host]
    if not group.one_pool and group.pods > 1 and requests.get(gke.TPU_RESOURCE) and len(slices) > 1:
        return Miss(
            COUNT,
            f"its {group.pods} pods may land in different TPU slices ({', '.join(slices)}), where libtpu waits for "
            f"peers that never come: confine them to one slice's pool ({gke.NODE_POOL_LABEL})",
        )
    capacity = [per_node[pool.name] * pool.max_nodes for pool in fitting]
    if (max(capacity) if group.one_pool else sum(capacity)) >= group.pods:
        return None
    best = max(fitting, key=lambda pool: per_node[pool.name] * pool.max_nodes)
    where = "in one pool" if group.one_pool else "across its pools"
    return Miss(
        COUNT,
        f"needs {group.pods} pods {where}, but pool {best.name} holds at most "
        f"{per_node[best.name] * best.max_nodes} ({best.max_nodes} nodes x {per_node[best.name]} per node)",
    )


def check_placement(resources: list[Mapping[str, Any]]) -> tuple[int, list[PlacementProblem]]:
    """(pod templates checked, problems) for the plan's resources (`Plan.to_json()["resources"]`)."""
    pools = node_pools(resources)
    groups = pod_groups(resources)
    overhead = daemon_overhead(groups, pools)
    problems = []
    for group in groups:
        # A DaemonSet competes with the other DaemonSets on a node, not with itself.
        own = pod_requests(group.spec) if group.daemon else {}
        free = {pool.name: free_on(pool, _minus(overhead[pool.name], own)) for pool in pools}
        flavors = kueue_flavors(resources, group.queue, pod_requests(group.spec)) if group.queue else []
        candidates = [admitted_spec(group.spec, flavors)]
        decide = _daemon_reason if group.daemon else place
        misses = [decide(group, spec, pools, free) for spec in candidates]
        if all(miss is not None for miss in misses):
            closest = max(misses, key=lambda miss: miss.stage)  # the first of equals: the flavors' order
            problems.append(PlacementProblem(group.workload, group.where, closest.reason, closest.resource))
    return len(groups), problems


def _minus(overhead: Mapping[str, float], own: Mapping[str, float]) -> dict[str, float]:
    return {name: amount - own.get(name, 0.0) for name, amount in overhead.items()}


def _daemon_reason(
    group: PodGroup, spec: Mapping[str, Any], pools: list[Pool], free: Mapping[str, dict[str, float]]
) -> Miss | None:
    """A DaemonSet runs on every node it selects and tolerates: its pod must fit each such pool."""
    landing = [pool for pool in pools if selects_pool(spec, pool.facts) and not untolerated(spec, pool)]
    requests = pod_requests(spec)
    short = [pool for pool in landing if pods_per_node(requests, free[pool.name]) < 1]
    return (
        Miss(RESOURCES, explain_resources(spec, requests, short, free), short_of(requests, short, free))
        if short
        else None
    )
