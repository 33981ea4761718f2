"""Resource rules for how pods run: the restricted Pod Security profile's container settings and the service
account token, for every pod template the stack builds (Jobs, Deployments, DaemonSets, Ray head and workers).

Allow-lists name `Kind/namespace/name` (policies/allow_lists.py); by default only the NCCL installer, an accepted
risk, is listed, and only in its shape. No workload is listed for the API token by default: the installer mounts
none. The token rule is judged over the whole stack: a pod may mount its token when a binding of the stack grants
its account API access, whatever the pod is named.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs, StackValidationArgs

from policies.allow_lists import unlisted_workload, workload_ref
from policies.props import is_true, is_unknown, items, lookup
from policies.workloads import (
    RAY_KINDS,
    PodTemplate,
    containers,
    kind_of,
    namespace_of,
    pod_templates,
    ray_cluster_spec,
)

# The one capability the restricted Pod Security profile lets a container add (Kubernetes docs: Pod Security
# Standards, restricted: "Capabilities").
ADDABLE_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})
UNCONFINED = "Unconfined"


def pods_run_restricted(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Containers add no capability, never escalate privileges, never run as root or without seccomp.

    The restricted Pod Security profile, as far as a workload can break it: an added capability (SYS_ADMIN,
    NET_RAW, ...), privilege escalation (set true, or left unset: Kubernetes defaults it to allowed), uid 0 or
    runAsNonRoot false, and a seccomp profile `Unconfined` each widen what a compromised trainer reaches on its
    node. Every pod the stack builds runs without them (components/jobs/pod_security.py); only the workloads in
    allowedUnrestricted may.
    """
    target = unlisted_workload(args, "allowedUnrestricted")
    if target is None:
        return
    kind, workload = target
    for template in pod_templates(kind, args.props):
        for problem in _restricted_problems(template):
            report_violation(f"{kind} '{workload}' {template.where}: {problem}; not in allowedUnrestricted.", None)


def _restricted_problems(template: PodTemplate) -> list[str]:
    pod_context = lookup(template.spec, "securityContext")
    problems = [f"pod {problem}" for problem in _identity_problems(pod_context)]
    for container in containers(template.spec):
        context = lookup(container, "securityContext")
        where = f"container '{lookup(container, 'name')}'"
        added = [c for c in items(context, "capabilities.add") if isinstance(c, str) and c not in ADDABLE_CAPABILITIES]
        if added:
            problems.append(f"{where} adds capabilities {', '.join(added)}")
        escalation = lookup(context, "allowPrivilegeEscalation")
        if not is_unknown(escalation) and escalation is not False and not is_true(lookup(context, "privileged")):
            shown = "unset (Kubernetes allows it)" if escalation is None else repr(escalation)
            problems.append(f"{where} allowPrivilegeEscalation is {shown}, must be false")
        problems += [f"{where} {problem}" for problem in _identity_problems(context)]
    return problems


def _identity_problems(context: Any) -> list[str]:
    """uid 0, runAsNonRoot false, an Unconfined seccomp profile, set on a pod or a container."""
    problems = []
    user = lookup(context, "runAsUser")
    if not isinstance(user, bool) and user == 0:
        problems.append("runs as uid 0 (runAsUser: 0)")
    if lookup(context, "runAsNonRoot") is False:
        problems.append("sets runAsNonRoot: false")
    if lookup(context, "seccompProfile.type") == UNCONFINED:
        problems.append("has seccompProfile Unconfined")
    return problems


def service_account_token_only_where_needed(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Pods mount a Kubernetes API token only when their account is granted API access in the stack.

    A mounted token is the pod's Kubernetes identity: whoever runs code in the pod can use it against the API
    server. A pod calls the API only to use what a RoleBinding or ClusterRoleBinding of the stack grants its
    service account (Kueue's controller); an account granted nothing needs no token (trainers: Workload Identity
    goes through the GKE metadata server, GCS FUSE through the CSI driver's own token request), so its pods set
    automountServiceAccountToken false. A Ray head whose in-tree autoscaler calls the API (KubeRay binds its
    account) is the other case, and workloads named in allowedApiToken.
    """
    allowed = args.get_config().get("allowedApiToken", [])
    granted = granted_accounts(args.resources)
    for resource in args.resources:
        kind = kind_of(resource.resource_type)
        if kind is None or workload_ref(kind, resource.props, resource.name) in allowed:
            continue
        for problem in _token_problems(kind, resource.props, granted):
            report_violation(
                f"{kind} '{workload_ref(kind, resource.props, resource.name)}' {problem}; set it false, bind the "
                "account to the role it calls the API with, or name the workload in allowedApiToken.",
                resource.urn,
            )


def granted_accounts(resources: Any) -> set[tuple[str, str]]:
    """(namespace, name) of every service account a RoleBinding or ClusterRoleBinding of the stack names."""
    granted = set()
    for resource in resources:
        if kind_of(resource.resource_type) not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        for subject in items(resource.props, "subjects"):
            if lookup(subject, "kind") == "ServiceAccount" and isinstance(lookup(subject, "name"), str):
                namespace = lookup(subject, "namespace")
                granted.add(
                    (namespace if isinstance(namespace, str) else namespace_of(resource.props), subject["name"])
                )
    return granted


def _token_problems(kind: str, props: Any, granted: set[tuple[str, str]]) -> list[str]:
    autoscaled = kind in RAY_KINDS and is_true(lookup(ray_cluster_spec(kind, props), "enableInTreeAutoscaling"))
    problems = []
    for template in pod_templates(kind, props):
        if autoscaled and template.where.endswith("headGroupSpec"):
            continue
        mounted = lookup(template.spec, "automountServiceAccountToken")
        account = lookup(template.spec, "serviceAccountName")
        account = account if isinstance(account, str) else "default"
        if is_unknown(mounted) or mounted is False or (namespace_of(props), account) in granted:
            continue
        shown = "unset (Kubernetes mounts it)" if mounted is None else repr(mounted)
        problems.append(
            f"{template.where}: automountServiceAccountToken is {shown}, but no binding of the stack grants "
            f"its account '{account}' API access"
        )
    return problems
