"""`trainyard job status` (why) and `list` on the object shapes Kueue v0.19.2, KubeRay v1.6.2 and GKE's
ProvisioningRequest API write (tests/runs/fixtures/, sources in its SOURCES.md): the first line names the cause."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest

from cli.job import _positions_in, holders_of
from runs import listing, why
from runs import objects as o
from runs.jobs import State, find, training_jobs

FIXTURES = Path(__file__).with_name("fixtures")
PRICES = {"gpu-nodepool-dws": 5.0, "v6e-16": 2.0}  # $ per GPU- and chip-hour, round for the arithmetic below


def snapshot(name: str) -> tuple[list, datetime, dict[str, int]]:
    """The fixture's objects, the time it was taken (its header says), and the queue positions it holds."""
    path = FIXTURES / name
    taken = re.search(r"snapshot at (\S+)", path.read_text())
    assert taken, f"{name} names no snapshot time"
    objects = o.load_dump(path)
    return objects, o.timestamp(taken.group(1)), _positions_in(objects)


def status(name: str, job: str) -> list[str]:
    objects, now, positions = snapshot(name)
    jobs = training_jobs(objects)
    found = find(jobs, job)
    assert found is not None
    return why.explain(found, now, positions, holders_of(found, jobs), jobs)


@pytest.mark.parametrize(
    ("fixture", "job", "state", "first_line", "evidence"),
    [
        (
            "pending-quota.yaml",
            "llama31-70b-fsdp-390a0d",
            State.PENDING,
            "Job llama31-70b-fsdp-390a0d: pending for 19m: waiting for quota, position 1 in its ClusterQueue",
            "quota held by: llama31-70b-fsdp-1c9e42 (16 GPUs on gpu-nodepool-dws)",
        ),
        (
            "pending-dra-claim.yaml",
            "llama31-8b-fsdp",
            State.PENDING,
            (
                "Job llama31-8b-fsdp-a15026: pending for 6m: Kueue cannot count its pods' device claims, so it asks "
                "no quota"
            ),
            (
                "next: NVIDIA's DRA driver makes llama31-8b-fsdp-nvlink-channel for the ComputeDomain "
                "llama31-8b-fsdp-nvlink"
            ),
        ),
        (
            "provisioning.yaml",
            "llama31-70b-fsdp",
            State.PROVISIONING,
            (
                "Job llama31-70b-fsdp-390a0d: waiting for DWS capacity for 39m: ProvisioningRequest "
                "job-llama31-70b-fsdp-390a0d-781dd-dws-prov-1 is not provisioned"
            ),
            "GKE: Waiting for resources. Currently there are not enough resources available",
        ),
        (
            "provisioning-failed.yaml",
            "llama31-70b-fsdp",
            State.PROVISIONING,
            "Job llama31-70b-fsdp-390a0d: DWS could not provision the nodes (Failed 2s ago)",
            "GKE: Could not enqueue the Provisioning Request due to insufficient capacity in zone us-east5-b.",
        ),
        (
            "provisioning-retry-backoff.yaml",
            "llama31-70b-fsdp",
            State.EVICTED,
            "Job llama31-70b-fsdp-390a0d: evicted 37s ago: its admission check (DWS) failed; back in the queue",
            'Kueue: Evicted due to AdmissionCheck in Retry state: "dws-prov"',
        ),
        (
            "admitted-pods-pending.yaml",
            "llama31-70b-fsdp",
            State.ADMITTED,
            "Job llama31-70b-fsdp-390a0d: admitted on gpu-nodepool-dws, 2 of 2 pods Pending",
            "scheduler: 0/5 nodes are available: 2 Insufficient nvidia.com/gpu",
        ),
        (
            "running.yaml",
            "llama31-70b-fsdp",
            State.RUNNING,
            "Job llama31-70b-fsdp-390a0d: running for 38m on gpu-nodepool-dws: 2 pods, 16 GPUs",
            "next: `trainyard job logs llama31-70b-fsdp` to follow it",
        ),
        (
            "evicted-requeued.yaml",
            "llama31-70b-fsdp",
            State.EVICTED,
            (
                "Job llama31-70b-fsdp-390a0d: evicted 49s ago: its pods were not all ready within Kueue's "
                "waitForPodsReady timeout; back in the queue"
            ),
            "requeued 2 time(s), next try in 1m",
        ),
        (
            "preempted.yaml",
            "llama31-70b-fsdp",
            State.EVICTED,
            (
                "Job llama31-70b-fsdp-390a0d: evicted 29s ago: preempted to make room for another workload; back in "
                "the queue"
            ),
            "preempted by Job llama31-8b-fsdp-7d2e19",
        ),
        (
            "finished-succeeded.yaml",
            "llama31-70b-fsdp",
            State.SUCCEEDED,
            "Job llama31-70b-fsdp-390a0d: succeeded 17m ago",
            "Kueue: Reached expected number of succeeded pods",
        ),
        (
            "finished-failed.yaml",
            "llama31-70b-fsdp",
            State.FAILED,
            "Job llama31-70b-fsdp-390a0d: failed 14m ago (BackoffLimitExceeded)",
            "why: Job has reached the specified backoff limit",
        ),
        (
            "rayjob-head-pending.yaml",
            "llama3-8b",
            State.ADMITTED,
            (
                "RayJob llama3-8b-75ecc4: admitted on v6e-16, but the Ray head pod "
                "llama3-8b-75ecc4-x7k2p-head-w9ccj is Pending"
            ),
            "scheduler: 0/11 nodes are available: 3 Insufficient cpu",
        ),
    ],
)
def test_status_names_the_cause_in_its_first_line(fixture, job, state, first_line, evidence):
    objects, _, _ = snapshot(fixture)
    assert find(training_jobs(objects), job).state is state
    lines = status(fixture, job)
    assert lines[0] == first_line
    assert any(line.strip().startswith(evidence) for line in lines[1:]), lines
    assert lines[-1].strip().startswith(("next:", "its checkpoints"))


