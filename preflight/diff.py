"""`python -m preflight diff --base REF`: what a change does to a stack, as Markdown for a PR comment.

Plans REF in a temporary ``git worktree`` and the working tree (each with ``python -m preflight --stack S
--json FILE`` run in its own checkout by the current interpreter), then compares the two plans:
resources added, removed and changed (every changed property path, old -> new), a loud warning for
changes that replace a GKE cluster or node pool, policy verdicts that appear or go away, the cost change,
and a Mermaid diagram of the stack. Both plans are judged by the working tree's pack and price book, so
differences come from the stack, not from edits to the rules. ``compare`` is pure: two plan JSONs in,
a ``PlanDiff`` out.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.facts import cost
from components.facts.gke import CLUSTER_TYPE, NODE_POOL_TYPE
from preflight import policy_runner
from preflight.plan import integral_as_int

# Which input changes make pulumi-gcp replace the resource (the bridged Terraform schema's ForceNew):
# - node pool: terraform-provider-google google/services/container/resource_container_node_pool.go,
#   schemaNodePool + ResourceContainerNodePool: name, namePrefix, cluster, location, project,
#   placementPolicy, queuedProvisioning, maxPodsPerNode, initialNodeCount, and in networkConfig
#   createPodRange, podRange, podIpv4CidrBlock, additionalNodeNetworkConfigs,
#   additionalPodNetworkConfigs, podCidrOverprovisionConfig, subnetwork.
# - nodeConfig (node_config.go, schemaNodeConfig): ForceNew except the fields nodePoolNodeConfigUpdate
#   changes in place (NODE_CONFIG_IN_PLACE). machineType/diskType/diskSizeGb became in-place in
#   terraform-provider-google v5.10.0 (GoogleCloudPlatform/magic-modules PR #9575): the nodes are
#   migrated, the pool stays. guestAccelerators (incl. gpuDriverInstallationConfig) still replace the pool
#   (hashicorp/terraform-provider-google issue #23248).
# - cluster: resource_container_cluster.go ForceNew fields below; on a cluster, nodeConfig is the default
#   pool's config and any ForceNew sub-field replaces the whole cluster.
NODE_POOL_REPLACE = (
    "name",
    "namePrefix",
    "cluster",
    "location",
    "project",
    "placementPolicy",
    "queuedProvisioning",
    "maxPodsPerNode",
    "initialNodeCount",
    "networkConfig.createPodRange",
    "networkConfig.podRange",
    "networkConfig.podIpv4CidrBlock",
    "networkConfig.additionalNodeNetworkConfigs",
    "networkConfig.additionalPodNetworkConfigs",
    "networkConfig.podCidrOverprovisionConfig",
    "networkConfig.subnetwork",
)
NODE_CONFIG_IN_PLACE = (
    "labels",
    "resourceLabels",
    "resourceManagerTags",
    "taints",
    "tags",
    "imageType",
    "workloadMetadataConfig",
    "kubeletConfig",
    "linuxNodeConfig",
    "gcfsConfig",
    "loggingVariant",
    "fastSocket",
    "containerdConfig",
    "storagePools",
    "windowsNodeConfig",
    "machineType",
    "diskType",
    "diskSizeGb",
)
NODES_MIGRATED = ("nodeConfig.machineType", "nodeConfig.diskType", "nodeConfig.diskSizeGb")
CLUSTER_REPLACE = (
    "name",
    "location",
    "project",
    "network",
    "subnetwork",
    "description",
    "initialNodeCount",
    "ipAllocationPolicy",
    "clusterIpv4Cidr",
    "networkingMode",
    "enableAutopilot",
    "enableKubernetesAlpha",
    "enableTpu",
    "defaultMaxPodsPerNode",
    "datapathProvider",
    "enableMultiNetworking",
    "masterAuth.clientCertificateConfig",
    "privateClusterConfig.masterIpv4CidrBlock",
    "privateClusterConfig.privateEndpointSubnetwork",
    "nodePools",
)


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
    head_resources: list[Mapping[str, Any]] = field(default_factory=list)

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


def property_changes(type_: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[PropertyChange]:
    """Every leaf property that differs, as dotted paths (list items as ``[i]``)."""
    before, after = dict(_leaves(old)), dict(_leaves(new))
    missing = object()
    changes = []
    for path in sorted(set(before) | set(after)):
        old_value, new_value = before.get(path, missing), after.get(path, missing)
        if old_value != new_value:
            changes.append(
                PropertyChange(
                    path,
                    None if old_value is missing else old_value,
                    None if new_value is missing else new_value,
                    forces_replacement(type_, path),
                )
            )
    return changes


def _under(path: str, prefixes: tuple[str, ...]) -> bool:
    plain = path.split("[", 1)[0]
    return any(plain == prefix or plain.startswith(prefix + ".") for prefix in prefixes)


def forces_replacement(type_: str, path: str) -> bool:
    if type_ == NODE_POOL_TYPE:
        if path.startswith("nodeConfig."):
            return not _under(path, tuple(f"nodeConfig.{name}" for name in NODE_CONFIG_IN_PLACE))
        return _under(path, NODE_POOL_REPLACE)
    if type_ == CLUSTER_TYPE:
        if path.startswith("nodeConfig."):
            return not _under(path, tuple(f"nodeConfig.{name}" for name in NODE_CONFIG_IN_PLACE[:-3]))
        return _under(path, CLUSTER_REPLACE)
    return False


def _verdict_key(verdict: policy_runner.Verdict) -> tuple[str, str, str, str]:
    return verdict.policy, verdict.level, verdict.urn, verdict.message


def compare(base: Mapping[str, Any], head: Mapping[str, Any], pack_config: Mapping[str, Any] | None = None) -> PlanDiff:
    """The difference between two plans (``Plan.to_json()`` shapes); base may be empty ``{}``."""
    base_resources = {r["urn"]: r for r in base.get("resources", [])}
    head_resources = {r["urn"]: r for r in head.get("resources", [])}
    result = PlanDiff(stack=str(head.get("stack", "?")), head_resources=list(head_resources.values()))
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
        changes = property_changes(new["type"], old.get("inputs") or {}, new.get("inputs") or {})
        if changes:
            result.changed.append(ResourceChange(urn, new["type"], new["name"], tuple(changes)))
    result.changed.sort(key=lambda change: (not change.replaced, change.urn))
    base_verdicts = {_verdict_key(v): v for v in policy_runner.evaluate(base, pack_config)} if base else {}
    head_verdicts = {_verdict_key(v): v for v in policy_runner.evaluate(head, pack_config)}
    result.new_verdicts = [v for key, v in head_verdicts.items() if key not in base_verdicts]
    result.resolved_verdicts = [v for key, v in base_verdicts.items() if key not in head_verdicts]
    result.base_cost = cost.estimate(base.get("resources", [])) if base else None
    result.head_cost = cost.estimate(head.get("resources", []))
    return result


# ---- Markdown ------------------------------------------------------------------------------------


def _show(value: Any, limit: int = 80) -> str:
    text = "—" if value is None else json.dumps(integral_as_int(value), sort_keys=True, ensure_ascii=False)
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`"


def _short_type(type_: str) -> str:
    return type_.rsplit(":", 1)[-1]


def _replacement_warning(diff: PlanDiff) -> list[str]:
    lines = []
    for change in diff.replaced:
        paths = ", ".join(f"`{c.path}`" for c in change.changes if c.replaces)
        lines.append(
            f"> **{_short_type(change.type)} `{change.name}` will be REPLACED** (deleted and recreated) "
            f"because of {paths}."
        )
    for change in diff.changed:
        migrated = [c.path for c in change.changes if c.path in NODES_MIGRATED]
        if change.type == NODE_POOL_TYPE and migrated and not change.replaced:
            lines.append(
                f"> Node pool `{change.name}`: {', '.join(migrated)} changes recreate every node "
                "(rolling migration); the pool itself stays."
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
        lines += [
            f"| `{c.path}` | {_show(c.old)} | {_show(c.new)} | {'forces replacement' if c.replaces else ''} |"
            for c in change.changes
        ]
        lines.append("")
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


def render_markdown(diff: PlanDiff, base_label: str, head_label: str = "working tree") -> str:
    summary = (
        f"{len(diff.added)} added, {len(diff.removed)} removed, {len(diff.changed)} changed "
        f"({len(diff.replaced)} replaced)" + (f", {len(diff.moved)} moved by an alias" if diff.moved else "")
    )
    lines = [
        f"## trainyard preflight diff — stack `{diff.stack}`",
        "",
        f"`{base_label}` → `{head_label}`: {summary}",
        "",
    ]
    lines += _replacement_warning(diff)
    lines += _resource_table("Added", diff.added) + _resource_table("Removed", diff.removed) + _moved_section(diff)
    lines += _changed_section(diff)
    lines += _verdict_section(diff) + _cost_section(diff)
    lines += ["<details><summary>Stack diagram</summary>", "", *mermaid(diff.head_resources, diff), "", "</details>"]
    return "\n".join(lines) + "\n"


# ---- planning two revisions ----------------------------------------------------------------------


class DiffError(RuntimeError):
    """A git revision or a plan could not be produced."""


def _git(*args: str, cwd: Path) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise DiffError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def plan_checkout(checkout: Path, stack: str, out: Path) -> dict[str, Any] | None:
    """Plan ``stack`` in a checkout with this interpreter; None (with the reason on stderr) if it cannot."""
    result = subprocess.run(
        [sys.executable, "-m", "preflight", "--stack", stack, "--json", str(out)],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if not out.exists():
        print(
            f"preflight diff: {checkout} could not be planned (exit {result.returncode}):\n"
            f"{result.stderr.strip()[-2000:]}",
            file=sys.stderr,
        )
        return None
    return json.loads(out.read_text())


def plan_revision(root: Path, ref: str, stack: str, workdir: Path) -> dict[str, Any] | None:
    """Plan ``ref`` in a temporary git worktree (removed afterwards)."""
    tree = workdir / "base"
    _git("worktree", "add", "--detach", str(tree), ref, cwd=root)
    try:
        return plan_checkout(tree, stack, workdir / "base.json")
    finally:
        _git("worktree", "remove", "--force", str(tree), cwd=root)


def default_base(root: Path) -> str:
    return _git("merge-base", "main", "HEAD", cwd=root)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m preflight diff", description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="git revision to compare with (default: the merge base with main)")
    parser.add_argument("--stack", default="dev", help="stack name (default: dev)")
    parser.add_argument("--output", type=Path, help="also write the Markdown to FILE")
    parser.add_argument(
        "--pack-config", type=Path, help="policy pack config JSON (default: policies/config.<stack>.json)"
    )
    parser.add_argument("--project-dir", type=Path, default=Path.cwd(), help="the checkout to diff (default: cwd)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """0: Markdown printed; 2: a revision could not be resolved or the working tree not planned."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    root = Path(_git("rev-parse", "--show-toplevel", cwd=args.project_dir))
    try:
        config = (
            policy_runner.load_pack_config(args.pack_config)
            if args.pack_config
            else policy_runner.pack_config_for_stack(args.stack, root)
        )
        ref = args.base or default_base(root)
        label = _git("rev-parse", "--short", ref, cwd=root)
        with tempfile.TemporaryDirectory(prefix="trainyard-diff-") as tmp:
            base = plan_revision(root, ref, args.stack, Path(tmp))
            head = plan_checkout(root, args.stack, Path(tmp) / "head.json")
    except (DiffError, policy_runner.PackConfigError) as error:
        print(f"preflight diff: {error}", file=sys.stderr)
        return 2
    if head is None:
        return 2
    markdown = render_markdown(compare(base or {}, head, config), f"{ref} ({label})" if label != ref else ref)
    if base is None:
        markdown += f"\n_The base `{ref}` could not be planned: every resource shows as added._\n"
    print(markdown)
    if args.output:
        args.output.write_text(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
