"""Stack rules for the namespaces workloads run in: each keeps a default-deny NetworkPolicy that no allow policy
undoes, and the ValidatingAdmissionPolicy that holds every pod created there at run time.

Reports with the URN of a workload in the namespace, so the verdict points at what runs unguarded.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs

from components.facts.gke import NAMESPACE_NAME_LABEL
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
    for namespace, (kind, name, urn) in workload_namespaces(args).items():
        if namespace not in guarded:
            report_violation(
                f"namespace '{namespace}' runs {kind} '{name}' without a default-deny NetworkPolicy (podSelector {{}}, "
                "policyTypes Ingress and Egress, no rules).",
                urn,
            )
        for policy in policies:
            if namespace_of(policy.props) == namespace:
                for opening in _opens_to_everyone(policy.props):
                    report_violation(
                        f"NetworkPolicy '{object_name(policy.props, policy.name)}' in namespace '{namespace}' "
                        f"{opening}: it undoes the default-deny; name the peers (pods, namespaces, ranges).",
                        policy.urn,
                    )


def workload_namespaces(args: StackValidationArgs) -> dict[str, tuple[str, str, str]]:
    """namespace -> (kind, name, URN) of the first Job or Ray object the stack runs there."""
    found: dict[str, tuple[str, str, str]] = {}
    for resource in args.resources:
        kind = kind_of(resource.resource_type)
        if kind not in _WORKLOAD_KINDS or has_unknown(lookup(resource.props, "metadata.namespace")):
            continue
        found.setdefault(namespace_of(resource.props), (kind, object_name(resource.props, resource.name), resource.urn))
    return found


# Addresses that mean everywhere: ingress from them is every caller, egress to them every pod and node too.
_EVERYWHERE = ("0.0.0.0/0", "::/0")


def _opens_to_everyone(props: Any) -> list[str]:
    """How a policy's rules admit every peer: ingress from anywhere (any port), or egress to anywhere on every
    port (egress to the internet with the cluster's ranges excepted, or on named ports, is what jobs need)."""
    openings = []
    for index, rule in enumerate(items(props, "spec.ingress")):
        if _every_peer(rule, "from"):
            openings.append(f"admits ingress from every source (spec.ingress[{index}])")
    for index, rule in enumerate(items(props, "spec.egress")):
        if _every_peer(rule, "to") and not items(rule, "ports"):
            openings.append(f"allows egress to everywhere on every port (spec.egress[{index}])")
    return openings


def _every_peer(rule: Any, side: str) -> bool:
    peers = lookup(rule, side)
    if peers is None:
        return True  # no from/to: every peer
    return any(_is_everyone(peer) for peer in items(rule, side))


def _is_everyone(peer: Any) -> bool:
    block = lookup(peer, "ipBlock")
    if block is not None:
        return lookup(block, "cidr") in _EVERYWHERE and not items(block, "except")
    namespaces, pods = lookup(peer, "namespaceSelector"), lookup(peer, "podSelector")
    every_namespace = namespaces is not None and _selects_all(namespaces)
    return (namespaces is None and pods is None) or (every_namespace and (pods is None or _selects_all(pods)))


def _selects_all(selector: Any) -> bool:
    return not entries(selector, "matchLabels") and not items(selector, "matchExpressions")


def workload_pods_admission_enforced(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Every namespace the stack runs jobs in is bound, with Deny, to a ValidatingAdmissionPolicy of the stack.

    The pack judges the pods the program declares; KubeRay's head, workers and submitter, a job's own pods and a
    `kubectl apply` are created at run time, where only the API server's admission sees them
    (components/kube/pod_admission.py holds them to the pod rules). A plan that drops the policy, its binding or
    the Deny action, or binds it to another namespace, leaves those pods to themselves.
    """
    policies = {object_name(p.props, p.name) for p in stack_objects(args, "ValidatingAdmissionPolicy")}
    bindings = stack_objects(args, "ValidatingAdmissionPolicyBinding")
    if any(has_unknown(lookup(b.props, "spec")) for b in bindings):
        return
    enforced = {
        namespace
        for binding in bindings
        if lookup(binding.props, "spec.policyName") in policies
        and "Deny" in items(binding.props, "spec.validationActions")
        for namespace in _bound_namespaces(binding.props)
    }
    for namespace, (kind, name, urn) in workload_namespaces(args).items():
        if namespace not in enforced:
            report_violation(
                f"namespace '{namespace}' runs {kind} '{name}', but no ValidatingAdmissionPolicy of the stack is "
                f"bound to it with Deny: pods created at run time (Ray's, a job's own) go unchecked.",
                urn,
            )


def _bound_namespaces(binding: Any) -> list[str]:
    """Namespaces a binding's namespaceSelector names by `kubernetes.io/metadata.name` (the form the stack writes)."""
    selector = lookup(binding, "spec.matchResources.namespaceSelector")
    named = entries(selector, "matchLabels").get(NAMESPACE_NAME_LABEL)
    names = [named] if isinstance(named, str) else []
    for expression in items(selector, "matchExpressions"):
        if lookup(expression, "key") == NAMESPACE_NAME_LABEL and lookup(expression, "operator") == "In":
            names += [value for value in items(expression, "values") if isinstance(value, str)]
    return names


def _denies_all(props: Any) -> bool:
    selects_every_pod = not entries(props, "spec.podSelector.matchLabels") and not items(
        props, "spec.podSelector.matchExpressions"
    )
    types = {t for t in items(props, "spec.policyTypes") if isinstance(t, str)}
    return selects_every_pod and _BOTH <= types and not items(props, "spec.ingress") and not items(props, "spec.egress")
