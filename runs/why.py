"""`trainyard job status NAME` (alias `why`): in a few lines, why a job is where it is and what to do next.

The first line names the cause; the lines after it give the evidence (Kueue's and GKE's own words, quoted) and
the next step. Sources, all read by condition type: the Workload's conditions and admission checks (Kueue v0.19.2),
the ProvisioningRequest's conditions (the cluster autoscaler's API, GKE's DWS), pods still Pending and their
scheduling events, a RayJob's head, and the queue position from Kueue's visibility API.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from components.facts import gke, nvidia_dra
from runs import objects as o
from runs.jobs import State, TrainingJob

# The ProvisioningRequest condition types GKE's autoscaler sets (autoscaling.x-k8s.io/v1), in the order a request
# moves through them; each that is True ends the wait in its own way.
_REQUEST_ENDINGS = {
    "Failed": "DWS could not provision the nodes",
    "BookingExpired": "DWS provisioned the nodes, but the pods did not start on them in time and the booking expired",
    "CapacityRevoked": "DWS took the nodes back (the run window ended or capacity was reclaimed)",
}
# Kueue's refusals of a workload's DRA claims (pkg/dra/claims.go, v0.19.2): it reserves no quota until they are fixed.
_MISSING_TEMPLATE = re.compile(r"failed to get claim spec for ResourceClaimTemplate (\S+) in podset \S+: (.*)")
_UNMAPPED_CLASS = re.compile(r"DeviceClass (\S+) is not mapped in DRA configuration")
# Any of Kueue's DRA refusals: a field error under a pod set's claims, the gate off, a claim by name
# (pkg/controller/core/workload_controller.go:430-496).
_DRA_REFUSAL = re.compile(r"resourceClaims\[|Workload uses DRA resources|does not support use of resource claims")


def explain(
    job: TrainingJob,
    now: datetime,
    positions: Mapping[str, int] | None = None,
    holders: Sequence[str] = (),
    others: Sequence[TrainingJob] = (),
) -> list[str]:
    """The lines `status` prints. `positions`: workload name -> position in its ClusterQueue (visibility API);
    `holders`: admitted workloads of the same ClusterQueue, as `name (chips on flavor)`; `others`: the namespace's
    jobs, to name a preemptor Kueue gives by its Workload's UID."""
    state = job.state
    lines = _by_state[state](job, now, positions or {}, holders)
    if state is State.EVICTED and (preemptor := _preemptor(job, others)):
        lines.insert(1, f"preempted by {preemptor.kind} {preemptor.name}")
    return [f"{job.kind} {job.name}: {lines[0]}", *(f"  {line}" for line in lines[1:])]


def _preemptor(job: TrainingJob, others: Sequence[TrainingJob]) -> TrainingJob | None:
    """Kueue names the workload that preempted this one by UID (pkg/scheduler/preemption/preemption.go)."""
    preempted = job.conditions.get("Preempted") or job.conditions.get("Evicted")
    found = re.search(r"\(UID: ([0-9a-f-]+)", preempted.message) if preempted else None
    if not found:
        return None
    uid = found.group(1)
    return next((other for other in others if other.workload and o.meta(other.workload).get("uid") == uid), None)


def _not_queued(job: TrainingJob, now: datetime, positions: Mapping[str, int], holders: Sequence[str]) -> list[str]:
    queue = o.labels(job.job).get(gke.QUEUE_LABEL)
    if not queue:
        return [
            f"not queued: it has no {gke.QUEUE_LABEL} label, so Kueue never admits it",
            "next: submit it with `trainyard job submit`, which labels it for the stack's LocalQueue",
        ]
    return [
        (
            f"not queued: Kueue has made no Workload for it (queue {queue}), {o.age(o.created(job.job), now)} after it "
            "was created"
        ),
        (
            "next: check that Kueue's controller runs (`kubectl -n kueue-system get pods`) and that the LocalQueue "
            f"{queue} exists in this namespace"
        ),
    ]


def _pending(job: TrainingJob, now: datetime, positions: Mapping[str, int], holders: Sequence[str]) -> list[str]:
    reserved = job.conditions.get("QuotaReserved")
    since = reserved.since if reserved else o.created(job.workload or job.job)
    position = positions.get(o.name(job.workload or {}))
    where = f", position {position + 1} in its ClusterQueue" if position is not None else ""
    if reserved and _DRA_REFUSAL.search(reserved.message):
        return _claims_refused(job, reserved.message, o.age(since, now))
    lines = [f"pending for {o.age(since, now)}: waiting for quota{where}"]
    if reserved and reserved.message:
        lines.append(f"Kueue: {reserved.message}")
    if holders:
        lines.append(f"quota held by: {', '.join(holders)}")
    lines.append(
        "next: it starts when they finish; to start sooner, cancel one (`trainyard job cancel NAME`) or ask for fewer "
        "nodes or slices"
    )
    return lines


def _claims_refused(job: TrainingJob, message: str, age: str) -> list[str]:
    """Kueue cannot count the devices the job's pods claim: no quota is even asked for until that is fixed."""
    lines = [f"pending for {age}: Kueue cannot count its pods' device claims, so it asks no quota", f"Kueue: {message}"]
    return [*lines, f"next: {_claims_next(job, message)}"]


