"""Kubernetes RBAC judged by what a grant lets its holder do, not by the role's name.

A role is refused when one of its rules hands over more than the rules it states: every verb, writes to every
resource, the escalate, bind and impersonate verbs (Kubernetes docs: Using RBAC Authorization, "Privilege
escalation prevention and bootstrapping"), minting service account tokens, or the kubelet's API through
nodes/proxy. A binding is refused when its scope or its subjects widen what the role gives: Secrets read across the
cluster, Kubernetes' user-facing `admin` and `edit` roles bound cluster-wide, or anything beyond reading to every
authenticated (or unauthenticated) caller or every service account. Kueue's and the stack's own roles pass on
their merits.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs, StackValidationArgs

from policies.props import items, lookup
from policies.workloads import base_kind, namespace_of, object_name

READ_VERBS = frozenset({"get", "list", "watch"})
ESCALATION_VERBS = ("escalate", "bind", "impersonate")
ROLE_KINDS = ("ClusterRole", "Role")
BINDING_KINDS = ("ClusterRoleBinding", "RoleBinding")
# Every caller, every signed-in one, every service account (of the cluster or of one namespace).
BROAD_GROUPS = ("system:authenticated", "system:unauthenticated", "system:serviceaccounts")
ANONYMOUS_USER = "system:anonymous"
# Kubernetes' user-facing ClusterRoles, by what a holder can do with them (Kubernetes docs: Using RBAC
# Authorization, "User-facing roles"); cluster-admin has its own rule (no-cluster-admin-bindings).
USER_FACING_ROLES = {
    "admin": "read and write every Secret, exec into every pod, impersonate service accounts and grant roles",
    "edit": "read and write every Secret, exec into every pod and impersonate service accounts",
}


def _words(rule: Any, key: str) -> set[str]:
    return {word for word in items(rule, key) if isinstance(word, str)}


def rule_dangers(rule: Any) -> list[str]:
    """What one PolicyRule lets its holder do beyond what it names."""
    verbs, resources = _words(rule, "verbs"), _words(rule, "resources")
    dangers = []
    if "*" in verbs:
        dangers.append("use every verb")
    if "*" in resources and verbs - READ_VERBS:
        dangers.append("write every resource")
    dangers += [f"{verb} (RBAC escalation)" for verb in ESCALATION_VERBS if verb in verbs]
    if "serviceaccounts/token" in resources and verbs & {"create", "*"}:
        dangers.append("mint any service account's token")
    if resources & {"nodes/proxy", "nodes/*"}:
        dangers.append("call the kubelet's API (nodes/proxy: exec into any pod on the node)")
    return dangers


def reads_secrets(rules: Iterable[Any]) -> bool:
    return any(
        _words(rule, "resources") & {"secrets", "*"} and _words(rule, "verbs") & (READ_VERBS | {"*"}) for rule in rules
    )


def writes_anything(rules: Iterable[Any]) -> bool:
    return any(_words(rule, "verbs") - READ_VERBS for rule in rules)


def _rule_text(rule: Any) -> str:
    groups = ",".join(sorted(_words(rule, "apiGroups"))) or '""'
    return f"{groups}/{','.join(sorted(_words(rule, 'resources')))}: {','.join(sorted(_words(rule, 'verbs')))}"


def roles_grant_no_escalation(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """No Role or ClusterRole grants every verb, writes every resource, escalates, binds, impersonates, mints tokens
    or reaches the kubelet.

    Each of these makes the holder more than the role says: `*` verbs or writes to `*` resources cover Secrets,
    RBAC and workloads alike; escalate and bind let a holder grant roles it does not hold; impersonate lets it act
    as any user, group or service account; creating serviceaccounts/token mints any account's credentials; and
    nodes/proxy reaches the kubelet, which runs commands in any pod on the node. A role is judged whether or not
    a binding of the stack names it yet: binding it later takes no change the pack would see.
    """
    kind = base_kind(args.resource_type)
    if kind not in ROLE_KINDS:
        return
    for index, rule in enumerate(items(args.props, "rules")):
        dangers = rule_dangers(rule)
        if dangers:
            report_violation(
                f"{kind} '{object_name(args.props, args.name)}' rules[{index}] ({_rule_text(rule)}) lets its holder "
                f"{', '.join(dangers)}; name the resources and verbs it needs.",
                None,
            )


def bindings_widen_no_role(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """No binding hands a role to every caller, reads every Secret of the cluster, or binds admin or edit
    cluster-wide.

    A ClusterRoleBinding turns a role's rules on every namespace: with Secrets read, its subject holds every token
    and credential in the cluster; with `admin` or `edit`, every workload too. Bound to every authenticated or
    unauthenticated caller, or to every service account, a role is any pod's, and any stolen token's: such
    subjects may only read, and no Secret.
    """
    roles = _stack_roles(args)
    for resource in args.resources:
        kind = base_kind(resource.resource_type)
        if kind not in BINDING_KINDS:
            continue
        binding = f"{kind} '{object_name(resource.props, resource.name)}'"
        for problem in _binding_problems(kind, resource.props, roles):
            report_violation(f"{binding} {problem}.", resource.urn)


def _stack_roles(args: StackValidationArgs) -> dict[tuple[str, str, str], list[Any]]:
    """(kind, namespace, name) -> rules, for every role of the stack (a ClusterRole's namespace is "")."""
    roles = {}
    for resource in args.resources:
        kind = base_kind(resource.resource_type)
        if kind in ROLE_KINDS:
            namespace = namespace_of(resource.props) if kind == "Role" else ""
            roles[(kind, namespace, object_name(resource.props, resource.name))] = items(resource.props, "rules")
    return roles


def _binding_problems(kind: str, props: Any, roles: dict[tuple[str, str, str], list[Any]]) -> list[str]:
    role_kind, role = lookup(props, "roleRef.kind"), lookup(props, "roleRef.name")
    if not isinstance(role, str):
        return []
    namespace = namespace_of(props) if role_kind == "Role" else ""
    rules = roles.get((role_kind, namespace, role))
    cluster_wide = kind == "ClusterRoleBinding"
    problems = []
    if role_kind == "ClusterRole" and role in USER_FACING_ROLES and rules is None and cluster_wide:
        problems.append(f"binds {role} cluster-wide: its subjects {USER_FACING_ROLES[role]} in every namespace")
    if rules is not None and cluster_wide and reads_secrets(rules):
        problems.append(f"binds {role_kind} {role} cluster-wide, and it reads Secrets: every Secret of the cluster")
    broad = _broad_subjects(props)
    if broad:
        widened = _what_broad_subjects_get(role_kind, role, rules)
        if widened:
            problems.append(f"gives {', '.join(broad)} {role_kind} {role}, which {widened}; they may only read")
    return problems


def _broad_subjects(props: Any) -> list[str]:
    broad = []
    for subject in items(props, "subjects"):
        kind, name = lookup(subject, "kind"), lookup(subject, "name")
        if not isinstance(name, str):
            continue
        if (kind == "Group" and name.startswith(BROAD_GROUPS)) or (kind == "User" and name == ANONYMOUS_USER):
            broad.append(f"{kind} {name}")
    return broad


def _what_broad_subjects_get(role_kind: Any, role: str, rules: list[Any] | None) -> str | None:
    if rules is None:
        if role_kind == "ClusterRole" and (role in USER_FACING_ROLES or role == "cluster-admin"):
            return USER_FACING_ROLES.get(role, "is every verb on every resource")
        return "the stack does not define (what it grants cannot be judged)"
    if writes_anything(rules) or reads_secrets(rules):
        return "writes or reads Secrets"
    return None
