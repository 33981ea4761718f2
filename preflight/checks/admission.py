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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.config.models import StackConfig
from components.facts import gke, nvidia_dra
from components.jobs.smoke_workloads import jax_job_name, nccl_job_name
from components.kube.kueue import INTEGRATIONS
from policies.props import lookup
from policies.workloads import kind_of
from preflight.checks.kueue_flavors import (
    Usage,
    assign_flavors,
    provisioned_flavors,
    topology_without_nodes,
    unserved_provisioning,
)
from preflight.checks.kueue_objects import (
    KueueSetup,
    cluster_queue_of,
    dra_requests,
    kueue_setup,
    pod_sets,
)
from preflight.checks.placement import Pool, node_pools
from preflight.checks.pods import add_requests, pod_requests

# Workloads that run until deleted: admitted once, they keep their quota for good.
NEVER_ENDING = ("RayCluster",)


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


def check_admission(
    resources: list[Mapping[str, Any]], config_keys: Mapping[str, str] | None = None
) -> tuple[list[Admission], list[AdmissionProblem]]:
    """Every queued workload's admission, or why Kueue would never admit it. `config_keys` names the stack config
    key of each workload (by its `trainyard/workload` label or object name)."""
    setup = kueue_setup(resources)
    objects = [r["inputs"] for r in resources if kind_of(r["type"])]
    context = _Context(setup, objects, nvidia_dra.claim_templates(objects), node_pools(resources))
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
        own = pod_requests(pod_set.spec)
        own = {n: a for n, a in own.items() if not any(n.startswith(p) for p in setup.excluded_prefixes)}
        devices, refused = dra_requests(pod_set, namespace, setup, context.templates)
        if refused:
            return [(pod_set.name, refused)], {}
        add_requests(own, devices)
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
    pools = [pool for group in config.tpu_slices for pool in group.pool_names]
    keys.update({jax_job_name(pool): "trainyard:jobs.smoke" for pool in pools})
    keys.update({nccl_job_name(pool.name): "trainyard:jobs.smoke" for pool in config.gpu_pools})
    keys[config.jobs.ray.name] = "trainyard:jobs.ray"
    return keys


def admitted_beside(
    resources: list[Mapping[str, Any]], workload: Mapping[str, Any], running: Mapping[str, Any]
) -> dict[str, str] | list[tuple[str, str]]:
    """Kueue's verdict on ``workload`` (an object's inputs) while ``running`` (another, admitted) holds its quota,
    under the queues and flavors of ``resources``: each pod set's flavor, or why it waits."""
    setup = kueue_setup(resources)
    objects = [r["inputs"] for r in resources if kind_of(r["type"])]
    context = _Context(setup, objects, nvidia_dra.claim_templates(objects), node_pools(resources))
    _, held = _admit(running, context)
    return _admit(workload, context, held)[0]
