"""Facts, not formulas, for what the cloud offers (issue 36 item 2): a zone without the slices' accelerator, or no
zone at all, is refused with the zones that have it; a pool without a price makes the cost unknown, never a total
that silently leaves it out."""

from __future__ import annotations

import pytest

from cli.plan import verdict_line
from components.config.load import ConfigError, load_stack_config
from components.facts import cost
from preflight.verdict import check
from tests.helpers.plans import as_engine_config, dev_config_values


@pytest.mark.parametrize(("zone", "region"), [("us-west1-a", "us-west1"), ("us-east5-z", "us-east5")])
def test_a_zone_without_v6e_is_refused_with_the_zones_that_have_it(zone, region):
    values = dev_config_values()
    values["trainyard:zone"], values["gcp:region"] = zone, region
    with pytest.raises(ConfigError) as error:
        load_stack_config(as_engine_config(values), "dev")
    (line,) = [line for line in str(error.value).splitlines() if line.startswith("trainyard:zone")]
    assert line.startswith(f'trainyard:zone: "{zone}" does not offer TPU v6e')
    assert "us-east5-b" in line and "read 2026-11-24" in line


def _gpu_only_in(region: str):
    def edit(values):
        values["gcp:region"], values["trainyard:zone"] = region, f"{region}-b"
        values["trainyard:tpuSlices"] = []
        values["trainyard:jobs"]["maxtext"] = []
        values["trainyard:jobs"]["ray"]["enabled"] = False
        values["trainyard:jobs"]["smoke"]["enabled"] = False

    return edit


def test_an_unpriced_pool_makes_the_cost_unknown_not_a_smaller_total(plan_with):
    estimate = cost.estimate(plan_with(_gpu_only_in("us-west1")).to_json()["resources"])
    assert {item.name for item in estimate.unpriced} == {"system", "gpu-nodepool-dws"}
    table = cost.render_table(estimate)
    (total,) = [line for line in table.splitlines() if line.startswith("total")]
    assert total.split()[1:] == ["unpriced", "unpriced"]
    assert estimate.range_text == "cost unknown (2 pools unpriced)"
    priced = cost.estimate(plan_with(_gpu_only_in("us-east5")).to_json()["resources"])
    assert priced.unpriced == () and priced.range_text.startswith("$")


def test_the_verdict_line_says_the_cost_is_unknown(plan_with):
    plan = plan_with(_gpu_only_in("us-west1"))
    line = verdict_line(plan, check(plan, {}))
    assert line.endswith("cost unknown (2 pools unpriced)") and "$0.10" not in line
