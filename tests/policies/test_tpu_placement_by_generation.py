"""The pack's `multi-host-tpu-placement` reads how each TPU generation is placed from its record: a multi-host TPU7x
pool names a workload policy, a single-host pool carries no placement policy, and v6e keeps its compact policy."""

from __future__ import annotations

from typing import Any

from preflight.checks.policy_runner import evaluate
from tests.helpers import policy_stacks as fx

POLICY = "multi-host-tpu-placement"


def tpu7x_pool(name: str, placement: dict[str, Any] | None, vms: float) -> dict[str, Any]:
    pool = fx.changed(fx.tpu_slice_pool(name, vms=vms), "nodeConfig.machineType", "tpu7x-standard-4t")
    return fx.changed(pool, "placementPolicy", fx.DELETE if placement is None else placement)


def messages(*pools: dict[str, Any]) -> list[str]:
    return [v.message for v in evaluate(fx.plan(fx.good_stack() + list(pools))) if v.policy == POLICY]


def test_a_multi_host_tpu7x_pool_without_a_workload_policy_is_refused():
    compact_only = tpu7x_pool("ironwood-0", {"type": "COMPACT", "tpuTopology": "2x2x4"}, vms=4.0)
    assert messages(compact_only) == [
        (
            "pool 'ironwood-0': a multi-host tpu7x-32 pool needs a HIGH_THROUGHPUT workload policy in "
            "placementPolicy.policyName; GKE refuses a compact placement policy for tpu7x-standard-4t "
            '("Use workload policy instead").'
        )
    ]


def test_a_multi_host_tpu7x_pool_naming_its_workload_policy_passes():
    placed = {"type": "COMPACT", "tpuTopology": "2x2x4", "policyName": "trainyard-dev-ironwood-2x2x4"}
    assert messages(tpu7x_pool("ironwood-0", placed, vms=4.0)) == []


def test_a_single_host_pool_with_a_placement_policy_is_refused():
    single = tpu7x_pool("ironwood-1", {"type": "COMPACT", "policyName": "some-policy"}, vms=1.0)
    assert messages(single) == [
        (
            "pool 'ironwood-1': a single-host tpu7x-8 pool takes no placementPolicy; GKE refuses it (\"TPU "
            "topology can't be specified with single-host TPU slice pool\")."
        )
    ]
    assert messages(tpu7x_pool("ironwood-2", None, vms=1.0)) == []
