"""The whole preflight (plan, schemas, policies, cost) passes for every accelerator shape and capacity mode.

Each case is the dev stack with its slices or GPU pools swapped for one shape and capacity, the smoke jobs
switched on (they adapt to any shape) and the seed's jobs off (they are sized for 2 x v6e-16).
"""

from __future__ import annotations

from typing import Any, get_args

import pytest

from components.config.models import GpuCapacity, TpuCapacity
from components.facts import gke, topology
from components.facts.capacity import Capacity
from preflight.verdict import check

V6E = topology.tpu_generation("v6e")
SHAPES = [
    (shape, machine_type)
    for shape, machine_types in V6E.machine_types_by_topology.items()
    for machine_type in machine_types
]


def capacity_fields(capacity: str) -> dict[str, Any]:
    return {"capacity": capacity, **({"reservation": "my-reservation"} if capacity == Capacity.RESERVATION else {})}


def seed_jobs_off_smoke_on(values: dict[str, Any]) -> None:
    jobs = values["trainyard:jobs"]
    for job in [*jobs["maxtext"], *jobs["fsdp"]]:
        job["enabled"] = False
    jobs["smoke"]["enabled"] = True
    jobs["smoke"]["ncclNodes"] = 2
    values["trainyard:network"]["podRange"] = "10.128.0.0/16"  # room for two 16x16 slices' 128 nodes


# Two 16x16 slices cost ~$1,400/h on demand: over the pack's default hourly budget (mandatory), which is the point
# of that budget and not of this test, so the fleet states its scale as a team would (docs/policies.md).
FLEET_BUDGET = {"cost-within-budget": {"maxUsdPerHour": 5000}}


def assert_preflight_passes(plan) -> None:
    verdict = check(plan, FLEET_BUDGET)
    assert not verdict.failed, (
        [str(problem) for problem in verdict.schemas.problems]
        + [str(problem) for problem in verdict.placement]
        + [f"{v.policy}: {v.message}" for v in verdict.policies if v.level == "mandatory"]
    )


@pytest.mark.parametrize("capacity", get_args(TpuCapacity))
@pytest.mark.parametrize(("shape", "machine_type"), SHAPES)
def test_every_tpu_shape_and_capacity_passes_preflight(plan_with, shape, machine_type, capacity):
    count = 2 if topology.tpu_slice("v6e", shape, machine_type).multi_host else 1  # GKE: multislice is multi-host

    def edit(values: dict[str, Any]) -> None:
        values["trainyard:tpuSlices"] = [
            {"name": "tpu", "topology": shape, "machineType": machine_type, "count": count, **capacity_fields(capacity)}
        ]
        seed_jobs_off_smoke_on(values)

    assert_preflight_passes(plan_with(edit))


@pytest.mark.parametrize("capacity", get_args(GpuCapacity))
def test_every_gpu_capacity_passes_preflight(plan_with, capacity):
    def edit(values: dict[str, Any]) -> None:
        values["trainyard:gpuPools"] = [{"name": "a4", "maxNodes": 4, **capacity_fields(capacity)}]
        seed_jobs_off_smoke_on(values)

    assert_preflight_passes(plan_with(edit))


def test_groups_of_one_shape_on_different_capacity_each_get_a_flavor_of_their_own_pools(plan_with):
    def edit(values: dict[str, Any]) -> None:
        values["trainyard:tpuSlices"] = [
            {"name": name, "topology": "4x4", "count": count, **capacity_fields(capacity)}
            for name, count, capacity in (("od", 2, "onDemand"), ("sp", 1, "spot"), ("rs", 1, "reservation"))
        ]
        values["trainyard:gpuPools"] = [
            {"name": name, "maxNodes": 2, **capacity_fields(capacity)}
            for name, capacity in (("a4-dws", "dwsQueued"), ("a4-od", "onDemand"))
        ]
        seed_jobs_off_smoke_on(values)

    plan = plan_with(edit)
    assert_preflight_passes(plan)
    pool_labels = {
        r.name: {**r.inputs["nodeConfig"].get("labels", {}), gke.NODE_POOL_LABEL: r.name}
        for r in plan.of_type(gke.NODE_POOL_TYPE)
    }
    selected = {}
    for flavor in (m for m in plan.manifests if m["kind"] == "ResourceFlavor"):
        wanted = {
            k: v
            for k, v in flavor["spec"]["nodeLabels"].items()
            if k.startswith("trainyard/") or k == gke.NODE_POOL_LABEL
        }
        selected[flavor["metadata"]["name"]] = sorted(
            name for name, labels in pool_labels.items() if wanted.items() <= labels.items()
        )
    assert selected == {
        "od": ["od-0", "od-1"],
        "sp": ["sp-0"],
        "rs": ["rs-0"],
        "a4-dws": ["a4-dws"],
        "a4-od": ["a4-od"],
        "system": ["system"],
    }
