"""Resource rules for Kubernetes objects: privileged containers and jobs that must not block `pulumi up`."""

from __future__ import annotations

import re

from pulumi_policy import ReportViolation, ResourceValidationArgs

from components.facts.gke import NCCL_INSTALLER_NAME, NCCL_INSTALLER_NAMESPACE, QUEUE_LABEL, SKIP_AWAIT_ANNOTATION
from components.facts.images import PINNED_WORDS, pin_problem
from policies.props import as_number, entries, is_true, is_unknown, items, lookup
from policies.workloads import (
    BATCH_KINDS,
    annotations_of,
    containers,
    kind_of,
    labels_of,
    object_name,
    pod_templates,
    workload_id,
)

# pulumi-kubernetes waits up to 10 minutes for a Job to complete before it reports a failure.
DEFAULT_MAX_AWAIT_SECONDS = 600


# The workloads allowed what only the host's own software needs (privilege without accelerators, the host's
# namespaces, writable host paths), as namespace/name: the NCCL gIB installer copies the plugin onto the host.
# The pack config's allowedPrivileged and allowedHostAccess replace this list.
HOST_LEVEL_WORKLOADS = (f"{NCCL_INSTALLER_NAMESPACE}/{NCCL_INSTALLER_NAME}",)


def unlisted_workload(args: ResourceValidationArgs, allow_list: str) -> tuple[str, str] | None:
    """(kind, namespace/name) of a Kubernetes workload the pack config's `allow_list` does not name; None for
    anything else (not Kubernetes, or listed). The list defaults to the host-level workloads."""
    kind = kind_of(args.resource_type)
    workload = workload_id(args.props, args.name)
    if kind is None or workload in args.get_config().get(allow_list, list(HOST_LEVEL_WORKLOADS)):
        return None
    return kind, workload


def privileged_only_where_allowed(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Privileged containers only in workloads the pack config names (allowedPrivileged).

    No trainer needs privilege on the GKE versions trainyard supports: TPU containers do not from GKE 1.28,
    and A4 pods reach their GPUs and RDMA NICs through the device plugin and multi-networking
    (docs/cloud-facts.md: privileges). Anywhere else privilege is a node takeover waiting to happen, and asking
    for an accelerator does not change that.
    """
    target = unlisted_workload(args, "allowedPrivileged")
    if target is None:
        return
    kind, workload = target
    for template in pod_templates(kind, args.props):
        for container in containers(template.spec):
            if is_true(lookup(container, "securityContext.privileged")):
                report_violation(
                    f"{kind} '{workload}' {template.where}: container '{lookup(container, 'name')}' is privileged "
                    "and the workload is not in allowedPrivileged.",
                    None,
                )


HOST_NAMESPACES = ("hostPID", "hostNetwork", "hostIPC")


def host_access_only_where_allowed(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """hostPID, hostNetwork, hostIPC and writable hostPath mounts only in workloads the pack config names.

    Each reaches past the container into the node: its processes, its network, or files the next pod (or
    the kubelet) will trust. Read-only hostPath mounts are allowed everywhere.
    """
    target = unlisted_workload(args, "allowedHostAccess")
    if target is None:
        return
    kind, workload = target
    for template in pod_templates(kind, args.props):
        used = [field for field in HOST_NAMESPACES if is_true(lookup(template.spec, field))]
        host_paths = {
            lookup(volume, "name") for volume in items(template.spec, "volumes") if lookup(volume, "hostPath")
        }
        for container in containers(template.spec):
            for mount in items(container, "volumeMounts"):
                if lookup(mount, "name") in host_paths and not is_true(lookup(mount, "readOnly")):
                    used.append(f"writable hostPath mount {lookup(mount, 'mountPath')}")
        if used:
            report_violation(
                f"{kind} '{workload}' {template.where}: {', '.join(used)}; not in allowedHostAccess.", None
            )


def images_pinned(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Every container image pinned by digest or an exact version tag.

    A moving tag (:latest, or none) lets two pods of one job, or a job and its restart after preemption,
    run different code; an image the stack builds reaches pods as tag@digest. Images still to be built
    (unknown in a preview) are checked once known.
    """
    kind = kind_of(args.resource_type)
    if kind is None:
        return
    for template in pod_templates(kind, args.props):
        for container in containers(template.spec):
            image = lookup(container, "image")
            if not isinstance(image, str) or is_unknown(image):
                continue
            problem = pin_problem(image)
            if problem:
                report_violation(
                    f"{kind} '{args.name}' {template.where}: container '{lookup(container, 'name')}' image "
                    f"'{image}': {problem} (allowed: {PINNED_WORDS}).",
                    None,
                )


# Values that are credentials whatever their name: Hugging Face, GitHub, AWS, Slack tokens, private keys.
SECRET_VALUE = re.compile(
    r"hf_[A-Za-z0-9]{30,}|gh[pousr]_[A-Za-z0-9]{36,}|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
)
SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|PRIVATE_KEY|CREDENTIALS?)$", re.IGNORECASE)


