"""Loud lines for what stops or starves running work, naming the workload (issue 27 item 4): each change planned
from the dev stack."""

from __future__ import annotations

import re

import pytest

from preflight.diff import compare
from preflight.diff.markdown import render_markdown


@pytest.fixture(scope="module")
def diff_of(dev_plan, plan_with):
    def diff(edit) -> str:
        return render_markdown(compare.compare(dev_plan.to_json(), plan_with(edit).to_json()), "base")

    return diff


def _rename_slices(values) -> None:
    values["trainyard:tpuSlices"][0]["name"] = "v6e-16b"
    for job in values["trainyard:jobs"]["maxtext"]:
        job["slices"] = "v6e-16b"


def test_a_renamed_slice_group_rebuilds_its_pools_under_the_rayjob(diff_of):
    markdown = diff_of(_rename_slices)
    for pool in ("v6e-16-0", "v6e-16-1"):
        assert (
            f"> **NodePool `{pool}` will be DELETED with its nodes**: RayJob `llama3-8b` runs on it and loses its pods "
            "there. If it was renamed (a slice group or pool name changed), the pools are rebuilt, not moved"
        ) in markdown


def test_a_removed_slice_says_which_job_loses_it(diff_of):
    markdown = diff_of(lambda values: values["trainyard:tpuSlices"][0].update(count=1))
    assert "> **NodePool `v6e-16-1` will be DELETED with its nodes**: RayJob `llama3-8b` runs on it" in markdown
    assert "rebuilt, not moved" not in markdown  # nothing was added: a removal, not a rename
    assert "NodePool `v6e-16-0` will be DELETED" not in markdown


def test_a_driver_change_says_the_job_dies_and_waits_for_dws_capacity(diff_of):
    markdown = diff_of(lambda values: values["trainyard:gpuPools"][0].update(gpuDriverVersion="LATEST"))
    assert (
        "> **Job `llama31-70b-fsdp` runs on `gpu-nodepool-dws`, which is replaced: its running pods die** when the "
        "old nodes go, and it waits for new DWS capacity (a new ProvisioningRequest)"
    ) in markdown
    assert "RayJob `llama3-8b` runs on" not in markdown  # the TPU pools stay


def test_a_gke_version_change_names_the_jobs_and_the_ray_operator(diff_of):
    markdown = diff_of(lambda values: values["trainyard:cluster"].update(version="1.36"))
    restart = r"restarts the control plane\*\* .*running jobs included \(Job `llama31-70b-fsdp`, RayJob"
    assert re.search(restart, markdown)
    assert (
        "> **Ray operator: GKE's Ray add-on moves to the KubeRay of GKE `1.36`**: it restarts, and RayJob "
        "`llama3-8b` is not reconciled meanwhile"
    ) in markdown


def test_an_mtu_change_says_running_nodes_keep_the_old_mtu(diff_of):
    markdown = diff_of(lambda values: values["trainyard:network"].update(mtu=1500))
    assert (
        "> **Network `trainyard-dev-gvnic-1-net`: MTU `8896` → `1500` reaches only new VMs**: the running nodes of "
        "node pools `gpu-nodepool-dws` keep the MTU they booted with until they are recreated (Job "
        "`llama31-70b-fsdp` runs on them)"
    ) in markdown
    assert "REPLACED" not in markdown


def test_a_change_that_touches_no_running_work_is_quiet(diff_of):
    markdown = diff_of(lambda values: values["trainyard:network"].update(dcnRanges=["10.50.0.0/15", "10.60.0.0/16"]))
    assert "[!CAUTION]" not in markdown and "Subnetwork `trainyard-dev-dcn-1-sub`" in markdown
