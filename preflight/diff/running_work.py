"""What a change does to work that is running: the loud lines of the PR diff (replacements and what they drag,
pools removed, workloads superseded or kept, restarts, network changes, updates Kueue refuses), naming the workload."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.facts import kueue_release
from components.facts.gke import CLUSTER_TYPE, DEPLOYMENT_TYPE, NETWORK_TYPE, NODE_POOL_TYPE, WORKLOAD_LABEL
from preflight.diff import api_updates
from preflight.diff.compare import NODES_MIGRATED, PlanDiff, ResourceChange, is_workload, refused_by_kueue
from preflight.diff.lineage import lost_work
from preflight.diff.replacements import Dependent
from preflight.diff.workloads import (
    all_workloads,
    pods_placed_on,
    pools_on_network,
    queued_provisioning,
    workload_name,
    workloads_on,
)
from preflight.engine.plan import integral_as_int


def short_type(type_: str) -> str:
    return type_.rsplit(":", 1)[-1]


# What is down between the deletion of a fixed-name resource and the readiness of its replacement.
DOWN_MEANWHILE = {
    CLUSTER_TYPE: "the cluster and everything running in it are gone until the new cluster is ready",
    NODE_POOL_TYPE: "its nodes and every pod on them are gone until the new pool's nodes are ready",
}


def _workload_name(inputs: Mapping[str, Any]) -> str:
    metadata = inputs.get("metadata") or {}
    return (metadata.get("labels") or {}).get(WORKLOAD_LABEL) or metadata.get("name", "?")


def _object_name(change: ResourceChange, side: str) -> str:
    return next((getattr(c, side) for c in change.changes if c.path == "metadata.name"), None) or "?"


def _workload_replaced(change: ResourceChange, head: Mapping[str, Any], diff: PlanDiff) -> str:
    line = _revision_line(change, head, diff)
    base = next((r for r in diff.base_resources if r["urn"] == change.urn), None)
    if base is None or short_type(change.type) not in ("Job", "RayJob"):
        return line
    return f"{line.removesuffix('.')}; {lost_work(short_type(change.type), base.get('inputs') or {}, head)}."


def _revision_line(change: ResourceChange, head: Mapping[str, Any], diff: PlanDiff) -> str:
    kind, workload = short_type(change.type), _workload_name(head)
    paths = ", ".join(f"`{c.path}`" for c in change.changes if c.replaces)
    old, new = _object_name(change, "old"), _object_name(change, "new")
    policy = diff.revisions.get(change.urn)
    if policy is not None and policy.policy == "replace":
        return (
            f"> **{kind} `{workload}` will be REPLACED: updatePolicy replace DELETES the running `{old}` with its "
            f"pods** (SIGTERM, then their grace period to checkpoint) before `{new}` is created, because of "
            f"{paths}; the two never run at once."
        )
    if policy is not None and policy.policy == "keep":
        head_line = (
            f"> **{kind} `{workload}` gets a new revision** (`{old}` → `{new}`, because of {paths}): updatePolicy "
            f"keep leaves the running `{old}` to its end (retainOnDelete)"
        )
        if not policy.starts_at_once:
            return f"{head_line}; `{new}` waits for its quota until then (Kueue: {policy.waits_for})."
        cost = (
            f"about ${policy.overlap_usd_per_hour:,.0f}/h more"
            if policy.overlap_usd_per_hour is not None
            else "at a cost preflight cannot price"
        )
        return (
            f"{head_line}; **Kueue admits `{new}` at once beside it** (the queue's quota holds both): both run, "
            f"{cost} until `{old}` ends."
        )
    if change.old_retained:
        return (
            f"> **{kind} `{workload}` gets a new revision** (`{old}` → `{new}`, because of {paths}): "
            f"the running `{old}` is kept (retainOnDelete) and runs to its end."
        )
    return (
        f"> **{kind} `{workload}` will be REPLACED: the running object is DELETED with its pods** "
        f"and recreated, because of {paths}."
    )


def _workload_removed(resource: Mapping[str, Any]) -> str:
    kind = short_type(resource["type"])
    name = _workload_name(resource.get("inputs") or {})
    if (resource.get("options") or {}).get("retainOnDelete"):
        return (
            f"> **{kind} `{name}` leaves the stack**: the object stays in the cluster (retainOnDelete) and runs to "
            f"its end; `kubectl delete {kind.lower()} -l {WORKLOAD_LABEL}={name}` stops it."
        )
    return f"> **{kind} `{name}` will be DELETED with its running pods.**"


def _retained_object(resource: Mapping[str, Any]) -> bool:
    return not is_workload(resource["type"]) and bool((resource.get("options") or {}).get("retainOnDelete"))


def _kept(resource: Mapping[str, Any]) -> str:
    kind, name = short_type(resource["type"]), (resource.get("inputs") or {}).get("metadata", {}).get("name", "?")
    return (
        f"> {kind} `{name}` leaves the stack but stays in the cluster (retainOnDelete) for the jobs that still "
        "run on it; delete it once they are gone."
    )


def _ray_operator_on(cluster: Mapping[str, Any]) -> bool:
    configs = ((cluster.get("addonsConfig") or {}).get("rayOperatorConfigs")) or []
    return any(config.get("enabled") for config in configs)


def _restarts(change: ResourceChange, head: Mapping[str, Any], diff: PlanDiff) -> list[str]:
    """In-place changes that still stop or pause running work: a GKE version (and its Ray operator), a Kueue
    release, the Ray operator switched off."""
    versions = {c.path: c for c in change.changes if c.path in ("minMasterVersion", "version")}
    running = ", ".join(all_workloads(diff.head_resources)) or "no job"
    lines = []
    ignored = {path for v in diff.api_verdicts if v.urn == change.urn and v.verdict == "ignored" for path in v.paths}
    if change.type == CLUSTER_TYPE and "minMasterVersion" in versions and "minMasterVersion" not in ignored:
        version = versions["minMasterVersion"]
        lines.append(
            f"> **Cluster `{change.name}`: GKE version `{version.old}` → `{version.new}` restarts the control plane** "
            "(the API pauses; Kueue and the Ray operator wait); node pools with auto-upgrade follow it, recreating "
            f"their nodes and evicting the pods on them, running jobs included ({running})."
        )
        rayjobs = [name for name in all_workloads(diff.head_resources) if name.startswith("Ray")]
        if _ray_operator_on(head) and rayjobs:
            lines.append(
                f"> **Ray operator: GKE's Ray add-on moves to the KubeRay of GKE `{version.new}`**: it restarts, and "
                f"{', '.join(rayjobs)} is not reconciled meanwhile (a lost worker is not replaced); a new KubeRay "
                "may change how it runs them."
            )
    switched = [
        c
        for c in change.changes
        if c.path.startswith("addonsConfig.rayOperatorConfigs") and c.path.endswith(".enabled")
    ]
    if change.type == CLUSTER_TYPE and any(c.old and not c.new for c in switched):
        rayjobs = [name for name in all_workloads(diff.base_resources) if name.startswith("Ray")]
        lines.append(
            f"> **Cluster `{change.name}`: the Ray operator is switched off**: {', '.join(rayjobs) or 'no RayJob'} "
            "loses its operator; its pods run on unmanaged, and nothing restarts a lost worker."
        )
    controller = kueue_release.controller_container([head]) if change.type == DEPLOYMENT_TYPE else None
    image = next((c for c in change.changes if c.path.endswith(".image")), None)
    if controller is not None and image is not None:
        old, new = (str(value).rpartition(":")[2] for value in (image.old, image.new))
        lines.append(
            f"> **Kueue `{old}` → `{new}`**: the release restarts Kueue's controller (admission pauses meanwhile) "
            f"and may change its CRDs and defaults; running workloads stay admitted ({running})."
        )
    elif controller is not None:
        lines.append(
            f"> **Kueue's controller restarts** (its settings change): admission pauses meanwhile; running "
            f"workloads stay admitted ({running})."
        )
    return lines


def _dependent_line(dependent: Dependent, diff: PlanDiff) -> str:
    kind = short_type(dependent.type)
    paths = ", ".join(f"`{path}`" for path in dependent.paths)
    causes = ", ".join(f"`{cause}`" for cause in dependent.causes)
    if dependent.replaced:
        return (
            f"> **{kind} `{dependent.name}` will be REPLACED too**: it uses {causes} ({paths}), which is replaced, "
            "and the provider cannot change that in place."
        )
    if is_workload(dependent.type):
        head = {r["urn"]: r for r in diff.head_resources}
        pools = [r for r in diff.head_resources if r["name"] in dependent.causes and r["type"] == NODE_POOL_TYPE]
        waits = (
            "waits for new DWS capacity (a new ProvisioningRequest) before it resumes from its newest checkpoint"
            if any(queued_provisioning(pool) for pool in pools)
            else "waits for the new nodes, then resumes from its newest checkpoint"
        )
        return (
            f"> **{workload_name(head[dependent.urn])} runs on {causes}, which is replaced: its running pods die** "
            f"when the old nodes go, and it {waits}."
        )
    return f"> {kind} `{dependent.name}` is updated to the new {causes} ({paths})."


def _pool_removed(pool: Mapping[str, Any], diff: PlanDiff) -> str:
    on_it = workloads_on({pool["urn"]}, diff.base_resources)
    one = len(on_it) == 1
    victims = (
        f"{', '.join(on_it)} {'runs' if one else 'run'} on it and {'loses its' if one else 'lose their'} pods there"
        if on_it
        else "every pod on them goes with them"
    )
    line = f"> **NodePool `{pool['name']}` will be DELETED with its nodes**: {victims}."
    if any(r["type"] == NODE_POOL_TYPE for r in diff.added):
        line += (
            " If it was renamed (a slice group or pool name changed), the pools are rebuilt, not moved: GKE knows a "
            "pool by its name, so no alias can carry it over, and the new pools start with new capacity."
        )
    return line


def _network_lines(change: ResourceChange, diff: PlanDiff) -> list[str]:
    """An MTU change updates the VPC in place, but a running VM keeps the MTU it booted with."""
    mtu = next((c for c in change.changes if c.path == "mtu"), None)
    if change.type != NETWORK_TYPE or mtu is None or change.replaced:
        return []
    network = next(r for r in diff.head_resources if r["urn"] == change.urn)
    pools = pools_on_network(network, diff.head_resources)
    if not pools:
        return []
    names = ", ".join(f"`{pool['name']}`" for pool in pools)
    on_them = workloads_on({pool["urn"] for pool in pools}, diff.head_resources)
    jobs = f" ({', '.join(on_them)} {'runs' if len(on_them) == 1 else 'run'} on them)" if on_them else ""
    line = (
        f"> **Network `{change.name}`: MTU `{integral_as_int(mtu.old)}` → `{integral_as_int(mtu.new)}` reaches only "
        f"new VMs**: the running nodes of node pools {names} keep the MTU they booted with until they are "
        f"recreated{jobs}; packets between old and new nodes may be dropped meanwhile."
    )
    return [line]


def _nodes_recreated(change: ResourceChange, migrated: list[str], diff: PlanDiff) -> str:
    line = (
        f"> Node pool `{change.name}`: {', '.join(migrated)} changes recreate every node (rolling migration); the "
        "pool itself stays."
    )
    pods = pods_placed_on(change.name, diff.head_resources)
    if pods:
        line += (
            f" **The pods that run there are evicted and start again on a new node: {', '.join(pods)}**; a Ray head "
            "that restarts loses the Ray job it drives, which starts over from its newest checkpoint."
        )
    return line


def _hurt(verdict: api_updates.ApiVerdict, diff: PlanDiff) -> str:
    """The running jobs a verdict reaches."""
    if verdict.type == NODE_POOL_TYPE:
        jobs = workloads_on({verdict.urn}, diff.head_resources)
    elif is_workload(verdict.type):
        jobs = [workload_name(next(r for r in diff.head_resources if r["urn"] == verdict.urn))]
    else:
        jobs = all_workloads(diff.head_resources)
    return ", ".join(jobs) or "no job"


def _api_line(verdict: api_updates.ApiVerdict, diff: PlanDiff) -> str:
    kind, paths = short_type(verdict.type), ", ".join(f"`{path}`" for path in verdict.paths)
    if verdict.verdict == api_updates.REFUSED:
        name = verdict.name
        if is_workload(verdict.type):
            name = _workload_name(next(r for r in diff.head_resources if r["urn"] == verdict.urn).get("inputs") or {})
        return (
            f"> **{kind} `{name}`: the API will REFUSE this update** ({paths}; `{verdict.key}`): "
            f"{verdict.says}; `pulumi up` fails on it, with {_hurt(verdict, diff)} still running. Instead, "
            f"{verdict.instead}."
        )
    if verdict.verdict == "ignored":
        return (
            f"> {kind} `{verdict.name}`: {paths} changes nothing (`{verdict.key}`): {verdict.says}. {verdict.instead}."
        )
    if verdict.verdict == "auto-upgrade":
        pools = [  # off before the change: on after it, whatever the stack says
            r
            for r in diff.base_resources
            if r["type"] == NODE_POOL_TYPE and not ((r.get("inputs") or {}).get("management") or {}).get("autoUpgrade")
        ]
        names = ", ".join(f"`{pool['name']}`" for pool in pools) or "none of the pools"
        jobs = ", ".join(workloads_on({pool["urn"] for pool in pools}, diff.base_resources)) or "no job"
        return (
            f"> **Cluster `{verdict.name}`: {paths} turns node auto-upgrade ON under {names}** (`{verdict.key}`): "
            f"{verdict.says}; an upgrade then recreates their nodes under {jobs}. {verdict.instead}."
        )
    managed = [r for r in diff.head_resources if r.get("provider") == verdict.urn]
    jobs = ", ".join(workload_name(r) for r in managed if is_workload(r["type"])) or "no job"
    return (
        f"> **Provider `{verdict.name}`: every Kubernetes object it manages ({len(managed)}) will be REPLACED** "
        f"({paths}; `{verdict.key}`): {verdict.says}; {jobs} lose their pods and start over. Instead, "
        f"{verdict.instead}."
    )


def _renamed_workloads(diff: PlanDiff) -> list[str]:
    """One job of a kind removed and one added: a renamed job, whose new run says what it starts from."""
    lines = []
    for kind in ("Job", "RayJob"):
        removed = [r for r in diff.removed if short_type(r["type"]) == kind and is_workload(r["type"])]
        added = [r for r in diff.added if short_type(r["type"]) == kind and is_workload(r["type"])]
        if len(removed) == 1 and len(added) == 1:
            old, new = removed[0].get("inputs") or {}, added[0].get("inputs") or {}
            lines.append(
                f"> {workload_name(added[0])} replaces {workload_name(removed[0])} (renamed): "
                f"{lost_work(kind, old, new)}."
            )
    return lines


def _namespaces_deleted(diff: PlanDiff) -> list[str]:
    """A namespace replaced or removed takes everything in it: what the stack retains there (kept job revisions)
    and what it never knew of (submitted jobs, Ray's token Secrets)."""
    replaced = {change.urn for change in diff.replaced if short_type(change.type) == "Namespace"}
    gone = [r for r in diff.base_resources if short_type(r["type"]) == "Namespace"]
    gone = [r for r in gone if r["urn"] in replaced or r in diff.removed]
    lines = []
    for namespace in gone:
        name = (namespace.get("inputs") or {}).get("metadata", {}).get("name", namespace["name"])
        inside = [
            r for r in diff.base_resources if ((r.get("inputs") or {}).get("metadata") or {}).get("namespace") == name
        ]
        jobs = sorted({workload_name(r) for r in inside if is_workload(r["type"])})
        lines.append(
            f"> **Namespace `{name}` is DELETED, and Kubernetes deletes everything in it**: {len(inside)} objects "
            f"of the stack ({', '.join(jobs) or 'no job'} among them, with their pods), and whatever else runs there; "
            "revisions kept running (updatePolicy keep) do not survive it."
        )
    return lines


def caution_lines(diff: PlanDiff) -> list[str]:
    lines = []
    heads = {r["urn"]: r.get("inputs") or {} for r in diff.head_resources}
    for change in diff.replaced:
        if is_workload(change.type):
            lines.append(_workload_replaced(change, heads.get(change.urn, {}), diff))
            continue
        paths = ", ".join(f"`{c.path}`" for c in change.changes if c.replaces)
        if change.delete_first:
            down = DOWN_MEANWHILE.get(change.type, "it is down until the new one is ready")
            lines.append(
                f"> **{short_type(change.type)} `{change.name}` will be REPLACED, deleted first** (its name is "
                f"fixed) because of {paths}: {down}."
            )
            continue
        lines.append(
            f"> **{short_type(change.type)} `{change.name}` will be REPLACED** (deleted and recreated) "
            f"because of {paths}."
        )
    lines += [_dependent_line(d, diff) for d in diff.dependents if d.paths or is_workload(d.type)]
    lines += [_pool_removed(r, diff) for r in diff.removed if r["type"] == NODE_POOL_TYPE]
    lines += [_workload_removed(resource) for resource in diff.removed if is_workload(resource["type"])]
    lines += _renamed_workloads(diff)
    lines += [_kept(resource) for resource in diff.removed if _retained_object(resource)]
    for change in diff.changed:
        migrated = [c.path for c in change.changes if c.path in NODES_MIGRATED]
        if change.type == NODE_POOL_TYPE and migrated and not change.replaced:
            lines.append(_nodes_recreated(change, migrated, diff))
    lines += [_api_line(verdict, diff) for verdict in diff.api_verdicts]
    lines += _namespaces_deleted(diff)
    lines += [line for change in diff.changed for line in _restarts(change, heads.get(change.urn, {}), diff)]
    lines += [line for change in diff.changed for line in _network_lines(change, diff)]
    for change in diff.changed:
        refused = refused_by_kueue(change, heads.get(change.urn, {}))
        if refused:
            lines.append(
                f"> **ResourceFlavor `{change.name}`: Kueue will refuse this update** "
                f"({', '.join(f'`{path}`' for path in refused)}): a flavor that places by a Topology keeps its "
                "topology, node labels and tolerations; `pulumi up` fails on it. Delete the flavor first, once "
                "no workload uses it."
            )
    return ["> [!CAUTION]", *lines, ""] if lines else []


def warnings(diff: PlanDiff) -> list[str]:
    """The loud lines, without Markdown's quote marker: what the change does to running work."""
    return [line.removeprefix("> ") for line in caution_lines(diff) if line.startswith("> ") and "[!" not in line]
