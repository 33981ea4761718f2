"""A job runs on the capacity it names (issue 36 item 1): Kueue admits each job and smoke Job on the flavor of the
slice group or GPU pool it names, never on another of one shape with other capacity, and placement checks its
pods against the flavor Kueue assigns, not against any flavor that would place them."""

from __future__ import annotations

import copy

import pytest

from components.facts.gke import NODE_POOL_LABEL, SLICE_GROUP_LABEL
from preflight.checks.admission import check_admission
from preflight.checks.placement import check_placement
from preflight.engine.plan import plan_stack
from tests.helpers.plans import PROJECT_DIR

STACKS = sorted(path.name.split(".")[1] for path in PROJECT_DIR.glob("Pulumi.*.yaml"))


@pytest.fixture(scope="module")
def stack_plans():
    return {stack: plan_stack(stack, PROJECT_DIR).to_json() for stack in STACKS}


def named_capacity(resources) -> dict[str, str]:
    """Workload -> the slice group or GPU pool its accelerator pods name in their node selector."""
    named = {}
    for resource in resources:
        inputs = resource["inputs"]
        templates = [
            (inputs.get("spec") or {}).get("template", {}).get("spec", {}),
            *(
                group["template"]["spec"]
                for group in inputs.get("spec", {}).get("rayClusterSpec", {}).get("workerGroupSpecs", [])
            ),
        ]
        for spec in templates:
            selector = (spec or {}).get("nodeSelector") or {}
            name = selector.get(SLICE_GROUP_LABEL) or (
                selector.get(NODE_POOL_LABEL) if "cloud.google.com/gke-accelerator" in selector else None
            )
            if name:
                metadata = inputs["metadata"]
                named[f"{inputs['kind']} {metadata.get('namespace', 'default')}/{metadata['name']}"] = name
    return named


@pytest.mark.parametrize("stack", STACKS)
def test_every_job_is_admitted_on_the_flavor_of_what_it_names(stack_plans, stack):
    resources = stack_plans[stack]["resources"]
    admitted, problems = check_admission(resources)
    assert problems == []
    named = named_capacity(resources)
    assert named, "every stack file runs some accelerator job"
    flavors = {a.workload: a.flavors for a in admitted}
    for workload, capacity in named.items():
        accelerated = {flavor for pod_set, flavor in flavors[workload].items() if pod_set not in ("head", "submitter")}
        assert accelerated == {capacity}, f"{workload} names {capacity}, admitted on {accelerated}"


def test_two_groups_of_one_shape_each_admit_their_own_jobs_and_smoke_checks(stack_plans):
    """prod-like: v6e-16 (reservation) and v6e-16-spot (spot), both 4x4."""
    admitted, _ = check_admission(stack_plans["prod-like"]["resources"])
    smoke = {a.workload: a.flavors["main"] for a in admitted if "smoke-jax" in a.workload}
    assert sorted(smoke.values()) == ["v6e-16", "v6e-16", "v6e-16-spot"]
    assert all(flavor in name for name, flavor in smoke.items())


def test_placement_checks_the_flavor_kueue_assigns_not_any_flavor(stack_plans):
    """The second group's smoke Job without its group's label: Kueue assigns it the first group's flavor, whose
    label no node of its own pool carries, so it never starts; placement says so."""
    resources = copy.deepcopy(stack_plans["prod-like"]["resources"])
    (job,) = [
        r for r in resources if r["inputs"].get("kind") == "Job" and "v6e-16-spot" in r["inputs"]["metadata"]["name"]
    ]
    selector = job["inputs"]["spec"]["template"]["spec"]["nodeSelector"]
    assert check_placement(resources)[1] == []
    del selector[SLICE_GROUP_LABEL]
    (problem,) = check_placement(resources)[1]
    assert "v6e-16-spot" in problem.workload


def test_a_fine_tune_named_to_the_dws_pool_is_not_admitted_on_a_spot_pool_tried_first(plan_with):
    def spot_pool_first(values):
        values["trainyard:gpuPools"].insert(0, {"name": "a4-spot", "maxNodes": 2, "capacity": "spot"})

    admitted, problems = check_admission(plan_with(spot_pool_first).to_json()["resources"])
    assert problems == []
    (fsdp,) = [a for a in admitted if "llama31-70b-fsdp" in a.workload]
    assert fsdp.flavors == {"main": "gpu-nodepool-dws"}
