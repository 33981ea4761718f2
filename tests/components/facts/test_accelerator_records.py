"""Every TPU generation is one complete record that the whole stack derives from (issue: every accelerator one
checked path): a record missing a fact any layer reads fails here, every record plans a multislice stack with a
MaxText job admitted, and a generation added in a test alone (a fake one) plans too."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from components.config.load import ConfigError, load_stack_config
from components.facts import cost, gke, node_shapes, topology
from components.facts.capacity import TPU_CAPACITIES
from tests.helpers.plans import PROJECT_DIR, as_engine_config, dev_config_values

GENERATIONS = list(topology.TPU_GENERATIONS.values())


@pytest.mark.parametrize("generation", GENERATIONS, ids=lambda g: g.name)
def test_each_record_states_every_fact(generation: topology.TpuGeneration):
    empty = [f.name for f in dataclasses.fields(generation) if getattr(generation, f.name) in (None, "", 0, (), {})]
    assert empty == []
    assert set(generation.capacities) <= set(TPU_CAPACITIES)
    assert gke.gke_version_key(generation.min_gke_version)[:2] >= (1, 30)
    assert generation.zones.zones and generation.zones.source.startswith("https://")
    for topology_name, machine_types in generation.machine_types_by_topology.items():
        for machine_type in machine_types:
            tpu = topology.tpu_slice(generation.name, topology_name, machine_type)
            assert tpu.chips % tpu.chips_per_vm == 0, topology_name
            assert node_shapes.node_allocatable(machine_type).accelerators == {gke.TPU_RESOURCE: tpu.chips_per_vm}
    assert generation.usable_hbm_bytes_per_chip < generation.hbm_bytes_per_chip * 1.1


@pytest.mark.parametrize("generation", GENERATIONS, ids=lambda g: g.name)
def test_each_record_is_priced_in_a_region_of_its_zones(generation: topology.TpuGeneration):
    book = cost.load_prices()
    regions = {cost.region_of(zone) for zone in generation.zones.zones}
    machine_type = next(iter(generation.machines))
    priced = [region for region in regions if _priced(book, machine_type, region)]
    assert priced, f"{generation.name}: no price in {sorted(regions)}"


def _priced(book: cost.PriceBook, machine_type: str, region: str) -> bool:
    try:
        book.node_hour(machine_type, region, "on-demand")
    except cost.PriceError:
        return False
    return True


def test_slice_names_count_chips_or_tensorcores_as_each_generation_does():
    """v6e names a slice by chips (4x4 is v6e-16); TPU7x by TensorCores (2x2x1, one 4-chip VM, is tpu7x-8: xpk's
    goldens name it so)."""
    assert topology.tpu_slice("v6e", "4x4").pod_type == "v6e-16"
    assert topology.tpu_slice("tpu7x", "2x2x1").pod_type == "tpu7x-8"
    assert topology.tpu_slice("tpu7x", "4x4x4").pod_type == "tpu7x-128"
    assert topology.tpu_slice("tpu7x", "4x4x4").devices == 128  # two JAX devices per chip


def test_tpu7x_topologies_are_xpks_cubes():
    tpu7x = topology.tpu_generation("tpu7x")
    assert tpu7x.topologies[:5] == ("2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4")
    assert "8x8x8" in tpu7x.topologies and "4x4x6" not in tpu7x.topologies
    assert max(topology.tpu_slice("tpu7x", t).chips for t in tpu7x.topologies) <= 144 * 64
    assert [topology.tpu_slice("tpu7x", t).vms for t in ("2x2x1", "2x2x2", "4x4x4")] == [1, 2, 16]


def plan_one_group(plan_with, generation: topology.TpuGeneration):
    """The dev stack with its slices swapped for two slices of the generation's smallest multi-host topology, its
    jobs off but one MaxText job on those slices, in a zone that offers the generation."""
    shape = next(t for t in generation.topologies if topology.tpu_slice(generation.name, t).multi_host)
    tpu = topology.tpu_slice(generation.name, shape)
    zone = min(generation.zones.zones)

    def edit(values: dict[str, Any]) -> None:
        values["gcp:region"], values["trainyard:zone"] = cost.region_of(zone), zone
        values["trainyard:network"]["dcnRanges"] = ["10.50.0.0/16"]
        values["trainyard:tpuSlices"] = [
            {"name": "slices", "generation": generation.name, "topology": shape, "count": 2, "capacity": "spot"}
        ]
        values["trainyard:gpuPools"] = []
        jobs = values["trainyard:jobs"]
        jobs["fsdp"] = []
        jobs["maxtext"] = [{**jobs["maxtext"][0], "slices": "slices", "ici": {"tensor": tpu.chips_per_vm}}]

    return plan_with(edit)


@pytest.mark.parametrize("generation", GENERATIONS, ids=lambda g: g.name)
def test_every_record_plans_a_multislice_stack_with_its_job_admitted(plan_with, generation):
    from preflight.verdict import check

    plan = plan_one_group(plan_with, generation)
    verdict = check(plan, {})
    assert not verdict.failed, [str(p) for p in verdict.schemas.problems] + [
        f"{v.policy}: {v.message}" for v in verdict.policies if v.level == "mandatory"
    ]
    rayjob = next(m for m in plan.manifests if m["kind"] == "RayJob")
    worker = rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    tpu = topology.tpu_slice(generation.name, worker["template"]["spec"]["nodeSelector"][gke.TPU_TOPOLOGY_LABEL])
    assert worker["numOfHosts"] == tpu.vms
    assert worker["template"]["spec"]["nodeSelector"][gke.TPU_ACCELERATOR_LABEL] == generation.gke_accelerator
    entrypoint = rayjob["spec"]["entrypoint"]
    assert f"--accelerator-type {generation.ray_accelerator_type}" in entrypoint
    assert (f"--devices-per-chip {generation.devices_per_chip}" in entrypoint) == (generation.devices_per_chip != 1)


def test_a_tpu7x_multi_host_pool_is_placed_by_a_workload_policy_kept_as_gke_keeps_it(plan_with):
    plan = plan_one_group(plan_with, topology.tpu_generation("tpu7x"))
    (policy,) = [r for r in plan.resources if r.type == "gcp:compute/resourcePolicy:ResourcePolicy"]
    assert policy.inputs["workloadPolicy"] == {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "2x2x2"}
    pools = [r for r in plan.of_type(gke.NODE_POOL_TYPE) if r.name.startswith("slices-")]
    assert len(pools) == 2
    for pool in pools:
        assert pool.inputs["placementPolicy"]["policyName"] == policy.inputs["name"]
        assert pool.inputs["placementPolicy"]["tpuTopology"] == "2x2x2"
        assert "placementPolicy.type" in pool.ignore_changes  # GKE stores the policy without a type


def test_v6e_pools_keep_their_compact_placement_and_no_workload_policy(dev_plan):
    assert not [r for r in dev_plan.resources if r.type == "gcp:compute/resourcePolicy:ResourcePolicy"]
    pools = [r for r in dev_plan.of_type(gke.NODE_POOL_TYPE) if "tpuTopology" in r.inputs.get("placementPolicy", {})]
    assert pools and all(r.inputs["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x4"} for r in pools)


def refused(edit) -> list[str]:
    values = dev_config_values()
    edit(values)
    with pytest.raises(ConfigError) as error:
        load_stack_config(as_engine_config(values), "dev")
    return str(error.value).splitlines()


def tpu7x_group(values: dict[str, Any], **fields: Any) -> None:
    values["gcp:region"], values["trainyard:zone"] = "us-central1", "us-central1-c"
    values["trainyard:tpuSlices"] = [{"name": "ironwood", "generation": "tpu7x", "topology": "2x2x2", **fields}]
    values["trainyard:jobs"]["maxtext"] = []


def test_a_cluster_older_than_the_generation_is_refused_naming_the_version_key():
    def edit(values):
        tpu7x_group(values)
        values["trainyard:cluster"]["version"] = "1.34.0-gke.1000000"

    assert refused(edit) == [
        (
            'trainyard:cluster.version: "1.34.0-gke.1000000" is older than tpu7x needs (trainyard:tpuSlices[0]): GKE '
            "runs tpu7x from 1.34.0-gke.2201000 (allowed: 1.34.0-gke.2201000 or later, or a later minor)"
        )
    ]


def test_more_dcn_networks_than_a_tpu7x_vm_has_nics_are_refused():
    lines = refused(lambda values: tpu7x_group(values, count=2))  # the default two DCN ranges
    assert lines == [
        (
            'trainyard:network.dcnRanges: ["10.50.0.0/16", "10.60.0.0/16"] has 2 ranges, one network each, which '
            "every TPU pool of a multislice stack attaches, but a tpu7x VM (trainyard:tpuSlices[0]) has 2 NICs, its "
            "primary one included (allowed: at most 1 ranges)"
        )
    ]


def test_a_topology_the_generation_lacks_is_refused_with_a_short_allowed_list():
    (line,) = refused(lambda values: tpu7x_group(values, topology="4x4"))
    assert line.startswith('trainyard:tpuSlices[0].topology: "4x4" is not a tpu7x topology (allowed: 2x2x1, 2x2x2')
    assert line.endswith("more (`trainyard catalog` lists them))")
    assert len(line) < 300


def test_a_zone_without_the_generation_is_refused():
    def edit(values):
        tpu7x_group(values)
        values["gcp:region"], values["trainyard:zone"] = "us-east5", "us-east5-b"

    (line,) = refused(edit)
    assert line.startswith('trainyard:zone: "us-east5-b"') and "us-central1-c" in line


def test_a_single_host_tpu7x_pool_takes_no_placement_policy(plan_with):
    def edit(values):
        tpu7x_group(values, topology="2x2x1")
        values["trainyard:gpuPools"], values["trainyard:jobs"]["fsdp"] = [], []

    plan = plan_with(edit)
    (pool,) = [r for r in plan.of_type(gke.NODE_POOL_TYPE) if r.name == "ironwood-0"]
    assert "placementPolicy" not in pool.inputs
    assert not [r for r in plan.resources if r.type == "gcp:compute/resourcePolicy:ResourcePolicy"]


FAKE_GENERATION = textwrap.dedent(
    """
    import dataclasses, json, sys
    # Everything imported first: a table any module copied from the records at import would miss the new one.
    import components.stack, components.config.load, components.facts.zones, components.facts.maxtext_memory
    import policies.rules, preflight.forecast.report, cli.catalog
    from components.facts import topology
    from components.facts.capacity import Capacity

    v6e = topology.TPU_GENERATIONS["v6e"]
    topology.TPU_GENERATIONS["v9z"] = dataclasses.replace(
        v6e,
        name="v9z",
        gke_accelerator="tpu-v9z-slice",
        ray_accelerator_type="TPU-V9Z",
        machines={"ct9z-standard-4t": topology.TpuMachine(chips=4, vcpus=200, memory_gib=800)},
        machine_types_by_topology={"2x2": ("ct9z-standard-4t",), "4x4": ("ct9z-standard-4t",)},
        capacities=(Capacity.ON_DEMAND, Capacity.SPOT),
        zones=dataclasses.replace(v6e.zones, accelerator="TPU v9z", zones=frozenset({"us-east5-b"})),
    )
    from preflight.engine.plan import plan_config
    from preflight.engine.stack_files import read_stack_files
    from preflight.verdict import check
    from tests.helpers.plans import PROJECT_DIR, as_engine_config, dev_config_values

    values = dev_config_values()
    values["trainyard:tpuSlices"] = [{"name": "fake", "generation": "v9z", "topology": "4x4", "count": 2}]
    values["trainyard:jobs"]["maxtext"] = [{**values["trainyard:jobs"]["maxtext"][0], "slices": "fake"}]
    files = read_stack_files(PROJECT_DIR, "dev")
    plan = plan_config(files.project, "dev", files.main, as_engine_config(values))
    verdict = check(plan, {})
    pools = [r.inputs for r in plan.resources if r.type == "gcp:container/nodePool:NodePool" and r.name == "fake-0"]
    zone_tables = [table.accelerator for table in components.facts.zones.tables()]
    json.dump(
        {"failed": verdict.failed, "pool": pools[0], "manifests": plan.manifests, "zoneTables": zone_tables},
        sys.stdout,
    )
    """
)


def test_a_generation_added_as_one_record_plans_with_no_other_change():
    """A third generation needs its record alone: config, pools, Kueue, the RayJob and the pack take it from there."""
    run = subprocess.run(
        [sys.executable, "-c", FAKE_GENERATION],
        check=False,
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout)
    assert result["failed"] is False
    assert result["pool"]["nodeConfig"]["machineType"] == "ct9z-standard-4t"
    assert result["pool"]["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x4"}
    assert "TPU v9z" in result["zoneTables"]
    flavors = [m for m in result["manifests"] if m["kind"] == "ResourceFlavor" and m["metadata"]["name"] == "fake"]
    assert flavors[0]["spec"]["nodeLabels"][gke.TPU_ACCELERATOR_LABEL] == "tpu-v9z-slice"
