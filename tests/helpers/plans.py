"""Plans of the dev stack and the small readers tests use on them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from components.facts.gke import WORKLOAD_LABEL
from preflight.engine.plan import Plan

PROJECT_DIR = Path(__file__).resolve().parents[2]


def dev_config_values() -> dict[str, Any]:
    """The dev stack's config as YAML values (objects, not JSON text)."""
    return yaml.safe_load((PROJECT_DIR / "Pulumi.dev.yaml").read_text())["config"]


def as_engine_config(values: dict[str, Any]) -> dict[str, str]:
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in values.items()}


def one(plan: Plan, type_: str, name: str) -> dict[str, Any]:
    """The engine inputs of the one resource of `type_` named `name`."""
    matches = [r.inputs for r in plan.resources if r.type == type_ and r.name == name]
    assert len(matches) == 1, f"{type_} {name}: {len(matches)} found"
    return matches[0]


def manifest(plan: Plan, kind: str, name: str) -> dict[str, Any]:
    """The object of `kind` named `name`, or the revision of the workload `name` (Jobs and RayJobs are named
    `<workload>-<revision>` and labelled with the workload)."""
    found = [
        m
        for m in plan.manifests
        if m["kind"] == kind
        and (m["metadata"]["name"] == name or (m["metadata"].get("labels") or {}).get(WORKLOAD_LABEL) == name)
    ]
    assert len(found) == 1, f"{kind} {name}: {len(found)} found"
    return found[0]


def quotas(cluster_queue: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (group,) = cluster_queue["spec"]["resourceGroups"]
    return {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]}


def everything_on(values: dict[str, Any]) -> None:
    """Every optional workload switched on: the standalone RayCluster, smoke checks, the 70B MaxText job."""
    values["trainyard:jobs"]["ray"]["enabled"] = True
    values["trainyard:jobs"]["smoke"]["enabled"] = True
    values["trainyard:jobs"]["maxtext"][1]["enabled"] = True