def _claims_next(job: TrainingJob, message: str) -> str:
    unread, unmapped = _MISSING_TEMPLATE.search(message), _UNMAPPED_CLASS.search(message)
    if unread:
        return _template_next(job, *unread.groups())
    if unmapped:
        return (
            f"the stack's Kueue configuration counts no resource for device class {unmapped.group(1)} (it maps those "
            "of the stack's own pools): run the job on a pool of the stack"
        )
    if "Workload uses DRA resources" in message:
        return "Kueue runs with its KueueDRAIntegration gate off (on in the stack's release): check its --feature-gates"
    if "use of resource claims" in message:  # a pod naming a ResourceClaim
        return "Kueue counts only claims made through a template (resourceClaimTemplateName), not a ResourceClaim"
    return "Kueue refuses the pods' device claims as written (its message above): claim as the stack's own jobs do"


def _template_next(job: TrainingJob, template: str, error: str) -> str:
    if "not found" not in error:
        return f"Kueue could not read ResourceClaimTemplate {template} ({error}): check its access to the API server"
    namespace = o.meta(job.job).get("namespace", "default")
    retried = "Kueue tries again by itself (controller-runtime's backoff: at most ~17 minutes apart) once it exists"
    domain = nvidia_dra.compute_domain_of_template(template)
    if domain:
        return (
            f"NVIDIA's DRA driver makes {template} for the ComputeDomain {domain}: check that it exists (`kubectl -n "
            f"{namespace} get computedomain {domain}`) and that the driver runs (`kubectl -n {nvidia_dra.NAMESPACE} "
            f"get pods`); {retried}"
        )
    return (
        f"no ResourceClaimTemplate {template} in namespace {namespace}: a template of the stack (RDMA or DCN NICs) "
        f"comes back with `pulumi up`, a submitted job's with `trainyard job submit`; {retried}"
    )


def _provisioning(job: TrainingJob, now: datetime, positions: Mapping[str, int], holders: Sequence[str]) -> list[str]:
    request = job.provisioning[-1] if job.provisioning else None
    checks = [c for c in job.admission_checks if c.get("state") != "Ready"]
    if request is None:
        names = ", ".join(f"{c.get('name')} ({c.get('state')}: {c.get('message', '')})" for c in checks) or "none"
        return [
            "quota reserved, waiting for its admission checks",
            f"checks not ready: {names}",
            "next: wait; Kueue admits it once every check is Ready",
        ]
    conditions = o.conditions(request)
    ended = next((c for kind, c in conditions.items() if kind in _REQUEST_ENDINGS and c.true), None)
    if ended:
        return _request_ended(job, request, ended, now)
    accepted = conditions.get("Accepted")
    since = accepted.since if accepted and accepted.true else o.created(request)
    provisioned = conditions.get("Provisioned")
    lines = [
        f"waiting for DWS capacity for {o.age(since, now)}: ProvisioningRequest {o.name(request)} is not provisioned"
    ]
    if provisioned and provisioned.message:
        lines.append(f"GKE: {provisioned.message}")
    elif accepted and accepted.message:
        lines.append(f"GKE: {accepted.message}")
    lines.append(
        "next: DWS keeps the request until capacity frees up (nodes come all at once; nothing is billed meanwhile); "
        "a shorter maxRunDurationSeconds or fewer nodes can be found sooner"
    )
    return lines


def _request_ended(job: TrainingJob, request: Mapping[str, Any], ended: o.Condition, now: datetime) -> list[str]:
    lines = [f"{_REQUEST_ENDINGS[ended.type]} ({ended.type} {o.age(ended.since, now)} ago)"]
    if ended.message:
        lines.append(f"GKE: {ended.message}")
    check = next((c for c in job.admission_checks if c.get("state") in ("Retry", "Rejected")), None)
    if check and check.get("state") == "Rejected":
        lines.append(f"Kueue rejected the admission check {check.get('name')}: the job is deactivated")
        lines.append("next: fix the cause above and submit it again")
    else:
        lines.append(f"Kueue retries with a new ProvisioningRequest (attempt {len(job.provisioning) + 1})")
        lines.append("next: wait, or cancel it if the cause above will not pass")
    return lines


def _evicted(job: TrainingJob, now: datetime, positions: Mapping[str, int], holders: Sequence[str]) -> list[str]:
    evicted = job.conditions.get("Evicted")
    preempted = job.conditions.get("Preempted")
    requeue = o.status(job.workload or {}).get("requeueState") or {}
    reason = evicted.reason if evicted else "requeued"
    words, step = _EVICTIONS.get(reason, (reason, "it is admitted again when quota frees up"))
    lines = [f"evicted {o.age(evicted.since if evicted else None, now)} ago: {words}; back in the queue"]
    messages = [c.message for c in (evicted, preempted) if c and c.message]
    lines += [f"Kueue: {message}" for message in dict.fromkeys(messages)]
    if job.requeues:
        again = o.timestamp(requeue.get("requeueAt")) if isinstance(requeue, Mapping) else None
        when = f", next try in {o.age(now, again)}" if again and again > now else ""
        lines.append(f"requeued {job.requeues} time(s){when}")
    lines.append(f"next: {step}")
    return lines


