"""max-cost-within-spread: a stack whose maximum cost per hour is far above its minimum is an advisory naming the
pools that grow; the dev-like stack (7x) and a stack held near its minimum pass."""

from __future__ import annotations

from typing import Any

from preflight.checks.policy_runner import evaluate
from tests.helpers import policy_stacks as fx
from tests.policies.policy_edits import GPU_POOL, Stack, edit

POLICY = "max-cost-within-spread"


def spread_verdicts(stack: Stack, config: dict[str, Any] | None = None) -> list[Any]:
    return [v for v in evaluate(fx.plan(stack), config) if v.policy == POLICY]


def test_a_stack_that_grows_past_ten_times_its_minimum_is_an_advisory_naming_the_growing_pool():
    (verdict,) = spread_verdicts(edit(GPU_POOL, "autoscaling.totalMaxNodeCount", 15.0)())
    assert verdict.level == "advisory"
    assert "at maximum scale the stack costs $878.34/h, 10.1 times its $87.30/h at minimum (more than 10 times" in (
        verdict.message
    )
    assert "grown by gpu-nodepool-dws ($0.00 to $790.50/h: 0 to 15 nodes of a4-highgpu-8g)" in verdict.message


def test_a_stack_within_ten_times_its_minimum_passes():
    assert spread_verdicts(fx.good_stack()) == []  # dev-like: $87.30/h to $614.84/h
    assert spread_verdicts(edit(GPU_POOL, "autoscaling.totalMaxNodeCount", 14.0)()) == []  # $825.64/h: 9.5 times


def test_the_team_sets_the_spread_in_the_pack_config():
    grown = edit(GPU_POOL, "autoscaling.totalMaxNodeCount", 15.0)()
    assert spread_verdicts(grown, {POLICY: {"maxSpread": 20}}) == []
    assert [v.policy for v in spread_verdicts(fx.good_stack(), {POLICY: {"maxSpread": 5}})] == [POLICY]
