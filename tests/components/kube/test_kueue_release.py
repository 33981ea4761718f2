"""Kueue's release applied object by object: every object `pulumi up` creates is in the plan, as Kueue's own
manifests for the pinned tag have it, with trainyard's configuration, gates and placement, and each check sees it."""

from __future__ import annotations

import copy
import hashlib
import json

import pytest
import yaml

from components.facts import kueue_release, releases
from preflight.checks.placement import check_placement, node_pools, place, pod_groups
from preflight.checks.policy_runner import evaluate
from preflight.diff import compare
from preflight.diff.markdown import render_markdown
from tests.helpers.plans import one

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
CONTROLLER = "kueue-system/kueue-controller-manager"


def controller(plan) -> dict:
    return one(plan, DEPLOYMENT, CONTROLLER)


def test_every_object_of_the_release_is_a_resource_of_the_plan(dev_plan):
    release = kueue_release.release_objects("v0.19.2")
    planned = {(m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]) for m in dev_plan.manifests}
    wanted = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in release}
    assert wanted <= planned
    kinds = {kind for kind, _, _ in wanted}
    assert {"Deployment", "ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration"} <= kinds
    assert {"ValidatingWebhookConfiguration", "CustomResourceDefinition", "APIService", "Service"} <= kinds
    # The manager's RBAC is the release's, verbatim.
    (role,) = [o for o in release if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "kueue-manager-role"]
    assert (
        one(dev_plan, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "kueue-manager-role")["rules"]
        == (role["rules"])
    )


def test_the_controller_runs_trainyards_configuration_on_top_of_the_releases(dev_plan):
    config_map = one(dev_plan, "kubernetes:core/v1:ConfigMap", "kueue-system/kueue-manager-config")
    config = yaml.safe_load(config_map["data"][kueue_release.MANAGER_CONFIG_FILE])
    assert config["waitForPodsReady"]["timeout"] == "30m"  # trainyard's
    assert config["webhook"] == {"port": 9443} and config["leaderElection"]["leaderElect"] is True  # the release's
    template = controller(dev_plan)["spec"]["template"]
    digest = hashlib.sha256(config_map["data"][kueue_release.MANAGER_CONFIG_FILE].encode()).hexdigest()[:16]
    assert template["metadata"]["annotations"][kueue_release.CONFIG_HASH_ANNOTATION] == digest
    assert template["spec"]["nodeSelector"] == {"cloud.google.com/gke-nodepool": "system"}


def test_feature_gates_are_the_controllers_flag_as_kueue_parses_it(dev_plan, plan_with):
    def elastic(values):
        values["trainyard:jobs"]["maxtext"][0]["minSlices"] = 1

    gates = kueue_release.planned_feature_gates(dev_plan.manifests)
    elastic_plan = plan_with(elastic)
    assert kueue_release.planned_feature_gates(elastic_plan.manifests) == {
        **gates,
        "ElasticJobsViaWorkloadSlices": True,
    }
    assert (
        "--feature-gates=ElasticJobsViaWorkloadSlices=true"
        in (controller(elastic_plan)["spec"]["template"]["spec"]["containers"][0]["args"])
    )
    # A release-level change is an ordinary change of the diff, with what it does to running work.
    diff = compare.compare(dev_plan.to_json(), elastic_plan.to_json())
    changed = {change.name: [c.path for c in change.changes] for change in diff.changed}
    assert any(path.endswith(".args") or ".args[" in path for path in changed[CONTROLLER])
    assert "Kueue's controller restarts" in render_markdown(diff, "base")


def test_a_kueue_upgrade_shows_the_objects_it_changes(dev_plan):
    head = copy.deepcopy(dev_plan.to_json())
    for resource in head["resources"]:
        if resource["type"] == DEPLOYMENT and resource["name"] == CONTROLLER:
            (container,) = resource["inputs"]["spec"]["template"]["spec"]["containers"]
            container["image"] = "registry.k8s.io/kueue/kueue:v0.20.0"
    markdown = render_markdown(compare.compare(dev_plan.to_json(), head), "base")
    assert "> **Kueue `v0.19.2` → `v0.20.0`**: the release restarts Kueue's controller" in markdown
    assert "running workloads stay admitted (Job `llama31-70b-fsdp`, RayJob `llama3-8b`)" in markdown


