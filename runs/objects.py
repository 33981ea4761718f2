"""Objects as the API server returns them, from a live cluster (runs/cluster.py) or a dump (`--from FILE`: what
`kubectl get jobs,rayjobs,rayclusters,workloads,provisioningrequests,pods,events -n NS -o yaml` writes, a v1
List), and the few ways `trainyard job` reads them: conditions by type (never by order), owners, timestamps."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

# (apiVersion, kind, namespaced) of everything a job's state is read from, at the versions trainyard pins:
# Kueue v0.19.2 (kueue.x-k8s.io/v1beta2), KubeRay v1.6.2 (ray.io/v1), the cluster autoscaler's ProvisioningRequest
# API (autoscaling.x-k8s.io/v1, GKE's DWS).
READ_KINDS = (
    ("batch/v1", "Job", True),
    ("ray.io/v1", "RayJob", True),
    ("ray.io/v1", "RayCluster", True),
    ("kueue.x-k8s.io/v1beta2", "Workload", True),
    ("kueue.x-k8s.io/v1beta2", "ClusterQueue", False),
    ("autoscaling.x-k8s.io/v1", "ProvisioningRequest", True),
    ("v1", "Pod", True),
    ("v1", "Event", True),
)


class DumpError(ValueError):
    """A dump that cannot be read: one line naming the file."""


def load_dump(path: Path) -> list[dict[str, Any]]:
    """The objects of a `kubectl get ... -o yaml` (or `-o json`) dump: a v1 List, one object, or a YAML stream."""
    try:
        documents = list(yaml.safe_load_all(path.read_text()))
    except OSError as error:
        raise DumpError(f"{path}: cannot be read ({error.strerror})") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise DumpError(f"{path}{f':{mark.line + 1}' if mark else ''}: is not YAML or JSON") from None
    objects: list[dict[str, Any]] = []
    for document in documents:
        if isinstance(document, dict) and isinstance(document.get("items"), list):
            objects += [item for item in document["items"] if isinstance(item, dict)]
        elif isinstance(document, dict) and "kind" in document:
            objects.append(document)
        elif document is not None:
            raise DumpError(f"{path}: holds a {type(document).__name__} (allowed: kubectl's -o yaml or -o json)")
    return objects


def kind(obj: Mapping[str, Any]) -> str:
    return str(obj.get("kind", ""))


def name(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name", ""))


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    value = meta(obj).get("labels")
    return value if isinstance(value, Mapping) else {}


def spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("spec")
    return value if isinstance(value, Mapping) else {}


def status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("status")
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class Condition:
    type: str
    status: str  # "True", "False", "Unknown"
    reason: str
    message: str
    since: datetime | None  # lastTransitionTime

    @property
    def true(self) -> bool:
        return self.status == "True"


def pod_templates(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The object's own pod templates, as written in it: a Job's; a RayJob's (or RayCluster's) head, worker groups and
    submitter."""
    body = spec(obj)
    cluster = body.get("rayClusterSpec") or (body if kind(obj) == "RayCluster" else {})
    templates = [body.get("template"), (cluster.get("headGroupSpec") or {}).get("template")]
    templates += [group.get("template") for group in cluster.get("workerGroupSpecs") or []]
    templates.append(body.get("submitterPodTemplate"))
    return [template for template in templates if isinstance(template, dict)]


def conditions(obj: Mapping[str, Any]) -> dict[str, Condition]:
    """An object's status conditions by type: which one is "latest" is never read from the list's order."""
    found = {}
    for item in status(obj).get("conditions") or []:
        if isinstance(item, Mapping) and item.get("type"):
            found[str(item["type"])] = Condition(
                str(item["type"]),
                str(item.get("status", "Unknown")),
                str(item.get("reason", "")),
                str(item.get("message", "")),
                timestamp(item.get("lastTransitionTime")),
            )
    return found


def timestamp(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def created(obj: Mapping[str, Any]) -> datetime | None:
    return timestamp(meta(obj).get("creationTimestamp"))


def owned_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    uid = meta(owner).get("uid")
    return any(
        isinstance(ref, Mapping)
        and (ref.get("uid") == uid if uid else (ref.get("kind"), ref.get("name")) == (kind(owner), name(owner)))
        for ref in meta(obj).get("ownerReferences") or []
    )


def of_kind(objects: Iterable[Mapping[str, Any]], wanted: str) -> list[Mapping[str, Any]]:
    return [obj for obj in objects if kind(obj) == wanted]


def age(since: datetime | None, now: datetime) -> str:
    """`3d4h`, `2h5m`, `40m`, `12s`: as kubectl prints ages."""
    if since is None:
        return "?"
    seconds = max(int((now - since).total_seconds()), 0)
    days, hours, minutes = seconds // 86400, seconds % 86400 // 3600, seconds % 3600 // 60
    if days:
        return f"{days}d{hours}h"
    if hours:
        return f"{hours}h{minutes}m"
    return f"{minutes}m" if minutes else f"{seconds}s"


def as_json(obj: Any) -> str:
    return json.dumps(obj, default=str)
