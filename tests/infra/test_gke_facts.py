"""The one reading of a node pool's capacity mode that render, cost and the config share."""

from __future__ import annotations

import pytest

from components.facts import cost, gke


@pytest.mark.parametrize(
    ("inputs", "capacity", "price_column"),
    [
        ({"nodeConfig": {"machineType": "e2-standard-8"}}, "onDemand", "on-demand"),
        ({"nodeConfig": {"spot": True}}, "spot", "spot"),
        ({"nodeConfig": {"preemptible": True}}, "spot", "spot"),
        ({"nodeConfig": {"flexStart": True}}, "flexStart", "flex-start"),
        ({"nodeConfig": {"flexStart": True}, "queuedProvisioning": {"enabled": True}}, "dwsQueued", "flex-start"),
        ({"nodeConfig": {"reservationAffinity": {"consumeReservationType": "SPECIFIC_RESERVATION"}}},
         "reservation", "on-demand"),
        ({"nodeConfig": {"reservationAffinity": {"consumeReservationType": "NO_RESERVATION"}}}, "onDemand", "on-demand"),
    ],
)
def test_capacity_is_read_in_the_configs_words_and_priced_by_its_column(inputs, capacity, price_column):
    assert gke.node_pool_capacity(inputs) == capacity
    assert cost.capacity_mode(inputs) == price_column


def test_every_config_capacity_has_a_price_column():
    from typing import get_args

    from components.config.models import GpuCapacity, TpuCapacity

    assert set(get_args(GpuCapacity)) | set(get_args(TpuCapacity)) == set(cost.PRICE_COLUMN)
    assert set(cost.PRICE_COLUMN.values()) == set(cost.CAPACITY_MODES)