def test_only_a_vendored_release_can_be_named():
    from components.config.load import ConfigError, load_stack_config
    from tests.helpers.plans import as_engine_config, dev_config_values

    values = dev_config_values()
    values["trainyard:kueue"]["version"] = "v0.20.0"
    with pytest.raises(ConfigError, match=r'trainyard:kueue.version: "v0.20.0" has no vendored release manifests'):
        load_stack_config(as_engine_config(values), "dev")


def test_the_controller_is_placed_on_the_system_pool_and_nowhere_else(dev_plan):
    resources = dev_plan.to_json()["resources"]
    (group,) = [g for g in pod_groups(resources) if g.workload == f"Deployment {CONTROLLER}"]
    pools = node_pools(resources)
    free = {pool.name: dict(pool.allocatable) for pool in pools}
    assert place(group, group.spec, pools, free) is None
    assert [p for p in check_placement(resources)[1] if CONTROLLER in p.workload] == []
    elsewhere = {**group.spec, "nodeSelector": {"cloud.google.com/gke-nodepool": "gpu-nodepool-dws"}}
    assert place(group, elsewhere, pools, free) is not None  # the GPU pool's taints keep it off


def test_the_pack_passes_the_release_on_its_merits(dev_plan):
    plan = dev_plan.to_json()
    assert [v for v in evaluate(plan) if "kueue" in v.urn] == []
    # The controller may mount its token because a binding grants its account API access: without the
    # bindings, the same Deployment is refused.
    unbound = copy.deepcopy(plan)
    unbound["resources"] = [
        r for r in unbound["resources"] if not (r["type"].endswith("RoleBinding") and "kueue" in r["name"])
    ]
    refused = [v for v in evaluate(unbound) if v.policy == "service-account-token-only-where-needed"]
    assert [v.urn.rsplit("::", 1)[1] for v in refused] == [CONTROLLER]
    assert "no binding of the stack grants its account 'kueue-controller-manager' API access" in refused[0].message


def test_another_namespace_moves_every_reference_to_it():
    objects = kueue_release.configured_release("v0.19.2", "queues", {}, {}, {})
    text = json.dumps(objects)
    assert '"kueue-system"' not in text
    (mutating,) = [o for o in objects if o["kind"] == "MutatingWebhookConfiguration"]
    assert {w["clientConfig"]["service"]["namespace"] for w in mutating["webhooks"]} == {"queues"}
    (reader,) = [o for o in objects if o["metadata"]["name"] == "kueue-visibility-server-auth-reader"]
    assert reader["metadata"]["namespace"] == "kube-system" and reader["subjects"][0]["namespace"] == "queues"


def test_a_vendored_release_that_does_not_match_its_pin_is_refused(tmp_path, monkeypatch):
    pin = json.loads(releases.SOURCES.read_text())
    (tmp_path / "sources.json").write_text(json.dumps(pin))
    text = (releases.RELEASES / pin["v0.19.2"]["file"]).read_text()
    (tmp_path / pin["v0.19.2"]["file"]).write_text(text.replace("--zap-log-level=2", "--zap-log-level=9"))
    monkeypatch.setattr(releases, "RELEASES", tmp_path)
    monkeypatch.setattr(releases, "SOURCES", tmp_path / "sources.json")
    kueue_release._release_text.cache_clear()
    try:
        with pytest.raises(kueue_release.ReleaseError, match="not the pinned"):
            kueue_release.release_objects("v0.19.2")
        with pytest.raises(kueue_release.ReleaseError, match=r"v0.20.0 is not vendored \(vendored: v0.19.2\)"):
            kueue_release.release_objects("v0.20.0")
    finally:
        kueue_release._release_text.cache_clear()
