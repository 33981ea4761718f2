"""policies/props.py: engine values read as plain values, unknowns found at any depth."""

from __future__ import annotations

from pulumi_policy.proxy import UNKNOWN_NUMBER_VALUE, UNKNOWN_STRING_VALUE, unknown_checking_proxy

from policies.props import UNKNOWN, has_unknown, plain

PROPS = {
    "name": "pool",
    "nodeCount": UNKNOWN_NUMBER_VALUE,
    "nodeConfig": {"labels": {"a": "b", "c": UNKNOWN_STRING_VALUE}, "taints": [{"key": "k"}, UNKNOWN_STRING_VALUE]},
    "autoscaling": None,
}


def test_plain_copies_a_proxy_with_its_unknowns_marked():
    expected = {
        "name": "pool",
        "nodeCount": UNKNOWN,
        "nodeConfig": {"labels": {"a": "b", "c": UNKNOWN}, "taints": [{"key": "k"}, UNKNOWN]},
        "autoscaling": None,
    }
    assert plain(unknown_checking_proxy(PROPS)) == plain(PROPS) == expected


def test_has_unknown_finds_an_unknown_at_any_depth():
    props = unknown_checking_proxy(PROPS)
    assert has_unknown(props)
    assert has_unknown(props["nodeConfig"]["taints"])
    assert has_unknown({"a": [{"b": [UNKNOWN_STRING_VALUE]}]})
    assert not has_unknown(props["nodeConfig"]["taints"][0])
    assert not has_unknown({"a": [{"b": ["c", 1.0, None]}]})
    assert has_unknown(UNKNOWN_NUMBER_VALUE) and not has_unknown("pool")
