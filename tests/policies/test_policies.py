"""Every rule of the pack, driven through pulumi_policy's analyzer with engine-shaped resources.

``good_stack()`` passes every rule; each case (``violations.py``) changes one thing and names exactly the policies
that must fire (mandatory unless stated); ``passes.py`` holds compliant variations. A meta-test checks every
mandatory policy has a case that proves it fires.
"""

from __future__ import annotations

from typing import Any

import pytest

from components.facts.host_workloads import PAUSE_IMAGE
from policies import rules
from preflight.checks.policy_runner import evaluate
from tests.helpers import policy_stacks as fx
from tests.policies.passes import PASSES
from tests.policies.policy_edits import GPU_POOL, SLICE, SYSTEM, Stack, add, edit, plain_deployment, public_endpoint
from tests.policies.violations import VIOLATIONS


def fired(stack: Stack, config: dict[str, Any] | None = None, level: str = "mandatory") -> set[str]:
    return {v.policy for v in evaluate(fx.plan(stack), config) if v.level == level}


def test_good_stack_passes_every_rule():
    assert evaluate(fx.plan(fx.good_stack())) == []


@pytest.mark.parametrize(("label", "build", "expected"), VIOLATIONS, ids=[case[0] for case in VIOLATIONS])
def test_violation_fires_exactly_its_rules(label, build, expected):
    assert fired(build()) == expected


def test_every_mandatory_policy_is_proven_to_fire():
    # allowed-regions and cis-gke-profile judge only what their config names: their own tests fire them
    # (below, and test_cis_profile.py).
    configured = {"allowed-regions", "cis-gke-profile"}
    mandatory = {p.name for p in rules.POLICIES if p.enforcement_level == rules.MANDATORY} - configured
    proven = set().union(*(expected for _, _, expected in VIOLATIONS))
    assert mandatory - proven == set()


@pytest.mark.parametrize(("label", "build", "config"), PASSES, ids=[case[0] for case in PASSES])
def test_compliant_variation_passes(label, build, config):
    assert fired(build(), config) == set()


def test_allowed_regions_fires_on_each_resource_outside():
    verdicts = evaluate(fx.plan(fx.good_stack()), {"allowed-regions": {"allowedRegions": ["europe-west4"]}})
    outside = {v.urn.rsplit("::", 1)[-1] for v in verdicts if v.policy == "allowed-regions"}
    assert outside == {"trainyard-dev", SYSTEM, SLICE, "v6e-16-1", GPU_POOL, "trainyard-dev-data", "registry"}
    assert all(v.level == "mandatory" for v in verdicts)


def test_allowed_registries_replace_the_default_but_never_the_stacks_own_repositories():
    only_kubernetes = {"images-from-allowed-registries": {"allowedRegistries": ["registry.k8s.io"]}}
    assert fired(fx.good_stack(), only_kubernetes) == set()  # the trainers come from the stack's repository
    pause = add(lambda: plain_deployment(False, containers=[{"name": "pause", "image": PAUSE_IMAGE}]))()
    assert fired(pause) == set()
    assert fired(pause, only_kubernetes) == {"images-from-allowed-registries"}


def test_advisories_do_not_block():
    stack = fx.replace(fx.good_stack(), fx.changed(fx.cluster(), "deletionProtection", False))
    stack = fx.replace(stack, fx.changed(fx.system_pool(), "autoscaling", {"totalMinNodeCount": 3.0}))
    assert fired(stack) == set()
    assert fired(stack, level="advisory") == {"cluster-deletion-protection-off", "pool-has-max-size"}


def test_a_public_endpoint_without_ranges_is_an_advisory():
    assert fired(public_endpoint()()) == set()
    assert fired(public_endpoint()(), level="advisory") == {"public-endpoint-names-its-ranges"}
    assert fired(public_endpoint("203.0.113.0/24")(), level="advisory") == set()
    assert fired(fx.good_stack(), level="advisory") == set()


def test_budget_is_mandatory_unless_configured_advisory():
    over = {"cost-within-budget": {"maxUsdPerHour": 10}}
    assert fired(fx.good_stack(), over) == {"cost-within-budget"}
    assert (
        fired(fx.good_stack(), {"cost-within-budget": {"maxUsdPerHour": 10, "enforcementLevel": "advisory"}}) == set()
    )
    assert fired(
        fx.good_stack(), {"cost-within-budget": {"maxUsdPerHour": 10, "enforcementLevel": "advisory"}}, level="advisory"
    ) == {"cost-within-budget"}
    assert fired(fx.good_stack(), {"cost-within-budget": {"maxUsdPerHour": 100_000}}) == set()


def budget_verdicts(stack: Stack, config: dict[str, Any] | None = None) -> list[str]:
    return [v.message for v in evaluate(fx.plan(stack), config) if v.policy == "cost-within-budget"]


