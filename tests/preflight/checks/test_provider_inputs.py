"""The provider-input check: every gcp resource's inputs against the pulumi-gcp SDK's own type metadata."""

from __future__ import annotations

import copy

import pytest

from preflight.checks.provider_inputs import check_provider_inputs


def mutated(plan, name: str, mutate) -> list[str]:
    resources = copy.deepcopy(plan.to_json()["resources"])
    mutate(next(r for r in resources if r["name"] == name)["inputs"])
    return [str(problem) for problem in check_provider_inputs(resources)]


def test_the_dev_plan_fits_the_provider(dev_plan):
    assert check_provider_inputs(dev_plan.to_json()["resources"]) == []


@pytest.mark.parametrize(
    ("name", "mutate", "expected"),
    [
        (
            "v6e-16-0",
            lambda i: i["nodeConfig"].update(machinetype=i["nodeConfig"].pop("machineType")),
            (
                "NodePool v6e-16-0: nodeConfig.machinetype: is not a property of NodePoolNodeConfig "
                "(did you mean 'machineType'?)"
            ),
        ),
        (
            "v6e-16-0",
            lambda i: i.update(placementPolicy=[i["placementPolicy"]]),
            "NodePool v6e-16-0: placementPolicy: is a list, but the provider takes an object here",
        ),
        ("v6e-16-0", lambda i: i.pop("cluster"), "NodePool v6e-16-0: cluster: is required by the provider but not set"),
        (
            "v6e-16-0",
            lambda i: i.update(nodeLocations="us-east5-b"),
            "NodePool v6e-16-0: nodeLocations: is str 'us-east5-b', but the provider takes a list here",
        ),
        (
            "v6e-16-0",
            lambda i: i["nodeConfig"].update(labels=["a"]),
            "NodePool v6e-16-0: nodeConfig.labels: is a list, but the provider takes a map here",
        ),
        (
            "trainyard-dev-dcn-1-net",
            lambda i: i.update(mtu="8896"),
            "Network trainyard-dev-dcn-1-net: mtu: is str '8896', but the provider takes an integer here",
        ),
        (
            "trainyard-dev-dcn-1-internal",
            lambda i: i["allows"][0].pop("protocol"),
            "Firewall trainyard-dev-dcn-1-internal: allows[0].protocol: is required by the provider but not set",
        ),
        (
            "image-fsdp",
            lambda i: i.update(platforms=["linux/amd65"]),
            (
                "Image image-fsdp: platforms[0]: is str 'linux/amd65', not a value the provider knows "
                "(did you mean 'linux/amd64'?)"
            ),
        ),
        (
            "image-fsdp",
            lambda i: i["cacheTo"][0]["registry"].update(imageManifests=True),
            (
                "Image image-fsdp: cacheTo[0].registry.imageManifests: is not a property of CacheToRegistry "
                "(did you mean 'imageManifest'?)"
            ),
        ),
    ],
)
def test_each_kind_of_mistake_is_caught(dev_plan, name, mutate, expected):
    assert mutated(dev_plan, name, mutate) == [expected]
