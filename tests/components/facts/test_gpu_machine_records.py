"""Every GPU machine record has what each layer reads from it: a completeness check, and A4X's own facts."""

from __future__ import annotations

import pytest

from components.facts import cost, gpu_machines, gpu_software, node_shapes
from components.facts.capacity import Capacity
from components.facts.host_workloads import NCCL_INSTALLERS
from preflight.forecast.calibration import gpu_calibration


@pytest.mark.parametrize("machine", gpu_machines.GPU_MACHINES.values(), ids=lambda machine: machine.machine_type)
def test_every_gpu_machine_has_what_every_layer_reads(machine):
    shape = node_shapes.machine_shape(machine.machine_type)  # Kueue quotas, placement
    assert shape.vcpus > 0 and shape.memory_gib > 0
    assert machine.machine_type in cost.load_prices().machines  # cost
    assert gpu_calibration(machine.accelerator).efficiency > 0  # forecast
    assert machine.cpu_arch in gpu_software.GIB_BY_ARCH and machine.cpu_arch in NCCL_INSTALLERS  # the gIB plugin
    assert machine.capacities and set(machine.capacities) <= set(Capacity)
    assert machine.peak_bf16_flops_per_gpu > 0 and machine.hbm_bytes > 0 and machine.network_bytes_per_s > 0
    assert machine.dranet or len(machine.additional_network_names) == machine.extra_gvnics + machine.rdma_nics


def test_a4x_is_gb200_on_arm_with_dranet_and_one_nvl72_domain():
    a4x = gpu_machines.gpu_machine("a4x-highgpu-4g")
    assert (a4x.accelerator, a4x.gpus_per_vm, a4x.cpu_arch, a4x.rdma) == ("nvidia-gb200", 4, "arm64", "dranet")
    assert a4x.additional_network_names == ()  # DRANET attaches the NICs; the stack names none
    assert a4x.capacities == (Capacity.RESERVATION,) and a4x.nvlink_domain_topology == "1x72"
    assert (
        node_shapes.machine_shape("a4x-highgpu-4g").vcpus,
        node_shapes.machine_shape("a4x-highgpu-4g").memory_gib,
    ) == (
        140,
        884,
    )
    # 4 Titanium SSD partitions of 3,000 GiB: as much local ephemeral storage as A4's 32 x 375 GiB.
    a4 = gpu_machines.gpu_machine("a4-highgpu-8g")
    a4x_disk = node_shapes.node_allocatable("a4x-highgpu-4g", local_ssds=4).ephemeral_storage_bytes
    assert a4x_disk == node_shapes.node_allocatable("a4-highgpu-8g", local_ssds=a4.local_ssds).ephemeral_storage_bytes


def test_a4_keeps_its_defaults():
    a4 = gpu_machines.gpu_machine("a4-highgpu-8g")
    assert (a4.cpu_arch, a4.rdma, a4.min_gke_version, a4.nvlink_domain_topology) == ("amd64", "vpc", None, None)
    assert a4.capacities == (
        Capacity.DWS_QUEUED,
        Capacity.FLEX_START,
        Capacity.SPOT,
        Capacity.ON_DEMAND,
        Capacity.RESERVATION,
    )