def test_a_claim_template_the_stack_does_not_name_or_an_unmapped_class_says_what_to_do():
    objects, now, positions = snapshot("pending-dra-claim.yaml")
    (workload,) = o.of_kind(objects, "Workload")
    (reserved,) = [c for c in workload["status"]["conditions"] if c["type"] == "QuotaReserved"]
    reserved["message"] = reserved["message"].replace("llama31-8b-fsdp-nvlink-channel", "team-nics")
    (job,) = training_jobs(objects)
    stack_template = "a template of the stack (RDMA or DCN NICs) comes back with `pulumi up`"
    last = why.explain(job, now, positions)[-1].strip()
    assert last.startswith(f"next: no ResourceClaimTemplate team-nics in namespace trainyard: {stack_template}")
    not_found, unread = 'ResourceClaimTemplate.resource.k8s.io "team-nics" not found', "Timeout: failed waiting"
    reserved["message"] = reserved["message"].replace(not_found, f"{unread} for *v1 Informer to sync")
    (job,) = training_jobs(objects)
    assert (
        why.explain(job, now, positions)[-1]
        .strip()
        .startswith("next: Kueue could not read ResourceClaimTemplate team-nics (Timeout: failed waiting")
    )
    reserved["message"] = (
        'spec.podSets[0].template.spec.resourceClaims[1].resourceClaimTemplateName: Not found: "DeviceClass '
        'compute-domain-default-channel.nvidia.com is not mapped in DRA configuration for podset main"'
    )
    (job,) = training_jobs(objects)
    lines = why.explain(job, now, positions)
    assert lines[0].endswith("Kueue cannot count its pods' device claims, so it asks no quota")
    assert "device class compute-domain-default-channel.nvidia.com" in lines[-1]
    assert lines[1].strip().startswith("Kueue: spec.podSets[0]")


@pytest.mark.parametrize(
    ("message", "next_step"),
    [
        (  # Kueue's own words (pkg/controller/core/workload_controller.go:439, :458)
            "Workload uses DRA resources but the KueueDRAIntegration feature gate is not enabled",
            "next: Kueue runs with its KueueDRAIntegration gate off",
        ),
        (
            "KueueDRAIntegration feature does not support use of resource claims",
            "next: Kueue counts only claims made through a template",
        ),
        (  # a field error of pkg/dra/claims.go's other checks
            (
                "spec.podSets[0].template.spec.resourceClaims[1]: Invalid value: \"All\": AllocationMode 'All' is "
                "not supported"
            ),
            "next: Kueue refuses the pods' device claims as written",
        ),
    ],
)
def test_every_dra_refusal_is_told_from_a_wait_for_quota(message, next_step):
    objects, now, positions = snapshot("pending-dra-claim.yaml")
    (workload,) = o.of_kind(objects, "Workload")
    (reserved,) = [c for c in workload["status"]["conditions"] if c["type"] == "QuotaReserved"]
    reserved["message"] = message
    (job,) = training_jobs(objects)
    lines = why.explain(job, now, positions)
    assert "Kueue cannot count its pods' device claims" in lines[0]
    assert lines[-1].strip().startswith(next_step)


def test_a_condition_list_in_another_order_gives_the_same_answer():
    """Kueue appends conditions as they change; the reader keys them by type, so order never decides."""
    objects, now, positions = snapshot("evicted-requeued.yaml")
    for workload in o.of_kind(objects, "Workload"):
        workload["status"]["conditions"].reverse()
    (job,) = [j for j in training_jobs(objects) if j.kind == "Job"]
    assert job.state is State.EVICTED
    assert why.explain(job, now, positions)[0] == status("evicted-requeued.yaml", "llama31-70b-fsdp")[0]


def test_list_shows_every_job_with_its_state_flavor_and_cost_so_far():
    objects, now, positions = snapshot("list.yaml")
    rows = {row.name: row for row in listing.rows(training_jobs(objects), now, positions, PRICES)}
    assert {name: row.state for name, row in rows.items()} == {
        "llama3-8b-lr3e4-e4c7a1": "pending",
        "llama31-70b-fsdp-390a0d": "provisioning",
        "llama3-8b-75ecc4": "running",
        "llama31-70b-fsdp-1c9e42": "succeeded",
    }
    assert rows["llama3-8b-lr3e4-e4c7a1"].source == "submitted" and rows["llama3-8b-75ecc4"].source == "stack"
    running = rows["llama3-8b-75ecc4"]
    assert (running.flavor, running.accelerators) == ("v6e-16", "32 chips")
    objects_by_name = {o.name(j.job): j for j in training_jobs(objects)}
    hours = (now - objects_by_name["llama3-8b-75ecc4"].started()).total_seconds() / 3600
    assert running.cost == f"${32 * 2.0 * hours:,.2f}"  # 32 chips x $2/chip-hour since admission
    assert rows["llama31-70b-fsdp-390a0d"].cost == "$0"  # waiting for DWS costs nothing
    table = listing.table(list(rows.values()))
    assert table.splitlines()[0].split() == list(listing.COLUMNS)


def test_a_dump_that_is_not_kubectl_output_is_one_line(tmp_path):
    path = tmp_path / "dump.yaml"
    path.write_text("- just\n- a list\n")
    with pytest.raises(o.DumpError, match=r"dump.yaml: holds a list \(allowed: kubectl's -o yaml or -o json\)"):
        o.load_dump(path)
