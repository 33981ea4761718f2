"""What a GKE node pool's engine-shaped inputs say: accelerator, capacity mode, size, node labels.

Rules and stack checks share this reading so "is this a DWS pool" or "how many chips per node" has one
answer. Sizes come from ``components.facts.cost.pool_size`` (the same numbers the cost estimate uses).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from components.facts import cost, gke, gpu_machines, topology
from components.facts.gke import GPU_RESOURCE, NODE_POOL_TYPE, TPU_RESOURCE
from policies.derived_once import once_per_resource, once_per_stack
from policies.props import entries, has_unknown, is_true, items, lookup, plain

# Node labels GKE sets that node_labels() models: a selector on one of these must match exactly.
MODELED_LABELS = frozenset(
    {
        gke.NODE_POOL_LABEL,
        gke.GPU_ACCELERATOR_LABEL,
        gke.TPU_ACCELERATOR_LABEL,
        gke.TPU_TOPOLOGY_LABEL,
        gke.FLEX_START_LABEL,
        gke.QUEUED_LABEL,
        gke.SPOT_LABEL,
        gke.INSTANCE_TYPE_LABEL,
        gke.METADATA_SERVER_LABEL,
    }
)
# Other labels under these prefixes are set by GKE/Kubernetes (zone, OS, arch...): not modelled, so a
# selector on them cannot rule a pool out.
PLATFORM_LABEL_PREFIXES = (
    "cloud.google.com/",
    "node.kubernetes.io/",
    "kubernetes.io/",
    "topology.kubernetes.io/",
    "iam.gke.io/",
    "beta.kubernetes.io/",
    "failure-domain.beta.kubernetes.io/",
)
# The inputs pool facts are read from; an unknown one makes the facts uncertain during preview.
FACT_INPUTS = (
    "name",
    "location",
    "nodeLocations",
    "nodeCount",
    "initialNodeCount",
    "autoscaling",
    "placementPolicy",
    "queuedProvisioning",
    "nodeConfig.machineType",
    "nodeConfig.labels",
    "nodeConfig.flexStart",
    "nodeConfig.spot",
    "nodeConfig.guestAccelerators",
)


@dataclass(frozen=True)
class PoolFacts:
    name: str
    urn: str
    machine_type: str | None
    tpu_topology: str | None
    tpu_slice: topology.TpuSlice | None
    tpu_error: str | None
    gpu_type: str | None
    gpus_per_node: int
    flex_start: bool
    queued: bool
    spot: bool
    size: cost.PoolSize
    labels: dict[str, str] = field(default_factory=dict)
    uncertain: bool = False

    @property
    def is_tpu(self) -> bool:
        return self.tpu_slice is not None or topology.tpu_generation_of_machine(self.machine_type) is not None

    @property
    def is_dws(self) -> bool:
        """Dynamic Workload Scheduler capacity: flex-start VMs, with or without queued provisioning."""
        return self.flex_start or self.queued

    @property
    def accelerator_resource(self) -> str | None:
        if self.is_tpu:
            return TPU_RESOURCE
        if self.gpus_per_node:
            return GPU_RESOURCE
        return None

    @property
    def accelerators_per_node(self) -> int:
        if self.is_tpu:
            generation = topology.tpu_generation_of_machine(self.machine_type)
            return generation.chips_per_machine_type[self.machine_type] if generation else 0  # type: ignore[index]
        return self.gpus_per_node


def _slice_of(machine_type: str | None, tpu_topology: str | None) -> tuple[topology.TpuSlice | None, str | None]:
    generation = topology.tpu_generation_of_machine(machine_type)
    if generation is None or not tpu_topology:
        return None, None
    try:
        return topology.tpu_slice(generation.name, tpu_topology, machine_type), None
    except topology.TopologyError as error:
        return None, str(error)


def _gpus(props: Any) -> tuple[str | None, int]:
    for accelerator in items(props, "nodeConfig.guestAccelerators"):
        kind, count = lookup(accelerator, "type"), lookup(accelerator, "count")
        if isinstance(kind, str) and isinstance(count, (int, float)) and not isinstance(count, bool):
            return kind, int(count)
    machine_type = lookup(props, "nodeConfig.machineType")
    if isinstance(machine_type, str) and machine_type in gpu_machines.GPU_MACHINES:
        machine = gpu_machines.GPU_MACHINES[machine_type]
        return machine.accelerator, machine.gpus_per_vm
    return None, 0


def node_labels(
    facts_name: str, props: Any, tpu_slice: topology.TpuSlice | None, gpu_type: str | None
) -> dict[str, str]:
    """The labels GKE puts on the pool's nodes (the ones workloads select on), plus the pool's own."""
    labels = {gke.NODE_POOL_LABEL: facts_name}
    machine_type = lookup(props, "nodeConfig.machineType")
    if isinstance(machine_type, str):
        labels[gke.INSTANCE_TYPE_LABEL] = machine_type
    if lookup(props, "nodeConfig.workloadMetadataConfig.mode") == "GKE_METADATA":
        labels[gke.METADATA_SERVER_LABEL] = "true"
    if tpu_slice is not None:
        labels.update(tpu_slice.node_selector)
    elif (generation := topology.tpu_generation_of_machine(lookup(props, "nodeConfig.machineType"))) is not None:
        labels[gke.TPU_ACCELERATOR_LABEL] = generation.gke_accelerator
    if gpu_type:
        labels[gke.GPU_ACCELERATOR_LABEL] = gpu_type
    if is_true(lookup(props, "nodeConfig.flexStart")):
        labels[gke.FLEX_START_LABEL] = "true"
    if is_true(lookup(props, "queuedProvisioning.enabled")):
        labels[gke.QUEUED_LABEL] = "true"
    if is_true(lookup(props, "nodeConfig.spot")):
        labels[gke.SPOT_LABEL] = "true"
    labels.update({key: str(value) for key, value in entries(props, "nodeConfig.labels").items()})
    return labels


@once_per_resource
def pool_facts(name: str, urn: str, props: Any) -> PoolFacts:
    """Facts of one node pool from its engine-shaped inputs; ``name`` is the resource's name (derived once for
    the resource policies that read them)."""
    pool_name = lookup(props, "name")
    pool_name = pool_name if isinstance(pool_name, str) else name
    machine_type = lookup(props, "nodeConfig.machineType")
    machine_type = machine_type if isinstance(machine_type, str) else None
    placement_topology = lookup(props, "placementPolicy.tpuTopology")
    tpu_topology = topology.pool_topology(
        machine_type, placement_topology if isinstance(placement_topology, str) else None
    )
    tpu_slice, tpu_error = _slice_of(machine_type, tpu_topology)
    gpu_type, gpus = _gpus(props)
    return PoolFacts(
        name=pool_name,
        urn=urn,
        machine_type=machine_type,
        tpu_topology=tpu_topology,
        tpu_slice=tpu_slice,
        tpu_error=tpu_error,
        gpu_type=gpu_type,
        gpus_per_node=gpus,
        flex_start=is_true(lookup(props, "nodeConfig.flexStart")),
        queued=is_true(lookup(props, "queuedProvisioning.enabled")),
        spot=is_true(lookup(props, "nodeConfig.spot")),
        size=cost.pool_size(plain(props)),
        labels=node_labels(pool_name, props, tpu_slice, gpu_type),
        uncertain=any(has_unknown(lookup(props, path)) for path in FACT_INPUTS),
    )


def stack_pools(resources: Any) -> list[PoolFacts]:
    """Facts of every node pool among a stack policy's resources (built once per stack evaluation)."""
    return list(_pools(resources))


@once_per_stack({NODE_POOL_TYPE})
def _pools(node_pools: list[Any]) -> tuple[PoolFacts, ...]:
    return tuple(pool_facts(r.name, r.urn, r.props) for r in node_pools)
