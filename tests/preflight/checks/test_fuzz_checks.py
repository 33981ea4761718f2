"""No traceback from any check, whatever the plan holds: the dev plan's objects and GCP resources with one to three
values replaced by odd ones (as an edited program, a new provider version or a hand-written object would give)
go through every check preflight runs on a plan. Each returns problems; none raises.

The stack-file fuzz (tests/preflight/test_fuzz_stack_files.py) mostly stops at config load; this one reaches the
checks behind it.
"""

from __future__ import annotations

import copy
from ipaddress import IPv4Network
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.facts import cost
from preflight.checks import policy_runner
from preflight.checks.admission import check_admission
from preflight.checks.api_limits import limit_problems
from preflight.checks.kube_schemas import check_manifests
from preflight.checks.placement import check_placement
from preflight.checks.provider_inputs import check_provider_inputs
from preflight.engine.plan import accepted_resources, integral_as_int, is_object
from tests.preflight.test_fuzz_stack_files import ODD_VALUES, paths

ODD_OR_QUANTITY = st.one_of(
    ODD_VALUES, st.sampled_from(["16000000K", "1.３５", "-4", "1e400", "0x10", "Infinity", "8Gi ", "None"])
)


Edit = tuple[int, tuple, Any]  # (resource index, path into its inputs, new value; DELETE removes the key)
DELETE = object()


@st.composite
def edits(draw: st.DrawFn, resources: list[dict[str, Any]]) -> list[Edit]:
    """One to three edits, drawn as small values so a failing example prints readably."""
    chosen = []
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        index = draw(st.integers(min_value=0, max_value=len(resources) - 1))
        where = paths(resources[index]["inputs"])
        if where:
            chosen.append((index, draw(st.sampled_from(where)), draw(st.one_of(ODD_OR_QUANTITY, st.just(DELETE)))))
    return chosen


def edited(resources: list[dict[str, Any]], chosen: list[Edit]) -> list[dict[str, Any]]:
    resources = copy.deepcopy(resources)
    for index, path, value in chosen:
        parent = resources[index]["inputs"]
        try:
            for key in path[:-1]:
                parent = parent[key]
            if value is DELETE and isinstance(parent, dict):
                del parent[path[-1]]
            elif value is not DELETE:
                parent[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed or replaced the path
    return resources


def every_check(plan: dict[str, Any]) -> None:
    """What preflight.verdict.check runs, in its order: controllers are played on the objects the API accepts."""
    resources = plan["resources"]
    manifests = [integral_as_int(r["inputs"]) for r in resources if is_object(r["type"], r["inputs"])]
    schemas = check_manifests(manifests, "1.35")
    limit_problems(manifests, IPv4Network("10.65.0.0/19"))
    accepted = accepted_resources(resources, schemas.refused)
    check_placement(accepted)
    check_admission(accepted, {})
    check_provider_inputs(resources)
    cost.estimate(resources)
    policy_runner.evaluate(plan, {})


def test_every_check_answers_on_a_mutated_dev_plan(dev_plan):
    plan = dev_plan.to_json()

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(chosen=edits(plan["resources"]))
    def property(chosen: list[Edit]) -> None:
        every_check({**plan, "resources": edited(plan["resources"], chosen)})

    property()
