"""replacements.json: generated from the pinned providers' source, it covers every type a plan makes, and the
diff follows a replacement to what depends on it."""

from __future__ import annotations

import re

import pytest

from preflight.diff import compare, replacements
from preflight.diff.markdown import render_markdown
from preflight.engine.plan import plan_stack
from tests.helpers import policy_stacks as fx
from tests.helpers.plans import PROJECT_DIR


def pinned(package: str) -> str:
    text = (PROJECT_DIR / "requirements.txt").read_text()
    return re.search(rf"^{package}==(\S+)$", text, re.MULTILINE).group(1)


def test_the_table_was_generated_for_the_pinned_providers():
    """A new pin in requirements.txt needs `python -m preflight.diff.gen_replacements` (docs/cloud-facts.md)."""
    table = replacements.table()
    assert table["pulumiGcp"] == pinned("pulumi-gcp")
    assert table["pulumiKubernetes"] == pinned("pulumi-kubernetes")
    assert re.fullmatch(r"[0-9a-f]{40}", table["sources"]["terraform-provider-google-beta"]["commit"])


def _types(resources) -> set[str]:
    return {r["type"] for r in resources if r["type"].startswith(("gcp:", "kubernetes:"))}


def test_every_type_in_the_stack_files_and_the_test_plans_is_in_the_table(dev_plan):
    types = _types(dev_plan.to_json()["resources"])
    for stack_file in PROJECT_DIR.glob("Pulumi.*.yaml"):
        types |= _types(plan_stack(stack_file.name.split(".")[1], PROJECT_DIR).to_json()["resources"])
    types |= _types(fx.good_stack())
    assert len(types) > 25
    assert sorted(types - set(replacements.table()["types"])) == []


def _forces(type_: str, path: str, old: dict, new: dict) -> bool:
    return replacements.forces_replacement(type_, path, old, new)


POOL = "gcp:container/nodePool:NodePool"
SUBNET = "gcp:compute/subnetwork:Subnetwork"


@pytest.mark.parametrize(
    ("type_", "path", "old", "new", "replaces"),
    [
        # A ForceNew value, in a list element.
        (
            POOL,
            "nodeConfig.guestAccelerators[0].gpuDriverInstallationConfig.gpuDriverVersion",
            {"nodeConfig": {"guestAccelerators": [{"gpuDriverInstallationConfig": {"gpuDriverVersion": "DEFAULT"}}]}},
            {"nodeConfig": {"guestAccelerators": [{"gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"}}]}},
            True,
        ),
        (POOL, "nodeConfig.labels.team", {"nodeConfig": {}}, {"nodeConfig": {"labels": {"team": "ml"}}}, True),
        (POOL, "nodeConfig.labels.team", {"nodeConfig": {"spot": True}}, {"nodeConfig": {"spot": True}}, False),
        # A ForceNew block (placementPolicy): adding it replaces, a field it does not mark ForceNew does not.
        (POOL, "placementPolicy.type", {}, {"placementPolicy": {"type": "COMPACT"}}, True),
        (
            POOL,
            "placementPolicy.tpuTopology",
            {"placementPolicy": {"type": "COMPACT", "tpuTopology": "4x4"}},
            {"placementPolicy": {"type": "COMPACT", "tpuTopology": "4x8"}},
            False,
        ),
        # customdiff.ForceNewIfChange("ip_cidr_range", IsShrinkageIpCidr): only a range holding the old one updates.
        (SUBNET, "ipCidrRange", {"ipCidrRange": "10.50.0.0/16"}, {"ipCidrRange": "10.70.0.0/16"}, True),
        (SUBNET, "ipCidrRange", {"ipCidrRange": "10.50.0.0/16"}, {"ipCidrRange": "10.50.0.0/15"}, False),
        (SUBNET, "name", {"name": "a"}, {"name": "b"}, True),
        # pulumi-kubernetes diff.go.
        ("kubernetes:core/v1:Service", "spec.clusterIP", {}, {"spec": {"clusterIP": "10.0.0.9"}}, True),
        ("kubernetes:core/v1:Service", "spec.ports[0].port", {}, {"spec": {"ports": [{"port": 80}]}}, False),
        ("kubernetes:core/v1:ConfigMap", "data.train.py", {}, {"data": {"train.py": "x"}}, True),
        ("kubernetes:batch/v1:Job", "spec.template.spec.containers[0].args[3]", {}, {}, True),
        ("kubernetes:batch/v1:Job", "spec.suspend", {}, {"spec": {"suspend": True}}, False),
        ("kubernetes:ray.io/v1:RayJob", "spec.entrypoint", {}, {}, False),
        ("kubernetes:ray.io/v1:RayJob", "metadata.name", {}, {}, True),
    ],
)
def test_the_table_decides_as_the_provider_does(type_, path, old, new, replaces):
    assert _forces(type_, path, old, new) is replaces


def _dcn(plan_with, first_range: str) -> str:
    head = plan_with(lambda values: values["trainyard:network"]["dcnRanges"].__setitem__(0, first_range))
    return head


def test_a_dcn_range_change_replaces_the_subnet_and_the_tpu_pools_on_it(dev_plan, plan_with):
    result = compare.compare(dev_plan.to_json(), _dcn(plan_with, "10.70.0.0/16").to_json())
    assert [change.name for change in result.replaced] == ["trainyard-dev-dcn-1-sub"]
    dragged = {d.name: d for d in result.dependents}
    assert {name for name, d in dragged.items() if d.replaced} == {"v6e-16-0", "v6e-16-1"}
    assert dragged["v6e-16-0"].paths == ("networkConfig.additionalNodeNetworkConfigs[0].subnetwork",)
    markdown = render_markdown(result, "base")
    assert "(1 replaced), 2 replaced with what they use" in markdown
    assert "> **Subnetwork `trainyard-dev-dcn-1-sub` will be REPLACED, deleted first**" in markdown
    assert "> **NodePool `v6e-16-1` will be REPLACED too**: it uses `trainyard-dev-dcn-1-sub`" in markdown
    assert re.search(r"> \*\*RayJob `llama3-8b` runs on `v6e-16-[01]`", markdown)


def test_a_dcn_range_that_grows_is_updated_in_place(dev_plan, plan_with):
    result = compare.compare(dev_plan.to_json(), _dcn(plan_with, "10.50.0.0/15").to_json())
    assert result.replaced == [] and result.dependents == []
    assert "trainyard-dev-dcn-1-sub" in {change.name for change in result.changed}
