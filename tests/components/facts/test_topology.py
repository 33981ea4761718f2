"""Accelerator facts: every v6e topology, the seeds' mappings, and the errors for shapes that cannot exist."""

import math
import subprocess
import sys

import pytest

from components.facts import gpu_machines, topology
from tests.helpers.plans import PROJECT_DIR
from tools.maxtext_fit.fit import HBM_BYTES_PER_CHIP

V6E_EXPECTED = {
    # topology: (chips, default machine type, VMs, multi-host)
    "1x1": (1, "ct6e-standard-1t", 1, False),
    "2x2": (4, "ct6e-standard-4t", 1, False),
    "2x4": (8, "ct6e-standard-8t", 1, False),
    "4x4": (16, "ct6e-standard-4t", 4, True),
    "4x8": (32, "ct6e-standard-4t", 8, True),
    "8x8": (64, "ct6e-standard-4t", 16, True),
    "8x16": (128, "ct6e-standard-4t", 32, True),
    "16x16": (256, "ct6e-standard-4t", 64, True),
}


def test_v6e_lists_exactly_the_expected_topologies():
    assert topology.tpu_generation("v6e").topologies == tuple(V6E_EXPECTED)


@pytest.mark.parametrize("shape", V6E_EXPECTED)
def test_every_v6e_topology(shape):
    chips, machine_type, vms, multi_host = V6E_EXPECTED[shape]
    tpu = topology.tpu_slice("v6e", shape)
    assert (tpu.chips, tpu.machine_type, tpu.vms, tpu.multi_host) == (chips, machine_type, vms, multi_host)
    assert tpu.chips_per_vm * tpu.vms == tpu.chips == math.prod(map(int, shape.split("x")))
    assert tpu.generation.gke_accelerator == "tpu-v6e-slice"
    assert tpu.pod_type == f"v6e-{chips}"
    assert tpu.node_selector == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
        "cloud.google.com/gke-tpu-topology": shape,
    }


@pytest.mark.parametrize(
    ("shape", "machine_type", "vms", "chips_per_vm"),
    [
        ("4x4", "ct6e-standard-4t", 4, 4),  # the multislice seed: 16 chips on 4 VMs
        ("2x4", "ct6e-standard-4t", 2, 4),  # the first-JAX-job seed, multi-VM
        ("2x4", "ct6e-standard-8t", 1, 8),  # ... and its single-VM bonus
        ("2x2", "ct6e-standard-4t", 1, 4),
        ("1x1", "ct6e-standard-1t", 1, 1),
    ],
)
def test_seed_tables(shape, machine_type, vms, chips_per_vm):
    tpu = topology.tpu_slice("v6e", shape, machine_type)
    assert (tpu.vms, tpu.chips_per_vm) == (vms, chips_per_vm)
    assert tpu.multi_host == (vms > 1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("v6e", "4x3"), "'4x3' is not a v6e topology (allowed: 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16)"),
        (("v9z", "4x4"), "'v9z' is not a supported TPU generation (allowed: v6e, tpu7x)"),
        (
            ("v6e", "4x4", "ct6e-standard-8t"),
            "'ct6e-standard-8t' cannot form a v6e 4x4 slice (allowed: ct6e-standard-4t)",
        ),
        (
            ("v6e", "1x1", "ct6e-standard-4t"),
            "'ct6e-standard-4t' cannot form a v6e 1x1 slice (allowed: ct6e-standard-1t)",
        ),
    ],
)
def test_impossible_slices_are_refused(args, message):
    with pytest.raises(topology.TopologyError) as error:
        topology.tpu_slice(*args)
    assert str(error.value) == message


def test_a4_shape():
    a4 = gpu_machines.gpu_machine("a4-highgpu-8g")
    assert (a4.accelerator, a4.gpus_per_vm, a4.rdma_nics, a4.extra_gvnics) == ("nvidia-b200", 8, 8, 1)
    assert a4.additional_network_names == ("gvnic-1", *(f"rdma-{i}" for i in range(8)))
    with pytest.raises(topology.TopologyError, match="'a3-megagpu-8g' is not a supported GPU machine type"):
        gpu_machines.gpu_machine("a3-megagpu-8g")


def test_topology_imports_without_pulumi():
    """The policy pack and the trainers' launchers import it where Pulumi is not installed."""
    code = (
        "import sys; sys.modules['pulumi'] = None; import components.facts.topology as t; "
        "print(t.tpu_slice('v6e', '4x4').vms)"
    )
    result = subprocess.run([sys.executable, "-c", code], check=False, cwd=PROJECT_DIR, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "4"


@pytest.mark.parametrize(
    ("machine_type", "placement", "expected"),
    [
        ("ct6e-standard-1t", None, "1x1"),
        ("ct6e-standard-4t", None, "2x2"),
        ("ct6e-standard-8t", None, "2x4"),
        ("ct6e-standard-4t", "4x4", "4x4"),
        ("e2-standard-8", None, None),
    ],
)
def test_a_pools_topology_is_its_placement_or_one_vm_of_its_machine(machine_type, placement, expected):
    assert topology.pool_topology(machine_type, placement) == expected


def test_local_ssds_hold_ephemeral_storage_with_gkes_reservation():
    from components.facts.node_shapes import GIB, allocatable_local_ssd_bytes, node_allocatable

    # 32 x 375 GiB = 12,000 GiB, minus 100 GiB for 3+ SSDs and the 10% eviction threshold.
    assert allocatable_local_ssd_bytes(32) == 10_700 * GIB
    assert allocatable_local_ssd_bytes(1) == int(375 * GIB - 50 * GIB - 37.5 * GIB)
    assert node_allocatable("a4-highgpu-8g", local_ssds=32).ephemeral_storage_bytes == 10_700 * GIB
    assert node_allocatable("a4-highgpu-8g").ephemeral_storage_bytes < 100 * GIB  # the 100 GB boot disk


def test_the_fit_checks_own_hbm_table_agrees_with_the_topology_facts():
    """The fit check runs in the MaxText image, which has no components/, so it keeps its own HBM table: what a
    program may use where libtpu's figure is known (v6e: 31.24 GiB, not the published "32 GB", 29.8 GiB), else the
    published HBM."""
    for generation in topology.TPU_GENERATIONS.values():
        usable = generation.usable_hbm_bytes_per_chip or generation.hbm_bytes_per_chip
        per_device = usable / generation.devices_per_chip  # a compiled program runs on one device
        assert HBM_BYTES_PER_CHIP[generation.ray_accelerator_type] == pytest.approx(per_device), generation.name
    assert HBM_BYTES_PER_CHIP["TPU-V6E"] > 30 * 2**30
