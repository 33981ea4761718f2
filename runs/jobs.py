"""Training jobs as a cluster shows them: each Job or RayJob with the objects that say where it is (its Kueue
Workload, the ProvisioningRequests of that Workload, its pods and their events), and the one state it is in.

Kueue v0.19.2 writes a Workload's progress as conditions (apis/kueue/v1beta2/workload_types.go): QuotaReserved,
Admitted, PodsReady, Evicted, Requeued, Preempted, Finished; its admission checks' states in status.admissionChecks.
The state is read from those by type, never from the list's order or the newest condition alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from components.facts import gke
from components.facts.kueue_release import HEAD_POD_SET, SUBMITTER_POD_SET
from preflight.checks.kueue_objects import pod_sets
from preflight.checks.pods import pod_requests
from runs import objects as o
from runs.submit import SUBMITTED_BY, SUBMITTED_LABEL

JOB_KINDS = ("Job", "RayJob")
RAY_CLUSTER_LABEL = "ray.io/cluster"  # KubeRay's label on a RayCluster's pods
# Pod sets of a RayJob's own pods (Kueue's names): they hold no accelerator, so no flavor of the job's.
RAY_OWN_POD_SETS = (HEAD_POD_SET, SUBMITTER_POD_SET)


class State(StrEnum):
    NOT_QUEUED = "not queued"  # no Workload: Kueue does not manage it (no queue label, or Kueue is down)
    PENDING = "pending"  # waits for quota in its ClusterQueue
    PROVISIONING = "provisioning"  # quota reserved, an admission check (DWS) not yet ready
    EVICTED = "evicted"  # admitted once, evicted, back in the queue
    ADMITTED = "admitted"  # admitted, its pods not all running yet
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass
class TrainingJob:
    job: Mapping[str, Any]  # the Job or RayJob
    workload: Mapping[str, Any] | None = None
    provisioning: list[Mapping[str, Any]] = field(default_factory=list)  # its ProvisioningRequests, oldest first
    ray_cluster: Mapping[str, Any] | None = None
    pods: list[Mapping[str, Any]] = field(default_factory=list)
    events: list[Mapping[str, Any]] = field(default_factory=list)  # about the job, its workload and pods

    @property
    def name(self) -> str:
        return o.name(self.job)

    @property
    def kind(self) -> str:
        return o.kind(self.job)

    @property
    def workload_label(self) -> str:
        return o.labels(self.job).get(gke.WORKLOAD_LABEL, self.name)

    @property
    def submitted(self) -> bool:
        return o.labels(self.job).get(SUBMITTED_LABEL) == SUBMITTED_BY

    @property
    def conditions(self) -> dict[str, o.Condition]:
        return o.conditions(self.workload) if self.workload else {}

    @property
    def admission(self) -> Mapping[str, Any]:
        value = o.status(self.workload).get("admission") if self.workload else None
        return value if isinstance(value, Mapping) else {}

    @property
    def flavors(self) -> dict[str, str]:
        """Pod set -> the flavor of its accelerator (or first) resource, as Kueue admitted it."""
        found = {}
        for assignment in self.admission.get("podSetAssignments") or []:
            assigned = assignment.get("flavors") or {}
            chosen = next((assigned[r] for r in gke.ACCELERATOR_RESOURCES if r in assigned), None)
            found[str(assignment.get("name"))] = chosen or next(iter(assigned.values()), "?")
        return found

    @property
    def accelerators(self) -> tuple[str, int]:
        """(resource, count) the job asks for in all, chips or GPUs, over its pod sets as Kueue counts them."""
        counts = dict.fromkeys(gke.ACCELERATOR_RESOURCES, 0)
        for pod_set in pod_sets(self.kind, self.job):
            requests = pod_requests(pod_set.spec, list(gke.ACCELERATOR_RESOURCES))
            for resource in counts:
                counts[resource] += int(requests.get(resource, 0)) * pod_set.count
        resource = max(counts, key=counts.__getitem__)
        return (resource, counts[resource]) if counts[resource] else (gke.GPU_RESOURCE, 0)

    @property
    def accelerator_text(self) -> str:
        """`32 chips`, `16 GPUs`, or `-` for a job without accelerators."""
        resource, count = self.accelerators
        return f"{count} {'chips' if resource == gke.TPU_RESOURCE else 'GPUs'}" if count else "-"

    @property
    def accelerator_flavors(self) -> list[str]:
        """The flavors Kueue admitted the job's accelerator pod sets on (a RayJob's head and submitter left out)."""
        flavors = [flavor for pod_set, flavor in self.flavors.items() if pod_set not in RAY_OWN_POD_SETS]
        return list(dict.fromkeys(flavors or self.flavors.values()))

    @property
    def admission_checks(self) -> list[Mapping[str, Any]]:
        return list(o.status(self.workload).get("admissionChecks") or []) if self.workload else []

    @property
    def requeues(self) -> int:
        state = o.status(self.workload).get("requeueState") if self.workload else None
        return int((state or {}).get("count") or 0) if isinstance(state, Mapping) else 0

    def pods_in_phase(self, phase: str) -> list[Mapping[str, Any]]:
        return [pod for pod in self.pods if o.status(pod).get("phase") == phase]

    @property
    def state(self) -> State:
        finished = self.finished_as()
        if finished is not None:
            return finished
        if self.workload is None:
            return State.NOT_QUEUED
        conditions = self.conditions
        if _true(conditions, "Admitted"):
            return State.RUNNING if self.running() else State.ADMITTED
        if _true(conditions, "QuotaReserved"):
            return State.PROVISIONING
        if _true(conditions, "Evicted") or self.requeues:
            return State.EVICTED
        return State.PENDING

    def finished_as(self) -> State | None:
        """SUCCEEDED or FAILED from Kueue's Finished condition, else from the job's own status."""
        finished = self.conditions.get("Finished")
        if finished and finished.true:
            return State.SUCCEEDED if finished.reason == "Succeeded" else State.FAILED
        job_conditions = o.conditions(self.job)
        if self.kind == "Job":
            if _true(job_conditions, "Complete"):
                return State.SUCCEEDED
            if _true(job_conditions, "Failed"):
                return State.FAILED
        if self.kind == "RayJob":
            status = o.status(self.job)
            if status.get("jobDeploymentStatus") == "Complete" and status.get("jobStatus") == "SUCCEEDED":
                return State.SUCCEEDED
            if status.get("jobDeploymentStatus") == "Failed" or status.get("jobStatus") in ("FAILED", "STOPPED"):
                return State.FAILED
        return None

    def running(self) -> bool:
        if _true(self.conditions, "PodsReady"):
            return True
        return bool(self.pods) and not self.pods_in_phase("Pending") and bool(self.pods_in_phase("Running"))

    def started(self) -> datetime | None:
        admitted = self.conditions.get("Admitted")
        return admitted.since if admitted and admitted.true else None


def training_jobs(objects: Sequence[Mapping[str, Any]]) -> list[TrainingJob]:
    """Every Job and RayJob of the objects with what belongs to it; Jobs a RayJob runs (its submitter) are part of
    their RayJob, not jobs of their own."""
    workloads = o.of_kind(objects, "Workload")
    requests = o.of_kind(objects, "ProvisioningRequest")
    clusters = o.of_kind(objects, "RayCluster")
    rayjobs = o.of_kind(objects, "RayJob")
    found = []
    for job in (obj for obj in objects if o.kind(obj) in JOB_KINDS):
        if o.kind(job) == "Job" and any(o.owned_by(job, rayjob) for rayjob in rayjobs):
            continue
        entry = TrainingJob(job)
        entry.workload = next((w for w in workloads if o.owned_by(w, job)), None)
        if entry.workload is not None:
            prefix = o.name(entry.workload) + "-"
            entry.provisioning = sorted(
                (r for r in requests if o.name(r).startswith(prefix) or o.owned_by(r, entry.workload)),
                key=lambda r: o.created(r) or datetime.min.replace(tzinfo=o.UTC),
            )
        entry.ray_cluster = next((c for c in clusters if o.owned_by(c, job)), None)
        entry.pods = _pods_of(objects, entry)
        entry.events = _events_of(objects, entry)
        found.append(entry)
    return found


def find(jobs: Sequence[TrainingJob], name: str) -> TrainingJob | None:
    """By object name, or by the stack's job name (its workload label): `llama3-8b` finds `llama3-8b-fcd617`."""
    exact = [job for job in jobs if job.name == name]
    by_label = [job for job in jobs if job.workload_label == name]
    matches = exact or by_label
    return max(matches, key=lambda job: o.created(job.job) or datetime.min.replace(tzinfo=o.UTC), default=None)


