"""policies/derived_once.py: what several policies read (pool facts, the cost estimate) is derived once per
evaluation in preflight, and once per policy where each policy gets its own objects, as under the Pulumi CLI."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

from pulumi_policy.proxy import unknown_checking_proxy

from components.facts import cost
from components.facts.gke import NODE_POOL_TYPE
from policies import pools
from policies.derived_once import once_per_resource, once_per_stack
from preflight.checks import policy_runner


def _counted(calls: list[str]):
    def derive(*arguments):
        calls.append(repr(arguments))
        return len(calls)

    return derive


def test_a_resource_is_derived_once_while_its_property_object_comes_back():
    calls: list[str] = []
    derived = once_per_resource(_counted(calls))
    props = unknown_checking_proxy({"name": "a"})
    assert derived("a", "urn:a", props) == derived("a", "urn:a", props) == 1
    assert derived("a", "urn:a", unknown_checking_proxy({"name": "a"})) == 2  # the CLI's: a new object per policy
    assert derived("b", "urn:b", props) == 3  # another resource's name and URN on the same object
    plain = {"name": "a"}
    assert derived("a", "urn:a", plain) == 4
    assert derived("a", "urn:a", plain) == 5  # a plain dict may change in place: never kept on


def _resource(name: str, props, resource_type: str = NODE_POOL_TYPE) -> SimpleNamespace:
    return SimpleNamespace(resource_type=resource_type, urn=f"urn:{name}", name=name, props=props)


def test_a_stack_is_derived_once_while_the_same_property_objects_come_back():
    calls: list[str] = []
    derived = once_per_stack({NODE_POOL_TYPE})(_counted(calls))
    first, second = unknown_checking_proxy({"nodeCount": 1.0}), unknown_checking_proxy({"nodeCount": 2.0})
    network = _resource("net", unknown_checking_proxy({}), "gcp:compute/network:Network")
    stack = [_resource("a", first), _resource("b", second), network]
    assert derived(stack) == derived(list(stack)) == 1
    assert derived([*stack[:2], _resource("net", unknown_checking_proxy({}), network.resource_type)]) == 1
    assert derived([_resource("a", first), _resource("b", unknown_checking_proxy({"nodeCount": 2.0}))]) == 2
    assert derived([_resource("a", first)]) == 3
    assert derived([_resource("a", {"nodeCount": 1.0})]) == 4
    assert derived([_resource("a", {"nodeCount": 1.0})]) == 5


def _count_calls(monkeypatch, module, name: str) -> list[int]:
    calls: list[int] = []
    original = getattr(module, name)

    def counted(*arguments, **keywords):
        calls.append(1)
        return original(*arguments, **keywords)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_preflight_derives_each_pool_and_the_cost_once_and_the_cli_way_judges_the_same(dev_plan, monkeypatch):
    plan = dev_plan.to_json()
    pool_count = sum(1 for r in plan["resources"] if r["type"] == NODE_POOL_TYPE)
    labels = _count_calls(monkeypatch, pools, "node_labels")  # once per derivation of a pool's facts
    estimates = _count_calls(monkeypatch, cost, "estimate")
    shared = policy_runner.evaluate(plan)
    # Each pool's facts once for the resource policies reading its request, once for the stack policies.
    assert (len(labels), len(estimates)) == (2 * pool_count, 1)
    labels.clear()
    estimates.clear()
    # Under `pulumi preview --policy-pack`, each policy gets property objects of its own: nothing is shared.
    monkeypatch.setattr(policy_runner, "properties_converted_once", contextlib.nullcontext)
    assert policy_runner.evaluate(plan) == shared
    assert len(labels) > 4 * pool_count and len(estimates) == 2
