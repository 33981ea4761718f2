"""The pure comparison of two plans (`Plan.to_json()` shapes): what was added, removed, moved and changed.

Both plans are judged by the working tree's pack code and price book, so differences come from the stack, not
from edits to the rules; each side by its own pack config (revisions.py reads the base's at the base revision).
`preflight diff` (revisions.py) plans the two revisions; `markdown.py` renders the result.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from components.facts import cost
from preflight.checks import policy_runner
from preflight.diff import api_updates, replacements
from preflight.diff.revisions_policy import Revision, revision
from preflight.forecast.report import plan_forecasts

# Node pool fields whose in-place update recreates every node (rolling migration: nodePoolNodeConfigUpdate in
# terraform-provider-google's node_config.go since v5.10.0, GoogleCloudPlatform/magic-modules PR #9575).
NODES_MIGRATED = ("nodeConfig.machineType", "nodeConfig.diskType", "nodeConfig.diskSizeGb")


# Workloads whose replacement or removal the diff spells out, naming the workload:
WORKLOAD_KINDS = ("Job", "RayJob", "RayCluster", "JobSet")
# Kueue's ResourceFlavor CRD (v0.19.2 validation rules): once a flavor has a topologyName, its topologyName,
# nodeLabels and tolerations never change; the API server refuses such an update, so `pulumi up` fails on it.
RESOURCE_FLAVOR_TYPE = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
TAS_FLAVOR_FROZEN = ("spec.topologyName", "spec.nodeLabels", "spec.tolerations")


def is_workload(type_: str) -> bool:
    return type_.startswith("kubernetes:") and type_.rsplit(":", 1)[-1] in WORKLOAD_KINDS


@dataclass(frozen=True)
class PropertyChange:
    path: str
    old: Any
    new: Any
    replaces: bool = False


@dataclass(frozen=True)
class ResourceChange:
    urn: str
    type: str
    name: str
    changes: tuple[PropertyChange, ...]
    old_retained: bool = False  # the base resource carries retainOnDelete: its replacement leaves it running
    delete_first: bool = False  # deleteBeforeReplace: down from its deletion until the replacement is ready

    @property
    def replaced(self) -> bool:
        return any(change.replaces for change in self.changes)


@dataclass
class PlanDiff:
    stack: str
    added: list[Mapping[str, Any]] = field(default_factory=list)
    removed: list[Mapping[str, Any]] = field(default_factory=list)
    changed: list[ResourceChange] = field(default_factory=list)
    moved: list[tuple[str, str]] = field(default_factory=list)  # (base URN, head URN) joined by an alias
    new_verdicts: list[policy_runner.Verdict] = field(default_factory=list)
    resolved_verdicts: list[policy_runner.Verdict] = field(default_factory=list)
    base_cost: cost.StackCost | None = None
    head_cost: cost.StackCost | None = None
    base_forecast: list[dict[str, Any]] = field(default_factory=list)
    head_forecast: list[dict[str, Any]] = field(default_factory=list)
    head_resources: list[Mapping[str, Any]] = field(default_factory=list)
    base_resources: list[Mapping[str, Any]] = field(default_factory=list)
    dependents: list[replacements.Dependent] = field(default_factory=list)  # what the replacements drag along
    revisions: dict[str, Revision] = field(default_factory=dict)  # a job's new revision, by URN
    api_verdicts: list[api_updates.ApiVerdict] = field(default_factory=list)  # what the APIs do instead

    @property
    def refused(self) -> list[api_updates.ApiVerdict]:
        """Updates an API refuses: `pulumi up` would fail on them."""
        return [verdict for verdict in self.api_verdicts if verdict.verdict == api_updates.REFUSED]

    @property
    def replaced(self) -> list[ResourceChange]:
        return [change for change in self.changed if change.replaced]


# ---- the pure comparison -------------------------------------------------------------------------


def _leaves(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping) and value:
        for key in sorted(value):
            yield from _leaves(value[key], f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from _leaves(item, f"{prefix}[{index}]")
    else:
        yield prefix, value


def property_changes(
    type_: str,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    ignored: tuple[str, ...] = (),
    replacing: tuple[str, ...] = (),
) -> list[PropertyChange]:
    """Every leaf property that differs, as dotted paths (list items as ``[i]``), but those under the resource's
    ignoreChanges: the engine keeps their old values. One under its replaceOnChanges replaces it, whatever the
    provider's schema says."""
    before, after = dict(_leaves(old)), dict(_leaves(new))
    missing = object()
    changes = []
    for path in sorted(set(before) | set(after)):
        if _under(path, ignored):
            continue
        old_value, new_value = before.get(path, missing), after.get(path, missing)
        if old_value != new_value:
            changes.append(
                PropertyChange(
                    path,
                    None if old_value is missing else old_value,
                    None if new_value is missing else new_value,
                    _under(path, replacing) or replacements.forces_replacement(type_, path, old, new),
                )
            )
    return changes


