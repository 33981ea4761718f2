"""Stack rule for the namespaces workloads run in: each keeps a default-deny NetworkPolicy.

Reports with the URN of a workload in the namespace, so the verdict points at what runs unguarded.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs

from policies.props import entries, has_unknown, items, lookup
from policies.workloads import BATCH_KINDS, RAY_KINDS, kind_of, namespace_of, object_name, stack_objects

_WORKLOAD_KINDS = (*BATCH_KINDS, *RAY_KINDS)
_BOTH = {"Ingress", "Egress"}


def workload_namespaces_deny_by_default(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Every namespace the stack runs jobs in (Jobs, Ray) has a default-deny NetworkPolicy (ingress and egress).

    NetworkPolicies only ever allow: without one that selects every pod and allows nothing, any pod in the cluster
    reaches the trainers (Ray's job API, torchrun's rendezvous) and they reach anything. The allow policies beside
    it open only what the jobs need. A plan that loses the default-deny policy (deleted, or narrowed to some pods
    or one direction) is refused here.
    """
    policies = stack_objects(args, "NetworkPolicy")
    if any(has_unknown(lookup(policy.props, part)) for policy in policies for part in ("metadata", "spec")):
        return  # cannot tell yet which policy denies what
    guarded = {namespace_of(policy.props) for policy in policies if _denies_all(policy.props)}
    reported: set[str] = set()
    for resource in args.resources:
        kind = kind_of(resource.resource_type)
        if kind not in _WORKLOAD_KINDS or has_unknown(lookup(resource.props, "metadata.namespace")):
            continue
        namespace = namespace_of(resource.props)
        if namespace in guarded or namespace in reported:
            continue
        reported.add(namespace)
        report_violation(
            f"namespace '{namespace}' runs {kind} '{object_name(resource.props, resource.name)}' without a "
            "default-deny NetworkPolicy (podSelector {}, policyTypes Ingress and Egress, no rules).",
            resource.urn,
        )


def _denies_all(props: Any) -> bool:
    selects_every_pod = not entries(props, "spec.podSelector.matchLabels") and not items(
        props, "spec.podSelector.matchExpressions"
    )
    types = {t for t in items(props, "spec.policyTypes") if isinstance(t, str)}
    return selects_every_pod and _BOTH <= types and not items(props, "spec.ingress") and not items(props, "spec.egress")
