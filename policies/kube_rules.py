"""Rules for Kubernetes objects: privileged containers, host access, pinned images from allowed registries, and jobs
that must not block `pulumi up`."""

from __future__ import annotations

import posixpath
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs, StackValidationArgs

from components.facts.gke import QUEUE_LABEL, SKIP_AWAIT_ANNOTATION
from components.facts.host_workloads import HOST_NAMESPACES, READ_ONLY_HOST_PATHS
from components.facts.images import (
    PINNED_WORDS,
    REPOSITORY_TYPE,
    TRUSTED_REGISTRIES,
    image_source,
    pin_problem,
    repository_path,
    within_registry,
)
from policies.allow_lists import unlisted_workload
from policies.props import UNKNOWN, as_number, is_true, is_unknown, items, lookup
from policies.workloads import (
    BATCH_KINDS,
    annotations_of,
    containers,
    kind_of,
    labels_of,
    object_name,
    pod_templates,
)

# pulumi-kubernetes waits up to 10 minutes for a Job to complete before it reports a failure.
DEFAULT_MAX_AWAIT_SECONDS = 600


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


def host_access_only_where_allowed(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """hostPID, hostNetwork, hostIPC, writable hostPaths and hostPaths outside the GPU library folders only where
    allowed.

    Each reaches past the container into the node: its processes, its network, files the next pod (or the
    kubelet) will trust, or, read-only, what the node keeps (the kubelet's directory holds every pod's Secrets and
    tokens; `/`, /var, /etc, /home hold the rest, and a container running as its image's root reads all of it).
    A deny-list of such folders always misses one, so read-only hostPaths are judged by an allow-list: the driver
    and gIB library folders the FSDP trainer loads (components/facts/host_workloads.py), and folders inside them.
    """
    target = unlisted_workload(args, "allowedHostAccess")
    if target is None:
        return
    kind, workload = target
    for template in pod_templates(kind, args.props):
        used = [field for field in HOST_NAMESPACES if is_true(lookup(template.spec, field))]
        host_paths = {
            lookup(volume, "name"): lookup(volume, "hostPath.path")
            for volume in items(template.spec, "volumes")
            if lookup(volume, "hostPath")
        }
        used += [f"hostPath {path}" for path in host_paths.values() if not _library_folder(path)]
        for container in containers(template.spec):
            for mount in items(container, "volumeMounts"):
                if lookup(mount, "name") in host_paths and not is_true(lookup(mount, "readOnly")):
                    used.append(f"writable hostPath mount {lookup(mount, 'mountPath')}")
        if used:
            report_violation(
                f"{kind} '{workload}' {template.where}: {', '.join(used)}; not in allowedHostAccess.", None
            )


def _library_folder(path: Any) -> bool:
    """One of the GPU library folders or a folder inside one (normalized: `..` cannot climb out); a path a preview
    does not know yet passes until it is known."""
    if is_unknown(path):
        return True
    if not isinstance(path, str) or not path.startswith("/"):
        return False
    path = posixpath.normpath(path)
    return any(path == folder or path.startswith(f"{folder}/") for folder in READ_ONLY_HOST_PATHS)


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


def images_from_allowed_registries(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Every container image comes from the stack's own Artifact Registry or a registry the pack config allows.

    A pinned tag says which version, not whose image: `nginx:1.27.3` is whatever Docker Hub's account holds under
    that tag, and a registry one letter from a real one serves what its owner likes. Images come from the stack's
    Artifact Registry repositories (which only the deploy account writes) and allowedRegistries (a host, or a host
    and path prefix: by default GKE's, Kubernetes', and Google's gIB and TPU images), judged by the reference's host
    and path as a registry resolves them, never by substring. Images still to be built are checked once known.
    """
    own = [_repository(resource.props) for resource in args.resources if resource.resource_type == REPOSITORY_TYPE]
    if any(is_unknown(path) for path in own):
        return  # a repository's place is unknown during preview: its images cannot be told from others yet
    allowed = [*filter(None, own), *args.get_config().get("allowedRegistries", list(TRUSTED_REGISTRIES))]
    for resource in args.resources:
        kind = kind_of(resource.resource_type)
        for template in pod_templates(kind, resource.props) if kind else []:
            for container in containers(template.spec):
                image = lookup(container, "image")
                if not isinstance(image, str) or is_unknown(image):
                    continue
                source = image_source(image)
                if source is None or not any(within_registry(source, registry) for registry in allowed):
                    report_violation(
                        f"{kind} '{object_name(resource.props, resource.name)}' {template.where}: container "
                        f"'{lookup(container, 'name')}' image '{image}' comes from {source or 'no registry'}, "
                        "outside the stack's repositories and allowedRegistries.",
                        resource.urn,
                    )


def _repository(props: Any) -> Any:
    """host/project/repository of an Artifact Registry repository: UNKNOWN while a part is, None without one."""
    parts = [lookup(props, key) for key in ("location", "project", "repositoryId")]
    if any(is_unknown(part) for part in parts):
        return UNKNOWN
    if not all(isinstance(part, str) and part for part in parts):
        return None
    location, project, repository = parts
    return repository_path(location.lower(), project, repository)


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
