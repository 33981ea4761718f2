"""The plan as a person reads it: a tree of components and resources with their key settings."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from components.facts import cost, gke, images
from components.facts.capacity import node_pool_capacity
from preflight.engine.mocks import Registration


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _pool_size(inputs: Mapping[str, Any]) -> str:
    size = cost.pool_size(inputs)
    if size.autoscaled:
        return f"nodes {size.min_nodes}..{size.max_nodes}"
    return f"nodes {size.max_nodes}"


def _node_pool(inputs: Mapping[str, Any]) -> list[str]:
    node_config = inputs.get("nodeConfig") or {}
    details = [node_config.get("machineType", "?"), _pool_size(inputs), node_pool_capacity(inputs)]
    topology = (inputs.get("placementPolicy") or {}).get("tpuTopology")
    if topology:
        details.insert(1, f"topology {topology}")
    accelerators = node_config.get("guestAccelerators") or []
    details += [f"{_number(acc.get('count'))} x {acc.get('type')}" for acc in accelerators]
    networks = (inputs.get("networkConfig") or {}).get("additionalNodeNetworkConfigs") or []
    if networks:
        details.append(f"+{len(networks)} NICs")
    return details


def _cluster(inputs: Mapping[str, Any]) -> list[str]:
    channel = (inputs.get("releaseChannel") or {}).get("channel")
    return [inputs.get("location", "?"), f"version {inputs.get('minMasterVersion')}", f"channel {channel}"]


def _image_build(inputs: Mapping[str, Any]) -> list[str]:
    """Where it builds from and the tag it pushes (the repository's line holds the registry path)."""
    dockerfile = (inputs.get("dockerfile") or {}).get("location", "?")
    pushed = [tag.rsplit("/", 1)[-1] for tag in inputs.get("tags") or []] if inputs.get("push") else []
    return [dockerfile, *(f"push {tag}" for tag in pushed)]


def _repository(inputs: Mapping[str, Any]) -> list[str]:
    path = images.repository_path(inputs.get("location", "?"), inputs.get("project", "?"), inputs.get("repositoryId"))
    return [path, inputs.get("format", "?")]


SUMMARIES: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    gke.NETWORK_TYPE: lambda i: (
        [f"MTU {_number(i.get('mtu'))}"] + (["RDMA profile"] if i.get("networkProfile") else [])
    ),
    gke.SUBNETWORK_TYPE: lambda i: [i.get("ipCidrRange", "?")],
    gke.CLUSTER_TYPE: _cluster,
    gke.NODE_POOL_TYPE: _node_pool,
    gke.BUCKET_TYPE: lambda i: [i.get("location", "?")],
    images.IMAGE_BUILD_TYPE: _image_build,
    images.REPOSITORY_TYPE: _repository,
}


def summary(resource: Registration) -> str:
    describe = SUMMARIES.get(resource.type)
    details = describe(resource.inputs) if describe else []
    # The tree names the kind only (the full type tokens are counted under "Resources by type"), to fit 100 columns.
    kind = resource.type.rsplit(":", 1)[-1]
    if resource.type.startswith("pulumi:providers:"):
        kind = f"{kind} provider"
    return "  ".join([kind, resource.name, *([f"[{', '.join(details)}]"] if details else [])])


def _tree_lines(resources: list[Registration]) -> Iterator[str]:
    children: dict[str | None, list[Registration]] = {}
    urns = {resource.urn for resource in resources}
    for resource in resources:
        parent = resource.parent if resource.parent in urns else None
        children.setdefault(parent, []).append(resource)

    def walk(parent: str | None, depth: int) -> Iterator[str]:
        for resource in children.get(parent, []):
            yield "  " * depth + ("" if resource.custom else "+ ") + summary(resource)
            yield from walk(resource.urn, depth + 1)

    yield from walk(None, 0)


def render_plan(project: str, stack: str, resources: list[Registration]) -> str:
    counts = Counter(resource.type for resource in resources if resource.custom)
    lines = [f"Plan for {project}/{stack}: {sum(counts.values())} resources", ""]
    lines += _tree_lines(resources)
    lines += ["", "Resources by type:"]
    lines += [f"  {count:4d}  {type_}" for type_, count in sorted(counts.items())]
    return "\n".join(lines)
