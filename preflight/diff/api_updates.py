"""What the APIs do with an update where it differs from "ForceNew -> replace, else update in place": the rules of
api_updates.json (each with its source), checked against the two plans of a diff.

A verdict is one of: ``refused`` (the API refuses the change: `pulumi up` fails on it, so the diff fails the
plan, naming the key and what to do instead), ``ignored`` (nothing happens), ``auto-upgrade`` (a change that
silently turns node auto-upgrade on under running work), ``replaces-dependents`` (every object the resource
serves is replaced).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from components.facts import gke
from preflight.doc_blocks import DOCS, with_block

TABLE = Path(__file__).with_name("api_updates.json")
REFUSED = "refused"
WORKLOAD = "workload"  # a rule's type: any Job, RayJob or RayCluster


@dataclass(frozen=True)
class ApiVerdict:
    rule: str
    verdict: str
    urn: str
    type: str
    name: str
    paths: tuple[str, ...]
    key: str
    says: str
    instead: str


@dataclass(frozen=True)
class Sides:
    """One changed resource, as the base and the head plan hold it."""

    old: Mapping[str, Any]
    new: Mapping[str, Any]
    head_config: Mapping[str, Any]
    delete_first: bool
    replaced: bool


@cache
def rules() -> list[Mapping[str, Any]]:
    return json.loads(TABLE.read_text())["rules"]


def _tpu_hosts(pool: Mapping[str, Any]) -> int:
    topology = str((pool.get("placementPolicy") or {}).get("tpuTopology") or "")
    if not topology:
        return 0
    return int(pool.get("nodeCount") or (pool.get("autoscaling") or {}).get("totalMaxNodeCount") or 1)


def _version(text: Any) -> tuple[int, ...]:
    numbers = []
    for part in str(text or "").split("-", 1)[0].split("."):
        if not part.isdigit():
            break
        numbers.append(int(part))
    return tuple(numbers)


CONDITIONS: dict[str, Callable[[Sides], bool]] = {
    "always": lambda sides: True,
    "multi_host_tpu": lambda sides: max(_tpu_hosts(sides.old), _tpu_hosts(sides.new)) > 1,
    # The old bucket is kept (retainOnDelete), or still exists when its replacement is created (create first).
    "name_still_taken": lambda sides: not sides.delete_first,
    "downgrade": lambda sides: (
        _version(sides.new.get("minMasterVersion")) < _version(sides.old.get("minMasterVersion"))
    ),
    "into_release_channel": lambda sides: _channel(sides.old) == "UNSPECIFIED" and _channel(sides.new) != "UNSPECIFIED",
    "updated_in_place": lambda sides: not sides.replaced,
}


def _channel(cluster: Mapping[str, Any]) -> str:
    return str((cluster.get("releaseChannel") or {}).get("channel") or "UNSPECIFIED")


def _matches(rule: Mapping[str, Any], type_: str, is_workload: bool) -> bool:
    return rule["type"] == type_ or (rule["type"] == WORKLOAD and is_workload)


def _slice_group_index(pool: Mapping[str, Any], head_config: Mapping[str, Any]) -> str:
    group = ((pool.get("nodeConfig") or {}).get("labels") or {}).get(gke.SLICE_GROUP_LABEL, "")
    groups = head_config.get("trainyard:tpuSlices") or "[]"
    groups = json.loads(groups) if isinstance(groups, str) else groups
    index = next((i for i, g in enumerate(groups) if isinstance(g, Mapping) and g.get("name") == group), None)
    return str(index) if index is not None else group or "?"


def verdicts_for(
    urn: str, type_: str, name: str, changed_paths: list[str], sides: Sides, is_workload: bool
) -> list[ApiVerdict]:
    found = []
    for rule in rules():
        if not _matches(rule, type_, is_workload):
            continue
        paths = tuple(
            path for path in changed_paths if any(path == p or path.startswith(p + ".") for p in rule["paths"])
        )
        if not paths or not CONDITIONS[rule["when"]](sides):
            continue
        key = rule["key"].replace("{group}", _slice_group_index(sides.new, sides.head_config))
        found.append(
            ApiVerdict(rule["id"], rule["verdict"], urn, type_, name, paths, key, rule["says"], rule["instead"])
        )
    return found


# ---- docs/operations.md's table, written from the rules ----------------------------------------------------

DOC = DOCS / "operations.md"
BLOCK = "api-updates"
SHOWN = {
    "refused": "refused: `pulumi up` fails; `trainyard diff` exits 1",
    "ignored": "nothing happens",
    "auto-upgrade": "node auto-upgrade turned on",
    "replaces-dependents": "every Kubernetes object replaced",
}


def doc_table() -> str:
    lines = ["| change | verdict | why | instead |", "| --- | --- | --- | --- |"]
    for rule in rules():
        paths = ", ".join(f"`{path}`" for path in rule["paths"])
        key, kind = rule["key"].replace("{group}", "i"), rule["type"].rsplit(":", 1)[-1]
        lines.append(f"| `{key}` ({kind} {paths}) | {SHOWN[rule['verdict']]} | {rule['says']} | {rule['instead']} |")
    return "\n".join(lines)


def documented(text: str) -> str:
    return with_block(text, BLOCK, doc_table())


if __name__ == "__main__":  # python -m preflight.diff.api_updates: rewrite the table in docs/operations.md
    DOC.write_text(documented(DOC.read_text()))
