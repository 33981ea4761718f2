"""What one VM of a machine type holds, and what a node of it offers pods after GKE's reservations.

The vCPUs and memory of each accelerator machine come from its record (components/facts/topology.py: a TPU
generation's machines; components/facts/gpu_machines.py: a GPU machine, its shape here); general-purpose machines
from their series' sizes. Kueue quotas, preflight's placement check and the catalog read these figures.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.facts import gke, gpu_machines, topology


@dataclass(frozen=True)
class MachineShape:
    """What one VM of a machine type holds for pods: the ceiling a Kueue quota can promise."""

    machine_type: str
    vcpus: int
    memory_gib: int


# GPU machines, from Compute Engine's machine-type tables (each TPU generation's are on its record).
_ACCELERATOR_SHAPES = {
    "a4-highgpu-8g": (224, 3968),
    "a4x-highgpu-4g": (140, 884),
}


def _accelerator_shapes() -> dict[str, tuple[int, int]]:
    """vCPUs and memory of every accelerator machine: the TPU records' (read when asked, so a record added at run
    time counts) and the GPU machines'."""
    tpu_machines = {
        machine_type: (machine.vcpus, machine.memory_gib)
        for generation in topology.TPU_GENERATIONS.values()
        for machine_type, machine in generation.machines.items()
    }
    return {**tpu_machines, **_ACCELERATOR_SHAPES}


# General-purpose families: <family>-<class>-<vCPUs>, memory per vCPU by family and class.
_GIB_PER_VCPU = {
    "e2": {"standard": 4, "highmem": 8, "highcpu": 1},
    "n2": {"standard": 4, "highmem": 8, "highcpu": 1},
    "n2d": {"standard": 4, "highmem": 8, "highcpu": 1},
    "n4": {"standard": 4, "highmem": 8, "highcpu": 2},
    "c3": {"standard": 4, "highmem": 8, "highcpu": 2},
}


# The sizes (vCPUs) each predefined general-purpose type comes in: GCP's general-purpose machine family page
# (https://cloud.google.com/compute/docs/general-purpose-machines, tables per series), read 2026-11-28. A size
# between them (`e2-standard-7`) is no machine type: a formula would accept it, and the node pool create fails.
_SIZES: dict[tuple[str, str], tuple[int, ...]] = {
    ("e2", "standard"): (2, 4, 8, 16, 32),
    ("e2", "highmem"): (2, 4, 8, 16),
    ("e2", "highcpu"): (2, 4, 8, 16, 32),
    ("n2", "standard"): (2, 4, 8, 16, 32, 48, 64, 80, 96, 128),
    ("n2", "highmem"): (2, 4, 8, 16, 32, 48, 64, 80, 96, 128),
    ("n2", "highcpu"): (2, 4, 8, 16, 32, 48, 64, 80, 96),
    ("n2d", "standard"): (2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224),
    ("n2d", "highmem"): (2, 4, 8, 16, 32, 48, 64, 80, 96),
    ("n2d", "highcpu"): (2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224),
    ("n4", "standard"): (2, 4, 8, 16, 32, 48, 64, 80),
    ("n4", "highmem"): (2, 4, 8, 16, 32, 48, 64, 80),
    ("n4", "highcpu"): (2, 4, 8, 16, 32, 48, 64, 80),
    ("c3", "standard"): (4, 8, 22, 44, 88, 176),
    ("c3", "highmem"): (4, 8, 22, 44, 88, 176),
    ("c3", "highcpu"): (4, 8, 22, 44, 88, 176),
}


def machine_shape(machine_type: str) -> MachineShape:
    """vCPUs and memory of a machine type; TopologyError names what is known."""
    accelerator_shapes = _accelerator_shapes()
    if machine_type in accelerator_shapes:
        vcpus, memory_gib = accelerator_shapes[machine_type]
        return MachineShape(machine_type, vcpus, memory_gib)
    family, _, rest = machine_type.partition("-")
    machine_class, _, size = rest.partition("-")
    per_vcpu = _GIB_PER_VCPU.get(family, {}).get(machine_class)
    sizes = _SIZES.get((family, machine_class), ())
    if per_vcpu is None:
        families = sorted({f"{f}-{c}-<vCPUs>" for f, classes in _GIB_PER_VCPU.items() for c in classes})
        raise topology.TopologyError(
            f"{machine_type!r} has no known vCPU/memory shape (allowed: {', '.join([*accelerator_shapes, *families])})"
        )
    if not size.isdigit() or int(size) not in sizes:
        raise topology.TopologyError(
            f"{machine_type!r} is not a {family}-{machine_class} machine type (allowed sizes: "
            f"{', '.join(f'{family}-{machine_class}-{n}' for n in sizes)})"
        )
    return MachineShape(machine_type, int(size), int(size) * per_vcpu)


