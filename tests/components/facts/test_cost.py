"""components.facts.cost: node pools priced at minimum and maximum scale from engine-shaped inputs."""

from __future__ import annotations

import pytest
import yaml

from components.facts import cost, topology
from components.facts.capacity import PRICE_COLUMNS
from tests.helpers import policy_stacks as fx

BOOK = cost.load_prices()
REGIONS = ("us-central1", "us-east5", "europe-west4")


def node_hour(machine: str, region: str, mode: str) -> float:
    return BOOK.node_hour(machine, region, mode)[0]


def test_good_stack_pools_at_min_and_max_scale():
    estimate = cost.estimate(fx.good_stack())
    pools = {pool.name: pool for pool in estimate.pools}
    chip = BOOK.tpu_chips["tpu-v6e"]["us-east5"]["on-demand"].usd_per_hour
    slice_hour = topology.tpu_slice("v6e", "4x4").chips * chip
    assert pools["v6e-16-0"].min_usd_per_hour == pytest.approx(slice_hour)
    assert pools["v6e-16-0"].max_usd_per_hour == pytest.approx(slice_hour)
    dws = pools["gpu-nodepool-dws"]
    assert (dws.capacity, dws.min_nodes, dws.max_nodes) == ("flex-start", 0, 10)
    assert dws.max_usd_per_hour == pytest.approx(10 * node_hour("a4-highgpu-8g", "us-east5", "flex-start"))
    assert (pools["system"].min_nodes, pools["system"].max_nodes) == (3, 5)
    assert estimate.clusters == 1 and estimate.unpriced == ()
    assert estimate.max_usd_per_hour == pytest.approx(
        sum(pool.max_usd_per_hour for pool in estimate.pools) + BOOK.cluster_fee.usd_per_hour
    )
    assert estimate.min_usd_per_hour < estimate.max_usd_per_hour


@pytest.mark.parametrize(
    ("edits", "mode"),
    [
        ({}, "on-demand"),
        ({"nodeConfig.spot": True}, "spot"),
        ({"nodeConfig.preemptible": True}, "spot"),
        ({"nodeConfig.flexStart": True, "nodeConfig.spot": True}, "flex-start"),
    ],
)
def test_capacity_mode_follows_spot_and_flex_start(edits, mode):
    pool = fx.tpu_slice_pool()
    for path, value in edits.items():
        pool = fx.changed(pool, path, value)
    (priced,) = cost.estimate([pool]).pools
    assert priced.capacity == mode
    assert priced.usd_per_node_hour == pytest.approx(node_hour("ct6e-standard-4t", "us-east5", mode))


def test_spot_is_cheaper_than_on_demand_for_every_priced_machine():
    spot_priced = 0
    for table in (BOOK.machines, BOOK.tpu_chips):
        for key, regions in table.items():
            for region, modes in regions.items():
                if "spot" not in modes:  # a machine sold only through reservations (A4X) has no Spot price
                    continue
                spot_priced += 1
                assert modes["spot"].usd_per_hour < modes["on-demand"].usd_per_hour, (key, region)
    assert spot_priced > 10


def test_per_zone_limits_multiply_by_zones_and_assumed_zones_are_noted():
    pool = fx.changed(fx.system_pool(), "autoscaling", {"minNodeCount": 1.0, "maxNodeCount": 2.0})
    pool = fx.changed(pool, "nodeLocations", ["us-east5-a", "us-east5-b", "us-east5-c"])
    (three_zones,) = cost.estimate([pool]).pools
    assert (three_zones.min_nodes, three_zones.max_nodes, three_zones.note) == (3, 6, "")
    regional = fx.changed(fx.changed(pool, "nodeLocations", fx.DELETE), "location", "us-east5")
    (assumed,) = cost.estimate([regional]).pools
    assert (assumed.min_nodes, assumed.max_nodes) == (3, 6) and "assumed" in assumed.note


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        ("location", "asia-south1-a", ["asia-south1", "priced regions", "us-east5"]),
        ("nodeConfig.machineType", "m3-ultramem-32", ["m3-ultramem-32", "priced"]),
        ("nodeConfig.machineType", fx.DELETE, ["machineType"]),
        ("nodeCount", fx.DELETE, ["node counts"]),
    ],
)
def test_pools_that_cannot_be_priced_are_listed_with_the_reason(path, value, words):
    estimate = cost.estimate([fx.changed(fx.tpu_slice_pool(), path, value)])
    assert estimate.pools == ()
    (unpriced,) = estimate.unpriced
    assert all(word in unpriced.reason for word in words), unpriced.reason


def test_flex_start_without_a_price_is_unpriced_not_free():
    pool = fx.changed(fx.system_pool(), "nodeConfig.flexStart", True)
    (unpriced,) = cost.estimate([pool]).unpriced
    assert "flex-start" in unpriced.reason and "e2-standard-8" in unpriced.reason


def test_price_file_records_source_and_date_for_every_entry_and_covers_the_stacks():
    raw = yaml.safe_load(cost.PRICES_PATH.read_text())
    entries = [raw["cluster_management_fee"]]
    for section in ("machines", "tpu_chips"):
        for by_region in raw[section].values():
            entries += [entry for modes in by_region["regions"].values() for entry in modes.values()]
    assert all(entry["source"] and entry["date"] for entry in entries)
    assert all(entry.get("note") for entry in entries if entry.get("estimate"))
    for region in REGIONS:
        for mode in PRICE_COLUMNS:
            assert node_hour("ct6e-standard-4t", region, mode) > 0
            assert node_hour("a4-highgpu-8g", region, mode) > 0
        for machine in ("e2-standard-8", "n1-standard-16"):
            assert node_hour(machine, region, "on-demand") > node_hour(machine, region, "spot") > 0


def test_chip_priced_tpus_scale_with_chips_per_vm():
    one, four, eight = (node_hour(f"ct6e-standard-{n}t", "us-east5", "on-demand") for n in (1, 4, 8))
    assert four == pytest.approx(4 * one) and eight == pytest.approx(8 * one)


def test_table_and_json_carry_every_pool_and_the_totals():
    estimate = cost.estimate(fx.good_stack())
    table = cost.render_table(estimate)
    assert all(pool.name in table for pool in estimate.pools)
    assert f"{estimate.max_usd_per_hour:,.2f}" in table.splitlines()[-2]
    data = estimate.to_json()
    assert data["maxUsdPerHour"] == pytest.approx(estimate.max_usd_per_hour, abs=1e-3)
    assert [pool["name"] for pool in data["pools"]] == [pool.name for pool in estimate.pools]