def _pods_of(objects: Sequence[Mapping[str, Any]], entry: TrainingJob) -> list[Mapping[str, Any]]:
    cluster = o.name(entry.ray_cluster) if entry.ray_cluster else None
    pods = []
    for pod in o.of_kind(objects, "Pod"):
        pod_labels = o.labels(pod)
        if (
            entry.kind == "Job"
            and pod_labels.get(gke.JOB_NAME_POD_LABEL) == entry.name
            or cluster
            and pod_labels.get(RAY_CLUSTER_LABEL) == cluster
        ):
            pods.append(pod)
    return pods


def _events_of(objects: Sequence[Mapping[str, Any]], entry: TrainingJob) -> list[Mapping[str, Any]]:
    about = {(o.kind(entry.job), entry.name)} | {("Pod", o.name(pod)) for pod in entry.pods}
    if entry.workload:
        about.add(("Workload", o.name(entry.workload)))
    events = [
        event
        for event in o.of_kind(objects, "Event")
        if ((event.get("involvedObject") or {}).get("kind"), (event.get("involvedObject") or {}).get("name")) in about
    ]
    return sorted(events, key=lambda e: o.timestamp(e.get("lastTimestamp") or e.get("eventTime")) or _EPOCH)


_EPOCH = datetime.min.replace(tzinfo=o.UTC)


def _true(conditions: Mapping[str, o.Condition], kind: str) -> bool:
    condition = conditions.get(kind)
    return bool(condition and condition.true)