def test_a_stack_over_the_default_hourly_budget_fails_naming_the_pools_that_drive_it():
    assert budget_verdicts(fx.good_stack()) == []  # dev-like: $614.84/h at most, under the default $1,000/h
    gpus = edit(GPU_POOL, "autoscaling.totalMaxNodeCount", 2000.0)()
    (message,) = budget_verdicts(gpus)
    assert "costs $105,487.84/h ($87.30/h at minimum), over the budget of $1,000.00/h" in message
    assert "cost-within-budget.maxUsdPerHour): gpu-nodepool-dws ($105,400.00/h at 2,000 nodes of a4-highgpu-8g)" in (
        message
    )
    slices = fx.good_stack() + [fx.tpu_slice_pool(f"v6e-16-{i}") for i in range(2, 500)]
    (message,) = budget_verdicts(slices)
    assert "500 ct6e-standard-4t on-demand pools ($21,600.00/h at 2,000 nodes: v6e-16-0, v6e-16-1, ...)" in message
    assert "cost-within-budget" in fired(slices)  # mandatory by default: the stack fails
    assert budget_verdicts(gpus, {"cost-within-budget": {"maxUsdPerHour": 200_000}}) == []


def test_the_default_run_budget_judges_forecast_runs_only():
    dear = [{"job": "fsdp-finetune", "stepSeconds": 21.4, "usdPerWindow": 2500.0}]
    (verdict,) = [
        v
        for v in evaluate(fx.plan(fx.good_stack()), {"runs-within-budget": {"forecast": dear}})
        if v.level == "advisory"
    ]
    assert "fsdp-finetune is forecast at $2,500.00 per DWS window" in verdict.message
    assert "over the budget of $2,000.00 per run (runs-within-budget.maxUsdPerRun)" in verdict.message
    cheap = [{"job": "fsdp-finetune", "usdPerWindow": 211.0}, {"job": "maxtext", "none": "no fit-check result"}]
    assert fired(fx.good_stack(), {"runs-within-budget": {"forecast": cheap}}, level="advisory") == set()
    raised = {"runs-within-budget": {"maxUsdPerRun": 3000, "forecast": dear}}
    assert fired(fx.good_stack(), raised, level="advisory") == {"runs-within-budget"}  # maxtext: no forecast


def test_a_run_over_its_budget_is_reported_from_the_forecast_the_pack_config_carries():
    forecast = [
        {"job": "fsdp-finetune", "stepSeconds": 21.4, "usdPerWindow": 211.0},
        {"job": "maxtext", "stepSeconds": 2.1, "usdPerRun": 90.0},
    ]
    assert fired(fx.good_stack(), {"runs-within-budget": {"forecast": forecast}}, level="advisory") == set()
    within = {"runs-within-budget": {"maxUsdPerRun": 250, "forecast": forecast}}
    assert fired(fx.good_stack(), within, level="advisory") == set()
    over = {"runs-within-budget": {"maxUsdPerRun": 100, "forecast": forecast}}
    (verdict,) = [v for v in evaluate(fx.plan(fx.good_stack()), over) if v.policy == "runs-within-budget"]
    assert "fsdp-finetune is forecast at $211.00 per DWS window (21.4 s per step)" in verdict.message
    assert verdict.urn.endswith("kubernetes:batch/v1:Job::fsdp-finetune")
    unforecast = {"runs-within-budget": {"maxUsdPerRun": 1000, "forecast": forecast[:1]}}
    (missing,) = [v for v in evaluate(fx.plan(fx.good_stack()), unforecast) if v.policy == "runs-within-budget"]
    assert "job maxtext has no forecast" in missing.message
    mandatory = {"runs-within-budget": {**over["runs-within-budget"], "enforcementLevel": "mandatory"}}
    assert fired(fx.good_stack(), mandatory) == {"runs-within-budget"}


def test_messages_name_resource_property_and_value():
    stack = edit("trainyard-dev-dcn-1", "mtu", 1500.0)()
    (verdict,) = [v for v in evaluate(fx.plan(stack)) if v.policy == "accelerator-vpc-mtu"]
    assert "trainyard-dev-dcn-1" in verdict.message and "1500" in verdict.message and "8896" in verdict.message
    assert verdict.urn.endswith("gcp:compute/network:Network::trainyard-dev-dcn-1")


def test_a_value_a_rule_cannot_read_is_its_violation_not_a_crash():
    """An MTU written as a word once raised inside accelerator-vpc-mtu, which stops `pulumi preview` with a trace;
    the rule now reports that it cannot read the network, at its own level."""
    stack = fx.replace(fx.good_stack(), fx.network(mtu="jumbo"))  # type: ignore[arg-type]
    (verdict,) = [v for v in evaluate(fx.plan(stack)) if v.policy == "accelerator-vpc-mtu"]
    assert verdict.level == "mandatory" and "accelerator-vpc-mtu cannot read this resource" in verdict.message