# Kueue v0.19.2's eviction reasons (apis/kueue/v1beta2/workload_types.go WorkloadEvictedBy*): what happened, and
# what to do.
_EVICTIONS = {
    "PodsReadyTimeout": (
        "its pods were not all ready within Kueue's waitForPodsReady timeout",
        (
            "it is admitted again when quota frees up; evictions that repeat mean its pods cannot start: read their "
            "events (`kubectl describe pod`) or a log (`trainyard job logs`)"
        ),
    ),
    "Preempted": (
        "preempted to make room for another workload",
        "it is admitted again when the preemptor finishes; it resumes from its newest checkpoint",
    ),
    "AdmissionCheck": (
        "its admission check (DWS) failed",
        (
            "Kueue retries with a new ProvisioningRequest after a backoff; if GKE's reason above repeats (capacity in "
            "the zone), ask for fewer nodes or another zone"
        ),
    ),
    "InactiveWorkload": ("deactivated", "it stays stopped until it is submitted again"),
    "NodeFailures": ("a node it ran on failed", "it is admitted again and resumes from its newest checkpoint"),
}


def _admitted(job: TrainingJob, now: datetime, positions: Mapping[str, int], holders: Sequence[str]) -> list[str]:
    pending = job.pods_in_phase("Pending")
    flavors = _flavor_text(job)
    if job.kind == "RayJob" and job.ray_cluster is not None and not job.pods_in_phase("Running"):
        head = [pod for pod in pending if o.labels(pod).get(gke.RAY_NODE_TYPE_LABEL) == "head"]
        if head:
            return [
                f"admitted on {flavors}, but the Ray head pod {o.name(head[0])} is Pending",
                *_scheduling_words(job, head[0]),
                "next: the head lands on the system pool; free room there or lower trainyard:jobs.ray.headCpu",
            ]
    if not job.pods:
        status = o.status(job.job)
        deployment = status.get("jobDeploymentStatus")
        return [
            f"admitted on {flavors}, its pods not created yet{f' ({deployment})' if deployment else ''}",
            "next: wait a minute; the job controller creates the pods once Kueue unsuspends it",
        ]
    lines = [f"admitted on {flavors}, {len(pending)} of {len(job.pods)} pods Pending"]
    if pending:
        lines += _scheduling_words(job, pending[0])
    lines.append("next: nodes are being added (autoscaling) or the pods do not fit the nodes: see the events above")
    return lines


def _running(job: TrainingJob, now: datetime, positions: Mapping[str, int], holders: Sequence[str]) -> list[str]:
    running = len(job.pods_in_phase("Running"))
    return [
        f"running for {o.age(job.started(), now)} on {_flavor_text(job)}: {running} pods, {job.accelerator_text}",
        f"next: `trainyard job logs {job.workload_label}` to follow it",
    ]


def _succeeded(job: TrainingJob, now: datetime, positions: Mapping[str, int], holders: Sequence[str]) -> list[str]:
    finished = job.conditions.get("Finished")
    return [
        f"succeeded {o.age(finished.since if finished else None, now)} ago",
        *([f"Kueue: {finished.message}"] if finished and finished.message else []),
        "its checkpoints and outputs stay in the bucket",
    ]


def _failed(job: TrainingJob, now: datetime, positions: Mapping[str, int], holders: Sequence[str]) -> list[str]:
    finished = job.conditions.get("Finished")
    own = o.conditions(job.job).get("Failed")
    status = o.status(job.job)
    message = (finished.message if finished else "") or (own.message if own else "") or str(status.get("message", ""))
    reason = (own.reason if own else "") or str(status.get("reason", ""))
    return [
        (
            f"failed {o.age(finished.since if finished else (own.since if own else None), now)} ago"
            f"{f' ({reason})' if reason else ''}"
        ),
        *([f"why: {message}"] if message else []),
        (
            f"next: `trainyard job logs {job.workload_label}` shows the trainer's last lines; the newest complete "
            "checkpoint is kept, and a new submission resumes from it"
        ),
    ]


def _flavor_text(job: TrainingJob) -> str:
    return ", ".join(job.accelerator_flavors) or "?"


def _scheduling_words(job: TrainingJob, pod: Mapping[str, Any]) -> list[str]:
    scheduled = o.conditions(pod).get("PodScheduled")
    events = [e for e in job.events if (e.get("involvedObject") or {}).get("name") == o.name(pod)]
    message = str(events[-1].get("message", "")) if events else (scheduled.message if scheduled else "")
    return [f"scheduler: {message}"] if message else []


_by_state = {
    State.NOT_QUEUED: _not_queued,
    State.PENDING: _pending,
    State.PROVISIONING: _provisioning,
    State.EVICTED: _evicted,
    State.ADMITTED: _admitted,
    State.RUNNING: _running,
    State.SUCCEEDED: _succeeded,
    State.FAILED: _failed,
}
