"""What the API server refuses by size, not by shape: an object larger than etcd stores, a ConfigMap over its 1 MiB,
and more ClusterIP Services than the Service range has addresses (docs/cloud-facts.md, "API limits").

Reported with the schema problems: the API server refuses these objects at `pulumi up` as it refuses a bad field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from ipaddress import IPv4Network
from typing import Any

from components.facts import gke
from preflight.checks.kube_names import SchemaProblem
from preflight.checks.kube_schemas import describe_object

# Operators that create one ClusterIP Service per object of theirs: KubeRay's head Service per RayCluster (a RayJob
# brings its own RayCluster). Workers' headless Services take no address.
_HEAD_SERVICE_KINDS = {("ray.io/v1", "RayJob"), ("ray.io/v1", "RayCluster")}


def limit_problems(manifests: Iterable[Mapping[str, Any]], service_range: IPv4Network) -> list[SchemaProblem]:
    manifests = [manifest for manifest in manifests if isinstance(manifest, Mapping)]
    problems = [
        problem for position, manifest in enumerate(manifests) for problem in _size_problems(manifest, position)
    ]
    problems.extend(_service_range_problems(manifests, service_range))
    return problems


def _size_problems(manifest: Mapping[str, Any], position: int) -> Iterator[SchemaProblem]:
    size = len(json.dumps(manifest, separators=(",", ":")).encode())
    if size > gke.OBJECT_BYTES_LIMIT:
        yield SchemaProblem(
            describe_object(manifest, position),
            "",
            f"is {size:,} bytes, more than the {gke.OBJECT_BYTES_LIMIT:,} etcd stores in one object; the API server "
            "answers 'etcdserver: request is too large' (allowed: a smaller object; large data belongs in the bucket)",
        )
    if manifest.get("kind") == "ConfigMap" and manifest.get("apiVersion") == "v1":
        data = sum(len(str(key).encode()) + len(str(value).encode()) for key, value in _config_map_entries(manifest))
        if data > gke.CONFIG_MAP_BYTES_LIMIT:
            yield SchemaProblem(
                describe_object(manifest, position),
                "data",
                f"holds {data:,} bytes, more than a ConfigMap's {gke.CONFIG_MAP_BYTES_LIMIT:,} (allowed: at most "
                f"{gke.CONFIG_MAP_BYTES_LIMIT:,} bytes of keys and values in data and binaryData)",
            )


def _config_map_entries(manifest: Mapping[str, Any]) -> Iterator[tuple[Any, Any]]:
    for field in ("data", "binaryData"):
        entries = manifest.get(field)
        if isinstance(entries, Mapping):
            yield from entries.items()


def cluster_ip_services(manifests: Iterable[Mapping[str, Any]]) -> list[str]:
    """The stack's objects that take an address of the Service range: its own non-headless Services, and KubeRay's
    head Service per RayCluster and RayJob."""
    taken = []
    for position, manifest in enumerate(manifests):
        spec = manifest.get("spec") if isinstance(manifest.get("spec"), Mapping) else {}
        kind = (str(manifest.get("apiVersion")), str(manifest.get("kind")))
        if kind == ("v1", "Service") and spec.get("clusterIP") != "None" and spec.get("type") != "ExternalName":
            taken.append(describe_object(manifest, position))
        elif kind in _HEAD_SERVICE_KINDS:
            taken.append(f"{describe_object(manifest, position)}'s head Service")
    return taken


def service_addresses(service_range: IPv4Network) -> int:
    """Addresses Kubernetes allocates from an IPv4 Service range: all but its network and broadcast addresses."""
    return max(service_range.num_addresses - 2, 0)


def _service_range_problems(manifests: list[Mapping[str, Any]], service_range: IPv4Network) -> Iterator[SchemaProblem]:
    stack = cluster_ip_services(manifests)
    needed = 1 + gke.GKE_SYSTEM_SERVICES + len(stack)  # 1: the `kubernetes` Service of the default namespace
    available = service_addresses(service_range)
    if needed <= available:
        return
    smallest = next(prefix for prefix in range(30, 0, -1) if 2 ** (32 - prefix) - 2 >= needed)
    yield SchemaProblem(
        f"trainyard:network.serviceRange {service_range}",
        "",
        f"has {available} Service addresses, and the cluster needs {needed}: `kubernetes`, up to "
        f"{gke.GKE_SYSTEM_SERVICES} of GKE's add-ons and the stack's {len(stack)} ({', '.join(stack[:3])}"
        f"{', ...' if len(stack) > 3 else ''}); the API server answers 'range is full' (allowed: a /{smallest} or "
        "larger range)",
    )
