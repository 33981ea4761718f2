"""Which running workloads a change reaches: the jobs on a node pool, the pools on a network, every job in the
cluster. From the plan alone: a workload depends on the pools it runs on (components/jobs), a pool's inputs name
the networks and subnets it is attached to."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.facts.gke import CLUSTER_TYPE, NODE_POOL_TYPE, WORKLOAD_LABEL
from policies.workloads import selects_pool
from preflight.checks.kueue_objects import DEFAULT_SUBMITTER
from preflight.checks.placement import node_pools, pod_groups, untolerated
from preflight.diff.compare import is_workload
from preflight.diff.replacements import identities


def workload_name(resource: Mapping[str, Any]) -> str:
    """``Kind `name``` of a Job/RayJob/RayCluster, by its trainyard/workload label."""
    metadata = (resource.get("inputs") or {}).get("metadata") or {}
    name = (metadata.get("labels") or {}).get(WORKLOAD_LABEL) or metadata.get("name", resource["name"])
    return f"{resource['type'].rsplit(':', 1)[-1]} `{name}`"


def workloads_on(urns: set[str], resources: list[Mapping[str, Any]]) -> list[str]:
    """The workloads that depend on any of ``urns`` (the pools they run on)."""
    return sorted(
        {workload_name(r) for r in resources if is_workload(r["type"]) and urns & set(r.get("dependencies") or [])}
    )


def all_workloads(resources: list[Mapping[str, Any]]) -> list[str]:
    return sorted({workload_name(r) for r in resources if is_workload(r["type"])})


def _mentions(inputs: Any, names: set[str]) -> bool:
    if isinstance(inputs, Mapping):
        return any(_mentions(value, names) for value in inputs.values())
    if isinstance(inputs, list):
        return any(_mentions(value, names) for value in inputs)
    return isinstance(inputs, str) and (inputs in names or any(inputs.endswith("/" + name) for name in names))


def pools_on_network(network: Mapping[str, Any], resources: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The node pools with a NIC on ``network``: attached to it directly, or all of them when it is the cluster's."""
    names = identities(network)
    pools = [r for r in resources if r["type"] == NODE_POOL_TYPE]
    if any(r["type"] == CLUSTER_TYPE and _mentions(r.get("inputs") or {}, names) for r in resources):
        return pools
    return [pool for pool in pools if _mentions(pool.get("inputs") or {}, names)]


def queued_provisioning(pool: Mapping[str, Any]) -> bool:
    """A DWS flex-start pool: its nodes come from a ProvisioningRequest, and new capacity waits for one."""
    return bool(((pool.get("inputs") or {}).get("queuedProvisioning") or {}).get("enabled"))


def pods_placed_on(pool_name: str, resources: list[Mapping[str, Any]]) -> list[str]:
    """The pod templates of the stack the scheduler may put on ``pool_name``'s nodes (their labels select it and
    they tolerate its taints): ``Kind `name` (where)``, e.g. a RayJob's head and submitter on the system pool."""
    pools = [pool for pool in node_pools(resources) if pool.name == pool_name]
    if not pools:
        return []
    (pool,) = pools

    def runs_there(spec: Mapping[str, Any]) -> bool:
        return selects_pool(spec, pool.facts) and not untolerated(spec, pool)

    placed = []
    for group in pod_groups(resources):
        if group.daemon or not runs_there(group.spec):
            continue
        shown = f"{group.workload.replace(' ', ' `', 1)}`"
        placed.append(shown + (f" ({group.where})" if group.where else ""))
        # KubeRay's default submitter (no selector, no tolerations) goes wherever such a pod may run.
        if group.where == "headGroupSpec" and group.workload.startswith("RayJob ") and runs_there(DEFAULT_SUBMITTER):
            placed.append(f"{shown} (submitter)")
    return placed
