"""What the APIs do with an update where it differs from the provider schema's ForceNew (preflight/diff/
api_updates.json), each change planned from the dev stack: refused, ignored, auto-upgrade turned on, every
Kubernetes object replaced, nodes recreated under the pods that run there."""

from __future__ import annotations

import pytest

from preflight.diff import compare
from preflight.diff.markdown import render_markdown
from preflight.diff.running_work import warnings


@pytest.fixture(scope="module")
def diff_of(dev_plan, plan_with):
    def diff(edit) -> compare.PlanDiff:
        return compare.compare(dev_plan.to_json(), plan_with(edit).to_json())

    return diff


def _set(section: str, key: str, value):
    def edit(values) -> None:
        values[section][key] = value

    return edit


def _refusals(diff: compare.PlanDiff) -> list[tuple[str, str, str]]:
    return [(v.rule, v.name, v.key) for v in diff.refused]


def test_a_multi_host_slice_topology_change_is_refused_naming_the_group_and_the_job(diff_of):
    def topology(values):
        values["trainyard:tpuSlices"][0]["topology"] = "4x8"

    diff = diff_of(topology)
    assert _refusals(diff) == [
        ("tpu-slice-topology", "v6e-16-0", "trainyard:tpuSlices[0].topology"),
        ("tpu-slice-topology", "v6e-16-1", "trainyard:tpuSlices[0].topology"),
    ]
    (line, *_) = [w for w in warnings(diff) if "REFUSE" in w]
    assert "NodePool `v6e-16-0`: the API will REFUSE this update" in line
    assert "RayJob `llama3-8b` still running" in line and "add a slice group with the new topology" in line


def test_a_bucket_location_change_is_refused_not_shown_as_a_replacement(diff_of):
    diff = diff_of(lambda values: values["trainyard:storage"].update(location="US"))
    assert _refusals(diff) == [("bucket-location", "trainyard-dev-data", "trainyard:storage.location")]
    assert "migrate to a bucket with a new name" in render_markdown(diff, "base")


def test_a_cluster_queue_rename_is_refused_by_kueues_crd(diff_of):
    diff = diff_of(lambda values: values["trainyard:kueue"].update(clusterQueue="team-a"))
    assert ("local-queue-cluster-queue", "localqueue-trainyard", "trainyard:kueue.clusterQueue") in _refusals(diff)
    assert "field is immutable" in render_markdown(diff, "base")


def test_a_local_queue_rename_is_refused_on_the_running_jobs_or_gives_them_new_revisions(diff_of):
    diff = diff_of(lambda values: values["trainyard:kueue"].update(localQueue="team-b"))
    relabelled = [
        change
        for change in diff.changed
        if compare.is_workload(change.type)
        and any(c.path == "metadata.labels.kueue.x-k8s.io/queue-name" for c in change.changes)
    ]
    assert relabelled
    for change in relabelled:  # a job keeps its revision only if Kueue's webhook can take the new label
        refused = [v for v in diff.refused if v.urn == change.urn]
        assert bool(refused) != change.replaced


def test_a_cluster_rename_replaces_every_kubernetes_object(diff_of):
    diff = diff_of(lambda values: values["trainyard:cluster"].update(name="trainyard-two"))
    (verdict,) = [v for v in diff.api_verdicts if v.rule == "provider-cluster-identity"]
    assert verdict.key == "trainyard:cluster.name"
    (line,) = [w for w in warnings(diff) if "every Kubernetes object it manages" in w]
    managed = sum(r.get("provider") == verdict.urn for r in diff.head_resources)
    assert f"({managed}) will be REPLACED" in line and managed > 100
    assert "RayJob `llama3-8b`" in line and "Job `llama31-70b-fsdp`" in line


def test_a_gke_downgrade_changes_nothing_and_restarts_nothing(diff_of, dev_plan):
    version = dev_plan.config["trainyard:cluster"]
    diff = diff_of(lambda values: values["trainyard:cluster"].update(version="1.34"))
    assert '"1.35"' in version or "1.35" in version
    (verdict,) = diff.api_verdicts
    assert (verdict.rule, verdict.verdict) == ("gke-downgrade", "ignored")
    lines = warnings(diff)
    assert not any("restarts the control plane" in line for line in lines)
    assert any("changes nothing" in line for line in lines)
    upgrade = diff_of(lambda values: values["trainyard:cluster"].update(version="1.36"))
    assert upgrade.api_verdicts == [] and any("restarts the control plane" in w for w in warnings(upgrade))


