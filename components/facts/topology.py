"""Accelerator facts: the single source every other module reads.

A TPU slice is described by its generation and topology (e.g. v6e 4x4); everything else (chips, VMs per
slice, machine type, GKE labels, Ray accelerator type) is derived here from one record per generation. GPU
machines (A4, A4X) have their records in gpu_machines.py. This module imports nothing from Pulumi so the policy
pack and the workloads' launchers can use it too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from components.facts import gke
from components.facts.capacity import TPU_CAPACITIES, Capacity


class TopologyError(ValueError):
    """A generation, topology or machine type that cannot form a valid slice."""


@dataclass(frozen=True)
class ZoneTable:
    """The zones GCP lists as offering an accelerator, with the page and the date they were read (components/facts/
    zones.py explains what a stack does with a zone outside it)."""

    accelerator: str
    zones: frozenset[str]
    read_on: str
    source: str


@dataclass(frozen=True)
class TpuMachine:
    """One TPU VM machine type: its chips and what it holds for pods (Compute Engine's machine table)."""

    chips: int
    vcpus: int
    memory_gib: int


class MultiHostPlacement(StrEnum):
    """How GKE places the VMs of a multi-host slice pool.

    COMPACT: a compact placement policy naming the slice's `tpuTopology` (v6e and earlier).
    WORKLOAD_POLICY: a HIGH_THROUGHPUT workload policy (a Compute Engine resource policy) whose accelerator topology
    is the slice's; GKE refuses a compact placement policy for these machines (TPU7x).
    """

    COMPACT = "compact"
    WORKLOAD_POLICY = "workload-policy"


class SliceNaming(StrEnum):
    """What the number in a slice's TPU name counts: chips (v6e-16 is 16 chips) or TensorCores (tpu7x-16 is 8
    chips of two TensorCores)."""

    CHIPS = "chips"
    TENSORCORES = "tensorcores"


@dataclass(frozen=True)
class TpuGeneration:
    """One TPU generation: every fact any layer reads about it, so adding a generation is adding one record
    (docs/development.md: adding an accelerator; tests/components/facts/test_accelerator_records.py checks each
    record is complete and that a stack plans on it)."""

    name: str  # the config's `generation`
    gke_accelerator: str  # GKE's node label cloud.google.com/gke-tpu-accelerator
    ray_accelerator_type: str  # Ray's accelerator type (ray.util.accelerators)
    machines: dict[str, TpuMachine]
    # Allowed machine types per topology; the first is the default.
    machine_types_by_topology: dict[str, tuple[str, ...]]
    hbm_bytes_per_chip: int
    # HBM a chip leaves a compiled program, as libtpu's compiler states it when a program does not fit
    # ("exceeds available HBM (31.24G)", libtpu of the pinned MaxText compiling for v6e; XLA's G is 2**30 bytes).
    usable_hbm_bytes_per_chip: float
    peak_bf16_flops_per_chip: float
    # Per chip, for the forecast (docs/cloud-facts.md: TPU generations for the forecast): HBM bandwidth, what a chip
    # sends over its ICI links at once (half the bidirectional figure) and its share of the hosts' DCN NICs.
    hbm_bytes_per_s_per_chip: float
    ici_bytes_per_s_per_chip: float
    dcn_bytes_per_s_per_chip: float
    tensorcores_per_chip: int
    devices_per_chip: int  # JAX devices per chip: what MaxText's mesh counts
    slice_naming: SliceNaming
    nics_per_vm: int  # the VM's NICs, its primary one included: a pool attaches at most nics_per_vm - 1 networks
    multi_host_placement: MultiHostPlacement
    min_gke_version: str  # the oldest GKE Standard version that runs the generation
    capacities: tuple[Capacity, ...]  # the capacity modes GKE offers its pools, in the order the reference lists them
    zones: ZoneTable
    sources: tuple[str, ...]  # the public pages the record's figures come from

    @property
    def topologies(self) -> tuple[str, ...]:
        return tuple(self.machine_types_by_topology)

    @property
    def chips_per_machine_type(self) -> dict[str, int]:
        return {machine_type: machine.chips for machine_type, machine in self.machines.items()}

    @property
    def topologies_allowed(self) -> str:
        """The topologies as a message's "allowed" names them: every one, or the first few and how many more."""
        shown = self.topologies[:_LISTED_TOPOLOGIES]
        more = len(self.topologies) - len(shown)
        return ", ".join(shown) + (f" and {more} more (`trainyard catalog` lists them)" if more else "")

    @property
    def max_attached_networks(self) -> int:
        """Networks a pool may attach beyond the VM's primary one (each takes one of its NICs)."""
        return self.nics_per_vm - 1


def cube_topologies(max_cubes: int) -> tuple[str, ...]:
    """3-D slice topologies built of 4x4x4 cubes (AxBxC, each a multiple of 4, A <= B <= C, at most `max_cubes`
    cubes), after the sub-cube shapes 2x2x1, 2x2x2, 2x2x4 and 2x4x4: how AI-Hypercomputer/xpk lists TPU7x's
    (src/xpk/core/system_characteristics.py, generate_tpu_topologies)."""
    shapes = ["2x2x1", "2x2x2", "2x2x4", "2x4x4"]
    edges = range(4, 257, 4)
    shapes += [
        f"{a}x{b}x{c}"
        for a in edges
        for b in edges
        if b >= a
        for c in edges
        if c >= b and (a // 4) * (b // 4) * (c // 4) <= max_cubes
    ]
    return tuple(shapes)


_LISTED_TOPOLOGIES = 12
LOCAL_SSD_GIB = 375  # a local SSD's size, unless a machine's record says otherwise
_V6E_4T = "ct6e-standard-4t"
_TPU7X_4T = "tpu7x-standard-4t"

TPU_GENERATIONS: dict[str, TpuGeneration] = {
    "v6e": TpuGeneration(
        name="v6e",
        gke_accelerator="tpu-v6e-slice",
        ray_accelerator_type="TPU-V6E",
        machines={
            "ct6e-standard-1t": TpuMachine(chips=1, vcpus=44, memory_gib=176),
            _V6E_4T: TpuMachine(chips=4, vcpus=180, memory_gib=720),
            "ct6e-standard-8t": TpuMachine(chips=8, vcpus=180, memory_gib=1440),
        },
        machine_types_by_topology={
            "1x1": ("ct6e-standard-1t",),
            "2x2": (_V6E_4T,),
            "2x4": ("ct6e-standard-8t", _V6E_4T),
            "4x4": (_V6E_4T,),
            "4x8": (_V6E_4T,),
            "8x8": (_V6E_4T,),
            "8x16": (_V6E_4T,),
            "16x16": (_V6E_4T,),
        },
        hbm_bytes_per_chip=32 * 10**9,
        usable_hbm_bytes_per_chip=31.24 * 2**30,
        peak_bf16_flops_per_chip=918e12,
        hbm_bytes_per_s_per_chip=1638e9,
        ici_bytes_per_s_per_chip=400e9,  # 800 GB/s both directions over 4 ports
        dcn_bytes_per_s_per_chip=12.5e9,  # 100 Gb/s per chip (25.6 Tb/s per 256-chip pod)
        tensorcores_per_chip=1,
        devices_per_chip=1,
        slice_naming=SliceNaming.CHIPS,
        nics_per_vm=4,  # 4 x 200 Gb/s per host
        multi_host_placement=MultiHostPlacement.COMPACT,
        min_gke_version="1.31.2-gke.1115000",
        capacities=TPU_CAPACITIES,
        zones=ZoneTable(
            accelerator="TPU v6e",
            zones=frozenset(
                {"us-central1-b", "us-east1-d", "us-east5-a", "us-east5-b", "europe-west4-a", "asia-northeast1-b"}
            ),
            read_on="2026-11-24",
            source="https://cloud.google.com/tpu/docs/regions-zones (asia-northeast1-b: "
            "https://cloud.google.com/kubernetes-engine/docs/concepts/dws)",
        ),
        sources=(
            "https://cloud.google.com/tpu/docs/v6e",
            "https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/gcp-gke-tpu-cluster.html (GKE version)",
        ),
    ),
    "tpu7x": TpuGeneration(
        name="tpu7x",
        gke_accelerator="tpu7x",
        ray_accelerator_type="TPU-V7X",
        machines={_TPU7X_4T: TpuMachine(chips=4, vcpus=224, memory_gib=960)},
        machine_types_by_topology=dict.fromkeys(cube_topologies(max_cubes=144), (_TPU7X_4T,)),
        hbm_bytes_per_chip=192 * 2**30,
        # libtpu's figure for TPU7x is not published: v6e's share (31.24 of 32 GiB) of 192 GiB, an assumption
        # (docs/cloud-facts.md: TPU7x) until a fit check on TPU7x states it.
        usable_hbm_bytes_per_chip=192 * 2**30 * 31.24 / 32,
        peak_bf16_flops_per_chip=2307e12,
        hbm_bytes_per_s_per_chip=7380e9,
        ici_bytes_per_s_per_chip=600e9,  # 1,200 GB/s both directions
        dcn_bytes_per_s_per_chip=12.5e9,  # 100 Gb/s per chip
        tensorcores_per_chip=2,
        devices_per_chip=2,  # two chiplets, each its own JAX device
        slice_naming=SliceNaming.TENSORCORES,
        nics_per_vm=2,
        multi_host_placement=MultiHostPlacement.WORKLOAD_POLICY,
        min_gke_version="1.34.0-gke.2201000",
        capacities=TPU_CAPACITIES,
        zones=ZoneTable(
            accelerator="TPU7x",
            zones=frozenset({"us-central1-c", "us-central1-ai1a"}),
            read_on="2026-11-28",
            source="https://docs.cloud.google.com/tpu/docs/regions-zones",
        ),
        sources=(
            "https://docs.cloud.google.com/tpu/docs/tpu7x",
            "https://docs.cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood",
            "AI-Hypercomputer/xpk src/xpk/core/system_characteristics.py (topologies, slice names)",
        ),
    ),
}


@dataclass(frozen=True)
class TpuSlice:
    """One slice of a generation and topology, on one machine type."""

    generation: TpuGeneration
    topology: str
    machine_type: str

    @property
    def chips(self) -> int:
        return math.prod(int(dim) for dim in self.topology.split("x"))

    @property
    def chips_per_vm(self) -> int:
        return self.generation.chips_per_machine_type[self.machine_type]

    @property
    def vms(self) -> int:
        """VMs in the slice: the node count of its node pool and the hosts of its Ray worker group."""
        return self.chips // self.chips_per_vm

    @property
    def multi_host(self) -> bool:
        return self.vms > 1

    @property
    def devices(self) -> int:
        """JAX devices in the slice: what MaxText's ICI mesh divides."""
        return self.chips * self.generation.devices_per_chip

    @property
    def workload_policy(self) -> bool:
        """A multi-host slice of a generation GKE places by workload policy; a single-host pool takes no policy."""
        return self.multi_host and self.generation.multi_host_placement is MultiHostPlacement.WORKLOAD_POLICY

    @property
    def pod_type(self) -> str:
        """The slice's name in TPU terms (v6e-16: chips; tpu7x-16: TensorCores), as Ray labels it."""
        count = self.chips
        if self.generation.slice_naming is SliceNaming.TENSORCORES:
            count *= self.generation.tensorcores_per_chip
        return f"{self.generation.name}-{count}"

    @property
    def node_selector(self) -> dict[str, str]:
        return {
            gke.TPU_ACCELERATOR_LABEL: self.generation.gke_accelerator,
            gke.TPU_TOPOLOGY_LABEL: self.topology,
        }


def lookup[T](table: dict[str, T], key: str, what: str) -> T:
    if key not in table:
        raise TopologyError(f"{key!r} is not a supported {what} (allowed: {', '.join(table)})")
    return table[key]


def tpu_generation(name: str) -> TpuGeneration:
    return lookup(TPU_GENERATIONS, name, "TPU generation")


def tpu_generation_of_machine(machine_type: str | None) -> TpuGeneration | None:
    """The TPU generation whose VMs have this machine type (ct6e-standard-4t -> v6e); None for other machines."""
    for generation in TPU_GENERATIONS.values():
        if machine_type in generation.chips_per_machine_type:
            return generation
    return None


def pool_topology(machine_type: str | None, placement_topology: str | None) -> str | None:
    """A TPU node pool's slice topology as GKE labels its nodes: a multi-host pool states it in its placement
    policy; a single-host pool (no placement policy) has the topology of one VM of its machine type."""
    if placement_topology:
        return placement_topology
    generation = tpu_generation_of_machine(machine_type)
    if generation is None:
        return None
    return next(
        (
            topology
            for topology, machine_types in generation.machine_types_by_topology.items()
            if machine_type in machine_types and tpu_slice(generation.name, topology, machine_type).vms == 1
        ),
        None,
    )


def tpu_slice(generation: str, topology: str, machine_type: str | None = None) -> TpuSlice:
    """The slice for a generation and topology; the machine type is derived when not given."""
    gen = tpu_generation(generation)
    allowed = gen.machine_types_by_topology.get(topology)
    if allowed is None:
        raise TopologyError(f"{topology!r} is not a {gen.name} topology (allowed: {gen.topologies_allowed})")
    if machine_type is None:
        machine_type = allowed[0]
    elif machine_type not in allowed:
        raise TopologyError(
            f"{machine_type!r} cannot form a {gen.name} {topology} slice (allowed: {', '.join(allowed)})"
        )
    return TpuSlice(generation=gen, topology=topology, machine_type=machine_type)
