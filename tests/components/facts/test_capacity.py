"""Capacity modes: the one vocabulary, the one reading of a node pool's mode that render, cost and the config share."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from components.facts import cost
from components.facts.capacity import GPU_CAPACITIES, PRICE_COLUMNS, TPU_CAPACITIES, Capacity, node_pool_capacity


@pytest.mark.parametrize(
    ("inputs", "capacity", "price_column"),
    [
        ({"nodeConfig": {"machineType": "e2-standard-8"}}, "onDemand", "on-demand"),
        ({"nodeConfig": {"spot": True}}, "spot", "spot"),
        ({"nodeConfig": {"preemptible": True}}, "spot", "spot"),
        ({"nodeConfig": {"flexStart": True}}, "flexStart", "flex-start"),
        ({"nodeConfig": {"flexStart": True}, "queuedProvisioning": {"enabled": True}}, "dwsQueued", "flex-start"),
        (
            {"nodeConfig": {"reservationAffinity": {"consumeReservationType": "SPECIFIC_RESERVATION"}}},
            "reservation",
            "on-demand",
        ),
        (
            {"nodeConfig": {"reservationAffinity": {"consumeReservationType": "NO_RESERVATION"}}},
            "onDemand",
            "on-demand",
        ),
    ],
)
def test_capacity_is_read_in_the_configs_words_and_priced_by_its_column(inputs, capacity, price_column):
    assert node_pool_capacity(inputs) == capacity
    assert cost.capacity_mode(inputs) == price_column


def test_every_config_capacity_has_a_price_column():
    from typing import get_args

    from components.config.models import GpuCapacity, TpuCapacity

    assert set(get_args(GpuCapacity)) | set(get_args(TpuCapacity)) == set(Capacity)
    assert {mode.price_column for mode in Capacity} == set(PRICE_COLUMNS)


def test_what_each_mode_implies():
    assert [mode for mode in Capacity if mode.flex_start] == [Capacity.FLEX_START, Capacity.DWS_QUEUED]
    assert [mode for mode in Capacity if mode.queued] == [Capacity.DWS_QUEUED]
    assert Capacity.DWS_QUEUED not in TPU_CAPACITIES and set(GPU_CAPACITIES) == set(Capacity)
    assert {mode: mode.node_label for mode in Capacity if mode.node_label} == {
        Capacity.SPOT: "cloud.google.com/gke-spot",
        Capacity.FLEX_START: "cloud.google.com/gke-flex-start",
    }


def test_mode_names_are_written_only_in_the_facts_module():
    root = Path(__file__).resolve().parents[3]
    names = {str(mode) for mode in Capacity}
    where = []
    for folder in ("components", "policies", "preflight"):
        for path in (root / folder).rglob("*.py"):
            if path == root / "components" / "facts" / "capacity.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and node.value in names:
                    where.append(f"{path.relative_to(root)}:{node.lineno}: {node.value}")
    assert where == []


def test_zones_outside_the_dated_table_are_advisories_not_errors():
    from components.facts import zones

    assert zones.zone_advisory("ct6e-standard-4t", "us-east5-b") is None
    assert zones.zone_advisory("e2-standard-8", "mars-north1-a") is None  # no accelerator, no table
    advisory = zones.zone_advisory("ct6e-standard-4t", "us-west1-a")
    assert advisory.startswith("us-west1-a is not in the table of zones offering TPU v6e (read 2026-11-24")
    assert zones.zone_advisory("a4-highgpu-8g", "us-east5-b") is None  # no A4 table yet (see zones.py)


def test_the_policy_reports_the_zone_advisory_per_pool(dev_plan):
    from preflight.checks import policy_runner

    plan = dev_plan.to_json()
    assert [v for v in policy_runner.evaluate(plan, {}) if v.policy == "accelerator-zone-offered"] == []
    for resource in plan["resources"]:
        if resource["name"] == "v6e-16-1":
            resource["inputs"]["nodeLocations"] = ["us-west1-a"]
    verdicts = [v for v in policy_runner.evaluate(plan, {}) if v.policy == "accelerator-zone-offered"]
    assert [(v.level, v.urn.rsplit("::", 1)[-1]) for v in verdicts] == [("advisory", "v6e-16-1")]


def test_every_node_network_but_rdma_needs_its_ingress_rule(dev_plan):
    from preflight.checks import policy_runner

    def violations(plan):
        found = [v for v in policy_runner.evaluate(plan, {}) if v.policy == "node-networks-allow-internal-ingress"]
        return sorted((v.level, v.urn.rsplit("::", 1)[-1]) for v in found)

    plan = dev_plan.to_json()
    assert violations(plan) == []
    without_firewalls = {
        **plan,
        "resources": [r for r in plan["resources"] if r["type"] != "gcp:compute/firewall:Firewall"],
    }
    assert violations(without_firewalls) == [
        ("mandatory", "trainyard-dev-dcn-1-net"),
        ("mandatory", "trainyard-dev-dcn-2-net"),
        ("mandatory", "trainyard-dev-gvnic-1-net"),
    ]
