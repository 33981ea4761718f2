"""The plan as a person reads it: a tree of components and resources with their key settings."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from components import cost
from preflight.mocks import Registration


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def pool_capacity(inputs: Mapping[str, Any]) -> str:
    """A node pool's capacity mode, read back from what the engine receives."""
    node_config = inputs.get("nodeConfig") or {}
    if (inputs.get("queuedProvisioning") or {}).get("enabled"):
        return "dwsQueued"
    if node_config.get("flexStart"):
        return "flexStart"
    if node_config.get("spot"):
        return "spot"
    affinity = (node_config.get("reservationAffinity") or {}).get("consumeReservationType")
    return "reservation" if affinity == "SPECIFIC_RESERVATION" else "onDemand"


def _pool_size(inputs: Mapping[str, Any]) -> str:
    size = cost.pool_size(inputs)
    if size.autoscaled:
        return f"nodes {size.min_nodes}..{size.max_nodes}"
    return f"nodes {size.max_nodes}"


def _node_pool(inputs: Mapping[str, Any]) -> list[str]:
    node_config = inputs.get("nodeConfig") or {}
    details = [node_config.get("machineType", "?"), _pool_size(inputs), pool_capacity(inputs)]
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


SUMMARIES: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    "gcp:compute/network:Network": lambda i: [f"MTU {_number(i.get('mtu'))}"]
    + (["RDMA profile"] if i.get("networkProfile") else []),
    "gcp:compute/subnetwork:Subnetwork": lambda i: [i.get("ipCidrRange", "?")],
    "gcp:container/cluster:Cluster": _cluster,
    "gcp:container/nodePool:NodePool": _node_pool,
    "gcp:storage/bucket:Bucket": lambda i: [i.get("location", "?")],
}


def summary(resource: Registration) -> str:
    describe = SUMMARIES.get(resource.type)
    details = describe(resource.inputs) if describe else []
    return "  ".join([resource.type, resource.name, *([f"[{', '.join(details)}]"] if details else [])])


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
