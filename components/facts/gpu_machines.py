"""GPU machine facts: one record per machine type (A4, A4X) with its GPUs, NICs, NVLink domain, CPU architecture,
GKE floor and capacity modes; every other layer reads the machine from here (topology.py holds the TPU
generations). No Pulumi, so the policy pack reads it too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from components.facts.capacity import GPU_CAPACITIES, Capacity
from components.facts.topology import LOCAL_SSD_GIB, TopologyError, lookup

# How a GPU machine's RDMA NICs reach pods: through VPCs on a RoCE network profile that the pool attaches as
# additional node networks (A4), or through GKE managed DRANET, which attaches them itself (A4X).
RDMA_VPC, RDMA_DRANET = "vpc", "dranet"


@dataclass(frozen=True)
class GpuMachine:
    """A GPU machine type with its accelerators and the NICs GPUDirect RDMA needs."""

    machine_type: str
    accelerator: str
    gpus_per_vm: int
    rdma_nics: int
    extra_gvnics: int
    peak_bf16_flops_per_gpu: float
    nccl_tuner_config: str | None
    local_ssds: int = 0  # local SSDs that come with the machine (docs/cloud-facts.md: local SSD)
    local_ssd_gib: int = LOCAL_SSD_GIB  # the size of each
    # Per GPU and direction: NVLink inside the VM, the GPU's own RDMA NIC between VMs (docs/cloud-facts.md).
    nvlink_bytes_per_s: float = 0.0
    network_bytes_per_s: float = 0.0
    hbm_bytes: float = 0.0  # per GPU
    cpu_arch: str = "amd64"  # the architecture of the host CPU, and so of every image its pods run
    rdma: str = RDMA_VPC
    min_gke_version: str | None = None  # the oldest GKE version that runs the machine as the stack sets it up
    capacities: tuple[Capacity, ...] = GPU_CAPACITIES  # the capacity modes GKE offers for it
    # The NVLink domain's shape in a HIGH_THROUGHPUT workload policy (A4X: 18 VMs, 72 GPUs on one NVLink fabric);
    # None: NVLink ends at the VM.
    nvlink_domain_topology: str | None = None

    @property
    def nvlink_domain_vms(self) -> int | None:
        """VMs in one NVLink domain (A4X's 1x72: 72 GPUs, 18 VMs); None where NVLink ends at the VM."""
        if self.nvlink_domain_topology is None:
            return None
        return math.prod(int(dim) for dim in self.nvlink_domain_topology.split("x")) // self.gpus_per_vm

    @property
    def dranet(self) -> bool:
        return self.rdma == RDMA_DRANET

    @property
    def gvnic_network_names(self) -> tuple[str, ...]:
        """Names of the extra gVNIC networks the stack attaches (GKE's own default interface is eth0)."""
        if self.dranet:
            return ()
        return tuple(f"gvnic-{index + 1}" for index in range(self.extra_gvnics))

    @property
    def rdma_network_names(self) -> tuple[str, ...]:
        if self.dranet:
            return ()
        return tuple(f"rdma-{index}" for index in range(self.rdma_nics))

    @property
    def additional_network_names(self) -> tuple[str, ...]:
        """Extra NICs in pod-interface order: eth1.. are the gVNICs, then the RDMA NICs (none with DRANET, which
        hands pods their NICs through resource claims)."""
        return self.gvnic_network_names + self.rdma_network_names


A4_MACHINE_TYPE = "a4-highgpu-8g"
A4X_MACHINE_TYPE = "a4x-highgpu-4g"

GPU_MACHINES: dict[str, GpuMachine] = {
    A4_MACHINE_TYPE: GpuMachine(
        machine_type=A4_MACHINE_TYPE,
        accelerator="nvidia-b200",
        gpus_per_vm=8,
        rdma_nics=8,
        extra_gvnics=1,
        peak_bf16_flops_per_gpu=2.25e15,
        nccl_tuner_config="tuner_config_a4.txtpb",
        local_ssds=32,
        nvlink_bytes_per_s=900e9,  # NVLink 5: 1.8 TB/s per GPU, both directions
        network_bytes_per_s=50e9,  # one 400 Gb/s RDMA NIC per GPU (8 x 400 Gb/s per VM)
        hbm_bytes=180e9,  # 1,440 GB of HBM3e per VM
    ),
    # docs/cloud-facts.md: A4X (GB200).
    A4X_MACHINE_TYPE: GpuMachine(
        machine_type=A4X_MACHINE_TYPE,
        accelerator="nvidia-gb200",
        gpus_per_vm=4,
        rdma_nics=4,
        extra_gvnics=1,
        peak_bf16_flops_per_gpu=2.5e15,  # 180 PFLOP/s dense BF16 per 72-GPU NVL72 rack
        nccl_tuner_config=None,  # gIB's own settings: no A4X tuner file is named in a public source read offline
        local_ssds=4,  # 4 x 3,000 GiB Titanium SSD: 12,000 GiB, as on A4
        local_ssd_gib=3000,
        nvlink_bytes_per_s=900e9,  # NVLink 5: 1.8 TB/s per GPU both directions, across the whole NVL72 domain
        network_bytes_per_s=50e9,  # one 400 Gb/s CX-7 RDMA NIC per GPU
        hbm_bytes=186e9,
        cpu_arch="arm64",  # two Grace CPUs
        rdma=RDMA_DRANET,
        min_gke_version="1.34.1-gke.1829001",  # managed DRANET
        capacities=(Capacity.RESERVATION,),
        nvlink_domain_topology="1x72",
    ),
}

# Machines GKE has and the stack does not build, with what is missing: refused by name.
_A4X_MAX_MISSING = (
    "A4X Max (GB300, bare metal, reservation only) is not built: it needs an RDMA VPC on the "
    "<zone>-vpc-roce-metal network profile with DRANET claims, the NVIDIA DRA driver 25.8 with its ASAP daemon, "
    "a GKE 1.34.3-gke.1318000 or later and driver 580.95.05 or later; A4X's setup is not interchangeable"
)
UNSUPPORTED_GPU_MACHINES: dict[str, str] = {
    "a4x-maxgpu-4g-metal": _A4X_MAX_MISSING,
    "a4x-maxgpu-4g-metal-nolssd": _A4X_MAX_MISSING,
}


def gpu_machine(machine_type: str) -> GpuMachine:
    if machine_type in UNSUPPORTED_GPU_MACHINES:
        raise TopologyError(
            f"{machine_type!r} is not supported: {UNSUPPORTED_GPU_MACHINES[machine_type]} "
            f"(allowed: {', '.join(GPU_MACHINES)})"
        )
    return lookup(GPU_MACHINES, machine_type, "GPU machine type")
