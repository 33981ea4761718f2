"""A `PlanDiff` as Markdown for a pull-request comment: a loud warning for replacements, the resources added,
removed, moved and changed (every changed property, old -> new), policy verdicts, cost, and a Mermaid diagram."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.facts.gke import CLUSTER_TYPE, HELM_CHART_TYPE, NETWORK_TYPE, NODE_POOL_TYPE, WORKLOAD_LABEL
from preflight.diff.compare import NODES_MIGRATED, PlanDiff, ResourceChange, is_workload, refused_by_kueue
from preflight.diff.replacements import Dependent
from preflight.diff.values import is_long, line_diff, shown
from preflight.diff.workloads import all_workloads, pools_on_network, queued_provisioning, workload_name, workloads_on
from preflight.engine.plan import integral_as_int


def _show(value: Any) -> str:
    return "`" + shown(value).replace("`", "'").replace("|", "\\|") + "`"


def _short_type(type_: str) -> str:
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
    kind, workload = _short_type(change.type), _workload_name(head)
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
    kind = _short_type(resource["type"])
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
    kind, name = _short_type(resource["type"]), (resource.get("inputs") or {}).get("metadata", {}).get("name", "?")
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
    if change.type == CLUSTER_TYPE and "minMasterVersion" in versions:
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
    if change.type == HELM_CHART_TYPE and "version" in versions and str(head.get("chart", "")).endswith("/kueue"):
        version = versions["version"]
        lines.append(
            f"> **Kueue `{version.old}` → `{version.new}`**: the chart restarts Kueue's controller (admission pauses "
            f"meanwhile) and may change its CRDs and defaults; running workloads stay admitted ({running})."
        )
    return lines


def _dependent_line(dependent: Dependent, diff: PlanDiff) -> str:
    kind = _short_type(dependent.type)
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


def _replacement_warning(diff: PlanDiff) -> list[str]:
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
                f"> **{_short_type(change.type)} `{change.name}` will be REPLACED, deleted first** (its name is "
                f"fixed) because of {paths}: {down}."
            )
            continue
        lines.append(
            f"> **{_short_type(change.type)} `{change.name}` will be REPLACED** (deleted and recreated) "
            f"because of {paths}."
        )
    lines += [_dependent_line(d, diff) for d in diff.dependents if d.paths or is_workload(d.type)]
    lines += [_pool_removed(r, diff) for r in diff.removed if r["type"] == NODE_POOL_TYPE]
    lines += [_workload_removed(resource) for resource in diff.removed if is_workload(resource["type"])]
    lines += [_kept(resource) for resource in diff.removed if _retained_object(resource)]
    for change in diff.changed:
        migrated = [c.path for c in change.changes if c.path in NODES_MIGRATED]
        if change.type == NODE_POOL_TYPE and migrated and not change.replaced:
            lines.append(
                f"> Node pool `{change.name}`: {', '.join(migrated)} changes recreate every node "
                "(rolling migration); the pool itself stays."
            )
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


def _resource_table(title: str, resources: list[Mapping[str, Any]]) -> list[str]:
    if not resources:
        return []
    rows = [f"| `{r['name']}` | `{r['type']}` |" for r in sorted(resources, key=lambda r: r["urn"])]
    return [f"### {title} ({len(resources)})", "", "| resource | type |", "| --- | --- |", *rows, ""]


def _moved_section(diff: PlanDiff) -> list[str]:
    if not diff.moved:
        return []
    rows = [
        f"| `{new.rsplit('::', 1)[-1]}` | `{old.split('::')[2]}` | `{new.split('::')[2]}` |" for old, new in diff.moved
    ]
    return [
        f"### Moved by an alias, not replaced ({len(diff.moved)})",
        "",
        "| resource | was | now |",
        "| --- | --- | --- |",
        *rows,
        "",
    ]


def _changed_section(diff: PlanDiff) -> list[str]:
    """Every changed property, old -> new, whole: short values in the table, long ones (a script, an argument
    list) as a line diff below it."""
    if not diff.changed:
        return []
    lines = [f"### Changed ({len(diff.changed)})", ""]
    for change in diff.changed:
        marker = " — **replaced**" if change.replaced else ""
        lines += [
            f"**{_short_type(change.type)} `{change.name}`**{marker}",
            "",
            "| property | old | new | effect |",
            "| --- | --- | --- | --- |",
        ]
        long = [c for c in change.changes if is_long(c.old, c.new)]
        for c in change.changes:
            effect = "forces replacement" if c.replaces else ""
            if c in long:
                lines.append(f"| `{c.path}` | (below) | (below) | {effect} |")
            else:
                lines.append(f"| `{c.path}` | {_show(c.old)} | {_show(c.new)} | {effect} |")
        lines.append("")
        for c in long:
            lines += [f"`{c.path}`:", "", "```diff", *line_diff(c.old, c.new), "```", ""]
    return lines


def _verdict_section(diff: PlanDiff) -> list[str]:
    if not (diff.new_verdicts or diff.resolved_verdicts):
        return ["### Policy verdicts", "", "No change in policy verdicts.", ""]
    lines = ["### Policy verdicts", "", "| | level | policy | resource | message |", "| --- | --- | --- | --- | --- |"]
    for sign, verdicts in (("new", diff.new_verdicts), ("resolved", diff.resolved_verdicts)):
        for v in verdicts:
            resource = v.urn.rsplit("::", 1)[-1] if v.urn else "(stack)"
            message = v.message.replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {sign} | {v.level} | `{v.policy}` | `{resource}` | {message} |")
    return [*lines, ""]


def _cost_row(label: str, base: float, head: float) -> str:
    return f"| {label} | {base:,.2f} | {head:,.2f} | {head - base:+,.2f} |"


def _cost_section(diff: PlanDiff) -> list[str]:
    head = diff.head_cost
    if head is None:
        return []
    base_min = diff.base_cost.min_usd_per_hour if diff.base_cost else 0.0
    base_max = diff.base_cost.max_usd_per_hour if diff.base_cost else 0.0
    lines = [
        "### Cost ($/hour)",
        "",
        "| | base | head | change |",
        "| --- | ---: | ---: | ---: |",
        _cost_row("minimum scale", base_min, head.min_usd_per_hour),
        _cost_row("maximum scale", base_max, head.max_usd_per_hour),
        "",
    ]
    unpriced = [f"`{item.name}` ({item.reason})" for item in head.unpriced]
    if unpriced:
        lines += [f"Unpriced (left out of the totals): {', '.join(unpriced)}.", ""]
    return lines


def _forecast_cell(forecast: dict[str, Any] | None) -> str:
    if forecast is None:
        return "—"
    if "none" in forecast:
        return f"no forecast ({forecast['none']})"
    about = "~" if forecast["priceEstimated"] else ""
    if "tokensPerSecondPerChip" in forecast:  # a MaxText job: its configured steps on TPU slices
        throughput, dollars = f"{forecast['tokensPerSecondPerChip']:,.0f} tokens/s/chip", "per run"
        usd = forecast["usdPerRun"]
    else:  # an FSDP job: its DWS window
        throughput, dollars = f"{forecast['tokensPerSecondPerGpu']:,.0f} tokens/s/GPU", "per window"
        usd = forecast["usdPerWindow"]
    step = f"{forecast['stepSeconds']:.1f} s/step"
    calibrated = f" ({forecast['calibration']})" if forecast.get("calibration") else ""
    return f"{step}, {throughput}, MFU {forecast['mfu']:.1%}, {about}${usd:,.0f} {dollars}{calibrated}"


def _forecast_section(diff: PlanDiff) -> list[str]:
    """The jobs whose forecast the change moves (python -m preflight forecast)."""
    base = {forecast["job"]: forecast for forecast in diff.base_forecast}
    head = {forecast["job"]: forecast for forecast in diff.head_forecast}
    jobs = [job for job in {**base, **head} if base.get(job) != head.get(job)]
    if not jobs:
        return []
    rows = [f"| `{job}` | {_forecast_cell(base.get(job))} | {_forecast_cell(head.get(job))} |" for job in jobs]
    return ["### Forecast", "", "| job | base | head |", "| --- | --- | --- |", *rows, ""]


def mermaid(resources: list[Mapping[str, Any]], diff: PlanDiff | None = None) -> list[str]:
    """A Mermaid flowchart of the component tree (parent -> child), changes coloured."""
    ids = {r["urn"]: f"r{index}" for index, r in enumerate(resources)}
    status = {}
    if diff is not None:
        status.update({r["urn"]: "added" for r in diff.added})
        status.update({c.urn: "replaced" if c.replaced else "changed" for c in diff.changed})
    lines = ["```mermaid", "flowchart LR"]
    for r in resources:
        label = f"{r['name']}<br/><small>{_short_type(r['type'])}</small>".replace('"', "'")
        lines.append(f'  {ids[r["urn"]]}["{label}"]' + (f":::{status[r['urn']]}" if r["urn"] in status else ""))
    lines += [f"  {ids[r['parent']]} --> {ids[r['urn']]}" for r in resources if r.get("parent") in ids]
    lines += [
        "  classDef added fill:#d4f7d4,stroke:#2a7a2a",
        "  classDef changed fill:#fff3c4,stroke:#a07a00",
        "  classDef replaced fill:#ffd6d6,stroke:#b00020,stroke-width:3px",
        "```",
    ]
    return lines


def structure_changed(diff: PlanDiff) -> bool:
    """Resources added, removed, moved or replaced: what the diagram is for."""
    return bool(diff.added or diff.removed or diff.moved or diff.replaced or diff.dependents)


def summary(diff: PlanDiff) -> str:
    dragged = sum(d.replaced for d in diff.dependents)
    return (
        f"{len(diff.added)} added, {len(diff.removed)} removed, {len(diff.changed)} changed "
        f"({len(diff.replaced)} replaced)"
        + (f", {dragged} replaced with what they use" if dragged else "")
        + (f", {len(diff.moved)} moved by an alias" if diff.moved else "")
    )


def warnings(diff: PlanDiff) -> list[str]:
    """The loud lines, without Markdown's quote marker: what the change does to running work."""
    return [
        line.removeprefix("> ") for line in _replacement_warning(diff) if line.startswith("> ") and "[!" not in line
    ]


def render_markdown(diff: PlanDiff, base_label: str, head_label: str = "working tree") -> str:
    lines = [
        f"## trainyard preflight diff — stack `{diff.stack}`",
        "",
        f"`{base_label}` → `{head_label}`: {summary(diff)}",
        "",
    ]
    lines += _replacement_warning(diff)
    lines += _resource_table("Added", diff.added) + _resource_table("Removed", diff.removed) + _moved_section(diff)
    lines += _changed_section(diff)
    lines += _verdict_section(diff) + _cost_section(diff) + _forecast_section(diff)
    if structure_changed(diff):
        lines += [
            "<details><summary>Stack diagram</summary>",
            "",
            *mermaid(diff.head_resources, diff),
            "",
            "</details>",
        ]
    return "\n".join(lines).rstrip("\n") + "\n"