def test_joining_a_release_channel_names_the_pools_it_turns_auto_upgrade_on_under(dev_plan, plan_with):
    base = plan_with(lambda values: values["trainyard:cluster"].update(releaseChannel="UNSPECIFIED"))
    head = plan_with(lambda values: values["trainyard:cluster"].update(releaseChannel="REGULAR"))
    diff = compare.compare(base.to_json(), head.to_json())
    (line,) = [w for w in warnings(diff) if "auto-upgrade ON" in w]
    assert "`gpu-nodepool-dws`" in line and "Job `llama31-70b-fsdp`" in line


def test_a_system_pool_machine_change_names_the_ray_head_and_submitter(diff_of):
    diff = diff_of(lambda values: values["trainyard:cluster"]["systemPool"].update(machineType="e2-standard-16"))
    (line,) = [w for w in warnings(diff) if "Node pool `system`" in w]
    assert "RayJob `trainyard/llama3-8b" in line and "(headGroupSpec)" in line
    assert "Deployment `kueue-system/kueue-controller-manager`" in line and "(submitter)" in line


def test_every_rule_is_sourced_checked_and_documented():
    from preflight.diff import api_updates

    for rule in api_updates.rules():
        assert rule["when"] in api_updates.CONDITIONS and rule["verdict"] in api_updates.SHOWN
        assert rule["source"] and rule["key"].startswith("trainyard:")
    text = api_updates.DOC.read_text()
    assert api_updates.documented(text) == text, "run `python -m preflight.diff.api_updates`"


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (
            lambda values: values["trainyard:jobs"]["maxtext"][0].update(modelName="llama3.1-8b"),
            "it resumes run `llama3-8b`'s checkpoints, saved by `llama3-8b`, as `llama3.1-8b`",
        ),
        (
            lambda values: values["trainyard:jobs"]["maxtext"][0].update(runName="llama3-8b-b"),
            "it starts from step 0 as run `llama3-8b-b` (run `llama3-8b`'s checkpoints stay in the bucket, unread)",
        ),
        (
            lambda values: values["trainyard:storage"].update(bucket="trainyard-dev-data2"),
            (
                "it starts from step 0: its checkpoints are read from trainyard-dev-data2, not from where run "
                "`llama3-8b` saved them (trainyard-dev-data)"
            ),
        ),
        (
            lambda values: values["trainyard:jobs"]["maxtext"][0].update(steps=200),
            "it resumes run `llama3-8b` from its newest checkpoint",
        ),
    ],
    ids=["model", "run-name", "bucket", "steps"],
)
def test_a_new_maxtext_revision_says_what_it_starts_from(diff_of, edit, says):
    (line,) = [w for w in warnings(diff_of(edit)) if w.startswith("**RayJob `llama3-8b`")]
    assert says in line


def test_a_new_fsdp_revision_starts_over_and_a_namespace_change_takes_everything_in_it(diff_of):
    lines = warnings(diff_of(lambda values: values["trainyard:storage"].update(namespace="training")))
    (fsdp,) = [w for w in lines if w.startswith("**Job `llama31-70b-fsdp`")]
    assert "it starts from step 0 in a folder of its own" in fsdp
    (namespace,) = [w for w in lines if w.startswith("**Namespace")]
    assert "**Namespace `trainyard` is DELETED, and Kubernetes deletes everything in it**" in namespace
    assert "Job `llama31-70b-fsdp`, RayJob `llama3-8b` among them" in namespace


def test_a_renamed_maxtext_job_says_it_starts_from_step_0(diff_of):
    lines = warnings(diff_of(lambda values: values["trainyard:jobs"]["maxtext"][0].update(name="llama3-8b-v2")))
    (line,) = [w for w in lines if "(renamed)" in w]
    assert line == (
        "RayJob `llama3-8b-v2` replaces RayJob `llama3-8b` (renamed): it starts from step 0 as run `llama3-8b-v2` "
        "(run `llama3-8b`'s checkpoints stay in the bucket, unread)."
    )
