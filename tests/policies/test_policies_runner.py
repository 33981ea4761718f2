"""preflight.checks.policy_runner: pack config reconciled like the CLI, unknown values, verdict table and JSON."""

from __future__ import annotations

import json

import pytest
from pulumi_policy.proxy import UNKNOWN_OBJECT_VALUE

from preflight.checks.policy_runner import PackConfigError, Verdict, evaluate, has_mandatory, render_table
from tests.helpers import policy_stacks as fx


def bad_mtu_plan() -> dict:
    stack = fx.good_stack()
    return fx.plan(fx.replace(stack, fx.changed(fx.by_name(stack, "trainyard-dev-dcn-1"), "mtu", 1500.0)))


def test_verdict_names_policy_level_urn_and_message():
    (verdict,) = evaluate(bad_mtu_plan())
    assert verdict == Verdict(
        policy="accelerator-vpc-mtu",
        level="mandatory",
        urn=fx.by_name(fx.good_stack(), "trainyard-dev-dcn-1")["urn"],
        message="network 'trainyard-dev-dcn-1': mtu is 1500; accelerator VPCs need 8896.",
    )
    assert json.loads(json.dumps(verdict.to_json())) == {
        "policy": verdict.policy,
        "level": "mandatory",
        "urn": verdict.urn,
        "message": verdict.message,
    }
    assert has_mandatory([verdict])


def test_all_sets_every_level_and_a_policy_can_be_disabled():
    assert [v.level for v in evaluate(bad_mtu_plan(), {"all": "advisory"})] == ["advisory"]
    assert not has_mandatory(evaluate(bad_mtu_plan(), {"all": "advisory"}))
    assert evaluate(bad_mtu_plan(), {"accelerator-vpc-mtu": "disabled"}) == []
    assert (
        evaluate(bad_mtu_plan(), {"all": "advisory", "accelerator-vpc-mtu": {"enforcementLevel": "mandatory"}})[0].level
        == "mandatory"
    )


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ({"no-such-policy": "advisory"}, ["no-such-policy", "unknown policies"]),
        ({"accelerator-vpc-mtu": "sometimes"}, ["accelerator-vpc-mtu", "'sometimes'", "mandatory"]),
        ({"cost-within-budget": {"maxUsdPerHour": "lots"}}, ["cost-within-budget", "maxUsdPerHour", "'lots'"]),
        ({"cost-within-budget": {"maxUsdPerHour": 0}}, ["cost-within-budget", "maxUsdPerHour", "0"]),
        ({"allowed-regions": {"allowedRegions": "us-east5"}}, ["allowed-regions", "allowedRegions", "'us-east5'"]),
        ({"all": 3}, ["'all'", "3"]),
        (
            {"images-from-allowed-registries": {"allowedRegistries": ["https://nvcr.io"]}},
            ["images-from-allowed-registries", "'https://nvcr.io'"],
        ),
    ],
)
def test_bad_pack_config_is_refused_naming_key_and_value(config, words):
    with pytest.raises(PackConfigError) as error:
        evaluate(fx.plan(fx.good_stack()), config)
    assert all(word in str(error.value) for word in words), str(error.value)


def _paths(inputs: dict, depth: int = 2, prefix: str = ""):
    for key, value in inputs.items():
        if "." in key:
            continue
        path = f"{prefix}.{key}" if prefix else key
        yield path
        if isinstance(value, dict) and depth > 1:
            yield from _paths(value, depth - 1, path)


def test_values_unknown_during_preview_are_skipped_not_reported():
    """Any single input (two levels deep) unknown at preview: no crash, and no rule reports a violation."""
    stack = fx.good_stack()
    reported = {}
    for item in stack:
        for path in _paths(item["inputs"]):
            plan = fx.plan(fx.replace(stack, fx.changed(item, path, UNKNOWN_OBJECT_VALUE)))
            verdicts = [v.policy for v in evaluate(plan) if v.level == "mandatory"]
            if verdicts:
                reported[f"{item['name']}.{path}"] = verdicts
    assert reported == {}


def test_unknown_value_does_not_hide_a_real_violation_elsewhere():
    stack = fx.good_stack()
    stack = fx.replace(stack, fx.changed(fx.by_name(stack, "v6e-16-0"), "nodeCount", fx.UNKNOWN_NUMBER))
    stack = fx.replace(stack, fx.changed(fx.by_name(stack, "trainyard-dev-gvnic"), "mtu", 1460.0))
    assert {v.policy for v in evaluate(fx.plan(stack))} == {"accelerator-vpc-mtu"}


def test_table_lists_each_violation_and_counts():
    table = render_table(evaluate(bad_mtu_plan(), {"cluster-deletion-protection-off": "mandatory"}))
    lines = table.splitlines()
    assert lines[0].split() == ["level", "policy", "resource", "(message", "below)"]
    at = next(
        i for i, line in enumerate(lines) if line.split() == ["mandatory", "accelerator-vpc-mtu", "trainyard-dev-dcn-1"]
    )
    assert lines[at + 1].startswith(" " * 11 + "network 'trainyard-dev-dcn-1'")
    assert lines[-1] == "1 mandatory, 0 advisory violation(s)"
    assert "no violations" in render_table([])