def no_secret_literals(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """No credential written as a literal in a container's env or a ConfigMap.

    Literals end up in the plan, the state, `kubectl describe` and every log of the object; a credential
    belongs in a Secret (env valueFrom.secretKeyRef), created from a Pulumi secret.
    """
    kind = kind_of(args.resource_type)
    if kind is None:
        return
    where = f"{kind} '{object_name(args.props, args.name)}'"
    if kind == "ConfigMap":
        for key, value in entries(args.props, "data").items():
            if isinstance(value, str) and SECRET_VALUE.search(value):
                report_violation(f"{where}: data.{key} holds a credential-looking literal.", None)
        return
    for template in pod_templates(kind, args.props):
        for container in containers(template.spec):
            for variable in items(container, "env"):
                name, value = lookup(variable, "name"), lookup(variable, "value")
                if not isinstance(value, str) or not value or is_unknown(value):
                    continue
                if SECRET_NAME.search(str(name)) or SECRET_VALUE.search(value):
                    report_violation(
                        f"{where} {template.where}: container '{lookup(container, 'name')}' sets {name} to a "
                        "literal; take it from a Secret (valueFrom.secretKeyRef).",
                        None,
                    )


def long_running_jobs_skip_await(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Jobs that wait for capacity or train for long carry pulumi.com/skipAwait: "true".

    pulumi-kubernetes otherwise blocks `pulumi up` until the Job finishes (and fails it after 10 minutes): a
    Job queued by Kueue, or without an activeDeadlineSeconds within the await limit, would hang the update.
    """
    kind = kind_of(args.resource_type)
    if kind not in BATCH_KINDS:
        return
    if is_unknown(lookup(args.props, "metadata.annotations")) or is_true(
        annotations_of(args.props).get(SKIP_AWAIT_ANNOTATION)
    ):
        return
    limit = float(args.get_config().get("maxAwaitSeconds", DEFAULT_MAX_AWAIT_SECONDS))
    reason = _long_running_reason(args, limit)
    if reason:
        report_violation(
            f"{kind} '{args.name}' {reason}; add metadata.annotations['{SKIP_AWAIT_ANNOTATION}'] = 'true'.",
            None,
        )


def _long_running_reason(args: ResourceValidationArgs, limit: float) -> str | None:
    props = args.props
    if is_true(lookup(props, "spec.suspend")):
        return "starts suspended (waits for Kueue admission)"
    if QUEUE_LABEL in labels_of(props):
        return f"is queued by Kueue ({QUEUE_LABEL})"
    deadline = lookup(props, "spec.activeDeadlineSeconds")
    if is_unknown(deadline):
        return None
    seconds = as_number(deadline)
    if seconds is None:
        return "has no spec.activeDeadlineSeconds (may run for hours)"
    if seconds > limit:
        return f"may run {seconds:g} s, longer than the {limit:g} s pulumi waits"
    return None