# ---- what a node offers pods --------------------------------------------------------------------------
# GKE reserves part of every node for the kubelet and the system, the same formula for every machine type:
# https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes#memory_and_cpu_reservations
# CPU: 6% of the first core, 1% of the second, 0.5% of the third and fourth, 0.25% of every core above four.
_CPU_RESERVED_PER_CORE = ((1, 0.06), (1, 0.01), (2, 0.005), (None, 0.0025))
# Memory: 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112, 2% above 128 GiB
# (255 MiB on machines under 1 GiB); the kubelet's eviction threshold takes 100 MiB more.
_MEMORY_RESERVED_PER_GIB = ((4, 0.25), (4, 0.20), (8, 0.10), (112, 0.06), (None, 0.02))
EVICTION_THRESHOLD_MIB = 100
GIB = 2**30
MIB = 2**20
DEFAULT_BOOT_DISK_GB = 100  # GKE's default node boot disk


def _tiered(amount: float, tiers: tuple[tuple[float | None, float], ...]) -> float:
    reserved, left = 0.0, amount
    for size, share in tiers:
        portion = left if size is None else min(left, size)
        reserved += portion * share
        left -= portion
    return reserved


@dataclass(frozen=True)
class Allocatable:
    """What one node of a pool offers pods: capacity minus GKE's reservations (before any DaemonSet)."""

    cpu_millicores: int
    memory_bytes: int
    ephemeral_storage_bytes: int
    accelerators: dict[str, int]  # extended resource name -> count per node

    def as_resources(self) -> dict[str, float]:
        """Resource name -> amount, in the units pods request (CPU in cores, the rest in bytes or counts)."""
        return {
            "cpu": self.cpu_millicores / 1000,
            "memory": float(self.memory_bytes),
            "ephemeral-storage": float(self.ephemeral_storage_bytes),
            **{name: float(count) for name, count in self.accelerators.items()},
        }


def allocatable_cpu_millicores(vcpus: int) -> int:
    return round(vcpus * 1000 - _tiered(vcpus, _CPU_RESERVED_PER_CORE) * 1000)


def allocatable_memory_bytes(memory_gib: float) -> int:
    reserved_gib = 255 / 1024 if memory_gib < 1 else _tiered(memory_gib, _MEMORY_RESERVED_PER_GIB)
    return int((memory_gib - reserved_gib) * GIB) - EVICTION_THRESHOLD_MIB * MIB


def allocatable_ephemeral_storage_bytes(boot_disk_gb: float) -> int:
    """Boot-disk ephemeral storage (same page): minus min(50%, 6 GiB + 35%, 100 GiB) and a 10% eviction threshold."""
    disk = boot_disk_gb * GIB
    reserved = min(0.5 * disk, 6 * GIB + 0.35 * disk, 100 * GIB)
    return int(disk - reserved - 0.1 * disk)


def allocatable_local_ssd_bytes(count: int, ssd_gib: int = topology.LOCAL_SSD_GIB) -> int:
    """Ephemeral storage on local SSDs (same page): minus 50, 75 or 100 GiB for 1, 2 or more SSDs and a 10% eviction
    threshold."""
    disk = count * ssd_gib * GIB
    reserved = {1: 50, 2: 75}.get(count, 100) * GIB
    return int(disk - reserved - 0.1 * disk)


def node_allocatable(machine_type: str, boot_disk_gb: float = DEFAULT_BOOT_DISK_GB, local_ssds: int = 0) -> Allocatable:
    """Allocatable of one node of `machine_type`: GKE's formula applied to the machine's nominal shape
    (a real node reports slightly less memory: kernel overhead). With `local_ssds`, ephemeral storage lives on
    them instead of the boot disk."""
    shape = machine_shape(machine_type)
    accelerators: dict[str, int] = {}
    ssd_gib = (
        gpu_machines.GPU_MACHINES[machine_type].local_ssd_gib
        if machine_type in gpu_machines.GPU_MACHINES
        else topology.LOCAL_SSD_GIB
    )
    if (generation := topology.tpu_generation_of_machine(machine_type)) is not None:
        accelerators[gke.TPU_RESOURCE] = generation.chips_per_machine_type[machine_type]
    elif machine_type in gpu_machines.GPU_MACHINES:
        accelerators[gke.GPU_RESOURCE] = gpu_machines.GPU_MACHINES[machine_type].gpus_per_vm
    return Allocatable(
        cpu_millicores=allocatable_cpu_millicores(shape.vcpus),
        memory_bytes=allocatable_memory_bytes(shape.memory_gib),
        ephemeral_storage_bytes=allocatable_local_ssd_bytes(local_ssds, ssd_gib)
        if local_ssds
        else allocatable_ephemeral_storage_bytes(boot_disk_gb),
        accelerators=accelerators,
    )