def _under(path: str, prefixes: tuple[str, ...]) -> bool:
    plain = path.split("[", 1)[0]
    return any(plain == prefix or plain.startswith(prefix + ".") for prefix in prefixes)


def _verdict_key(verdict: policy_runner.Verdict) -> tuple[str, str, str, str]:
    return verdict.policy, verdict.level, verdict.urn, verdict.message


def compare(
    base: Mapping[str, Any],
    head: Mapping[str, Any],
    pack_config: Mapping[str, Any] | None = None,
    base_pack_config: Mapping[str, Any] | None = None,
) -> PlanDiff:
    """The difference between two plans (``Plan.to_json()`` shapes); base may be empty ``{}``. Each side is
    judged by its own pack config: the head by ``pack_config``, the base by ``base_pack_config`` (default: the
    head's)."""
    base_resources = {r["urn"]: r for r in base.get("resources", [])}
    head_resources = {r["urn"]: r for r in head.get("resources", [])}
    result = PlanDiff(
        stack=str(head.get("stack", "?")),
        head_resources=list(head_resources.values()),
        base_resources=list(base_resources.values()),
    )
    # The engine treats a resource whose alias names a base URN as that resource: moved, not replaced.
    base_urn_of = {urn: urn for urn in head_resources.keys() & base_resources.keys()}
    for urn, resource in head_resources.items():
        earlier = [
            alias for alias in resource.get("aliases", []) if alias in base_resources and urn not in base_resources
        ]
        if earlier:
            base_urn_of[urn] = earlier[0]
            result.moved.append((earlier[0], urn))
    result.added = [r for urn, r in head_resources.items() if urn not in base_urn_of]
    result.removed = [r for urn, r in base_resources.items() if urn not in base_urn_of.values()]
    for urn, base_urn in base_urn_of.items():
        old, new = base_resources[base_urn], head_resources[urn]
        options = new.get("options") or {}
        ignored, replacing = tuple(options.get("ignoreChanges") or ()), tuple(options.get("replaceOnChanges") or ())
        changes = property_changes(new["type"], old.get("inputs") or {}, new.get("inputs") or {}, ignored, replacing)
        if changes:
            retained = bool((old.get("options") or {}).get("retainOnDelete"))
            delete_first = bool((new.get("options") or {}).get("deleteBeforeReplace"))
            change = ResourceChange(urn, new["type"], new["name"], tuple(changes), retained, delete_first)
            result.changed.append(change)
            sides = api_updates.Sides(
                old.get("inputs") or {},
                new.get("inputs") or {},
                head.get("config") or {},
                delete_first,
                change.replaced,
            )
            result.api_verdicts += api_updates.verdicts_for(
                urn, new["type"], new["name"], [c.path for c in changes], sides, is_workload(new["type"])
            )
    result.changed.sort(key=lambda change: (not change.replaced, change.urn))
    result.api_verdicts.sort(key=lambda verdict: (verdict.urn, verdict.rule))
    replaced = [change.urn for change in result.replaced]
    result.dependents = replacements.dependents(replaced, result.head_resources, set(replaced))
    base_config = pack_config if base_pack_config is None else base_pack_config
    base_verdicts = {_verdict_key(v): v for v in policy_runner.evaluate(base, base_config)} if base else {}
    head_verdicts = {_verdict_key(v): v for v in policy_runner.evaluate(head, pack_config)}
    result.new_verdicts = [v for key, v in head_verdicts.items() if key not in base_verdicts]
    result.resolved_verdicts = [v for key, v in base_verdicts.items() if key not in head_verdicts]
    result.base_cost = cost.estimate(base.get("resources", [])) if base else None
    result.head_cost = cost.estimate(head.get("resources", []))
    result.base_forecast = plan_forecasts(base) if base else []
    result.head_forecast = plan_forecasts(head)
    for change in result.changed:
        if is_workload(change.type) and any(c.path == "metadata.name" for c in change.changes):
            old, new = base_resources[base_urn_of[change.urn]], head_resources[change.urn]
            result.revisions[change.urn] = revision(old, new, result.head_resources, result.head_forecast)
    return result


def refused_by_kueue(change: ResourceChange, head_inputs: Mapping[str, Any]) -> list[str]:
    """The paths of a TAS ResourceFlavor's change that Kueue's API would refuse."""
    if change.type != RESOURCE_FLAVOR_TYPE:
        return []
    topology = next((c for c in change.changes if c.path == "spec.topologyName"), None)
    spec = head_inputs.get("spec") or {}
    had_topology = topology.old is not None if topology else bool(spec.get("topologyName"))
    return [c.path for c in change.changes if _under(c.path, TAS_FLAVOR_FROZEN)] if had_topology else []
