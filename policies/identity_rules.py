"""Rules about identities: who may act as what. IAM grants (public members, basic roles, admin and token-creator
roles, identity roles for broad members, grants to a whole Workload Identity pool), service account keys, the
service account node pools run as, and Kubernetes bindings to cluster-admin."""

from __future__ import annotations

import json
import re

from pulumi_policy import ReportViolation, ResourceValidationArgs

from components.facts.gke import NODE_POOL_TYPE
from components.facts.images import DEPLOY_ACCOUNT_ID, REGISTRY_READER_ROLE, is_deploy_member, writes_the_registry
from policies.props import is_unknown, items, lookup
from policies.workloads import kind_of, namespace_of, object_name

PUBLIC_MEMBERS = ("allUsers", "allAuthenticatedUsers")
BASIC_ROLES = ("roles/owner", "roles/editor", "roles/viewer")
_IAM_GRANT = re.compile(r"iam(member|binding|policy):", re.IGNORECASE)
_SERVICE_ACCOUNT_KEY = "gcp:serviceaccount/key:key"
_HMAC_KEY = "gcp:storage/hmackey:hmackey"
# Roles that control other identities or a whole service (docs/cloud-facts.md: IAM roles that hand over identities).
TOKEN_CREATOR = "roles/iam.serviceAccountTokenCreator"
WORKLOAD_IDENTITY_USER = "roles/iam.workloadIdentityUser"
IDENTITY_ROLES = (
    TOKEN_CREATOR,
    "roles/iam.serviceAccountUser",
    WORKLOAD_IDENTITY_USER,
    "roles/iam.serviceAccountKeyAdmin",
    "roles/iam.serviceAccountOpenIdTokenCreator",
)
# A predefined role that administers or owns its service, by its id: `*.admin`, `*Admin`, `instanceAdmin.v1`,
# `legacyBucketOwner`, `dataOwner` (a suffix test missed the versioned and owner ones).
_ADMIN_LIKE = re.compile(r"(admin|owner)", re.IGNORECASE)
# One Kubernetes service account or one federated subject: the members Workload Identity User may name.
_ONE_WORKLOAD = re.compile(r"^(principal://.+/subject/.+|serviceAccount:[a-z0-9-]+\.svc\.id\.goog\[[^*\]]+/[^*\]]+\])$")
_KUBERNETES_WORKLOAD = re.compile(r"(\.svc\.id\.goog\[|/subject/ns/)")
_BROAD_MEMBER_PREFIXES = ("domain:", "group:", "principalSet:")
_BUCKET_GRANT = re.compile(r"^gcp:storage/bucketIAM", re.IGNORECASE)
# principalSet://iam.googleapis.com/projects/N/locations/global/workloadIdentityPools/POOL/* (every identity of the
# pool) or .../kubernetes.cluster/URL (every Kubernetes service account of a cluster).
_POOL_WIDE = re.compile(r"^principalSet://.*/workloadIdentityPools/[^/]+/(\*|kubernetes\.cluster/.*)$")
_DEFAULT_COMPUTE_ACCOUNT = re.compile(r"^\d+-compute@developer\.gserviceaccount\.com$")


def no_public_iam_members(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """No IAM grant to allUsers or allAuthenticatedUsers.

    Either principal makes the resource readable by anyone on the internet (any Google account).
    """
    for role, member in _iam_grants(args):
        if member in PUBLIC_MEMBERS:
            report_violation(f"{args.resource_type} '{args.name}' grants {role} to {member}.", None)


def no_basic_roles(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """No basic role (roles/owner, roles/editor, roles/viewer) is granted.

    Basic roles span every service in the project; trainers need one predefined role on one bucket.
    """
    for role, member in _iam_grants(args):
        if role in BASIC_ROLES:
            report_violation(f"{args.resource_type} '{args.name}' grants the basic role {role} to {member}.", None)


def pools_run_as_their_own_service_account(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Every node pool runs as a service account of its own, not the default Compute Engine account.

    The default account is often a project Editor, and any privileged pod or hostNetwork DaemonSet on a node
    can take the node's token; a pool without serviceAccount (or with "default") runs as it.
    """
    if args.resource_type != NODE_POOL_TYPE:
        return
    account = lookup(args.props, "nodeConfig.serviceAccount")
    if is_unknown(account):
        return
    if not account or account == "default" or _DEFAULT_COMPUTE_ACCOUNT.match(str(account)):
        shown = account or "unset (the default Compute Engine account)"
        report_violation(f"pool '{args.name}': nodeConfig.serviceAccount is {shown}; give the pool its own.", None)


def no_sensitive_roles_for_broad_members(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Admin and identity roles go to single principals, not to domains, groups or identity pools.

    An `*.admin`, token-creator, service-account-user or workload-identity-user role on a whole domain, group or
    principal set lets anyone in it act as the service or as other identities.
    """
    for role, member in _iam_grants(args):
        sensitive = is_admin_like(role) or role in IDENTITY_ROLES
        if sensitive and str(member).startswith(_BROAD_MEMBER_PREFIXES):
            report_violation(f"{args.resource_type} '{args.name}' grants {role} to {member}.", None)


def no_service_account_keys(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """No service account keys.

    Keys are long-lived secrets that end up in state files and CI logs; Workload Identity (in the cluster)
    and Workload Identity Federation (in CI) need none.
    """
    if args.resource_type.lower() == _SERVICE_ACCOUNT_KEY:
        report_violation(f"'{args.name}' creates a service account key.", None)


def no_hmac_keys(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """No Cloud Storage HMAC keys.

    An HMAC key is a service account's long-lived secret for Cloud Storage's XML API: it reads, overwrites and
    deletes what the account may, from anywhere, until someone deletes the key, and Pulumi keeps its secret in the
    stack's state. Workloads reach the bucket through Workload Identity, which needs none.
    """
    if args.resource_type.lower() == _HMAC_KEY:
        account = lookup(args.props, "serviceAccountEmail")
        shown = f" for {account}" if isinstance(account, str) else ""
        report_violation(f"'{args.name}' creates a Cloud Storage HMAC key{shown}.", None)


def _iam_grants(args: ResourceValidationArgs) -> list[tuple[str, str]]:
    """(role, member) pairs an IAM member, binding or policy resource grants."""
    if not _IAM_GRANT.search(args.resource_type):
        return []
    role = lookup(args.props, "role")
    members = [lookup(args.props, "member")] + items(args.props, "members")
    grants = [(str(role), member) for member in members if isinstance(member, str)]
    policy_data = lookup(args.props, "policyData")
    if isinstance(policy_data, str):
        try:
            bindings = json.loads(policy_data).get("bindings", [])
        except (ValueError, AttributeError):
            bindings = []
        for binding in bindings:
            grants += [(str(binding.get("role")), str(member)) for member in binding.get("members", [])]
    return grants


def no_admin_or_token_creator_roles(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """No `*.admin` role and no Service Account Token Creator, even for one principal.

    The stack's identities need one predefined role each (a node role, a registry reader, an object user on one
    bucket). An admin role hands over a whole service (container.admin: every cluster; storage.admin: every
    bucket and its IAM); token creator lets its holder mint tokens as the service account, i.e. become it.
    Grant those outside the stack, to people, with review. (Owner and editor are no-basic-roles.)
    """
    for role, member in _iam_grants(args):
        if role == TOKEN_CREATOR or is_admin_like(role):
            report_violation(f"{args.resource_type} '{args.name}' grants {role} to {member}.", None)


def is_admin_like(role: str) -> bool:
    """A predefined role that administers or owns its service (basic roles have their own rule)."""
    return role.startswith("roles/") and role not in BASIC_ROLES and bool(_ADMIN_LIKE.search(role))


def identity_roles_name_one_workload(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Identity roles only as Workload Identity User, to one workload, and never a workload on the deploy account.

    Service Account User lets its holder run anything as the account (attach it to a VM, a pool, a job); OpenID
    token creator mints its identity tokens; both are becoming the account, whoever holds them. Workload Identity
    User is how one Kubernetes service account or one CI subject acts as one Google account: it names that one
    principal, and the deploy account's (which writes project IAM: owner-equivalent) goes to CI's subject only,
    never to a pod, or a trainer could mint the deploy account's tokens. (Token creator and key admin are
    no-admin-or-token-creator-roles'.)
    """
    deploy_account = f"{DEPLOY_ACCOUNT_ID}@" in str(lookup(args.props, "serviceAccountId") or "")
    for role, member in _iam_grants(args):
        if role not in IDENTITY_ROLES or role == TOKEN_CREATOR or is_admin_like(role):
            continue
        grant = f"{args.resource_type} '{args.name}' grants {role} to {member}"
        if role != WORKLOAD_IDENTITY_USER:
            report_violation(
                f"{grant}: its holder acts as the account; use Workload Identity User for one workload.", None
            )
        elif not _ONE_WORKLOAD.match(member):
            report_violation(
                f"{grant}: name one workload (principal://.../subject/..., or PROJECT.svc.id.goog[NS/SA]).", None
            )
        elif deploy_account and _KUBERNETES_WORKLOAD.search(member):
            report_violation(f"{grant} on the deploy account: a pod would hold the deploy account's tokens.", None)


def no_pool_wide_grants(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """No grant to a whole Workload Identity pool or cluster, and bucket grants name one workload identity.

    `principalSet://.../workloadIdentityPools/POOL/*` is every identity the pool holds: for the GKE pool
    (PROJECT.svc.id.goog) every Kubernetes service account of every cluster in the project, for a CI pool every
    workflow its provider admits; `.../kubernetes.cluster/...` is every service account of a cluster. A bucket
    grant to any principal set, or to a wildcard member (`PROJECT.svc.id.goog[*/...]`), lets any pod that can run
    under one of those accounts read, overwrite or delete the training data and checkpoints. Name the one
    service account: `principal://.../subject/ns/NAMESPACE/sa/NAME`.
    """
    bucket = bool(_BUCKET_GRANT.search(args.resource_type))
    for role, member in _iam_grants(args):
        if _POOL_WIDE.match(member) or "*" in member:
            report_violation(f"{args.resource_type} '{args.name}' grants {role} to every identity of {member}.", None)
        elif bucket and member.startswith("principalSet:"):
            report_violation(
                f"bucket grant '{args.name}' gives {role} to the principal set {member}; name one workload identity "
                "(principal://.../subject/ns/NAMESPACE/sa/NAME).",
                None,
            )


def registry_writes_only_by_the_deploy_account(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Only the deploy account may push to Artifact Registry; nodes, workloads and people get reader at most.

    The build cache feeds every next build of the trainers' images, and the images run on every accelerator node:
    whoever can write either (a node's token, a pod's workload identity) chooses the code the next job runs.
    Refused: any `roles/artifactregistry.*` role but reader, on a repository or the project, to a member other
    than `serviceAccount:trainyard-deploy@PROJECT.iam.gserviceaccount.com`.
    """
    for role, member in _iam_grants(args):
        if writes_the_registry(role) and not is_deploy_member(member):
            report_violation(
                f"{args.resource_type} '{args.name}' grants {role} to {member}; only the deploy account "
                f"({DEPLOY_ACCOUNT_ID}) may write the registry, others get {REGISTRY_READER_ROLE}.",
                None,
            )


CLUSTER_ADMIN = "cluster-admin"
_BINDING_KINDS = ("ClusterRoleBinding", "RoleBinding")


def no_cluster_admin_bindings(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """No ClusterRoleBinding or RoleBinding to cluster-admin.

    cluster-admin is every verb on every resource: bound cluster-wide it is the cluster, bound in a namespace it is
    every Secret and workload there. Nothing the stack runs needs it; Kueue and KubeRay bring their own roles.
    """
    kind = kind_of(args.resource_type)
    if kind not in _BINDING_KINDS:
        return
    role = lookup(args.props, "roleRef.name")
    if lookup(args.props, "roleRef.kind") == "ClusterRole" and role == CLUSTER_ADMIN:
        subjects = [f"{lookup(s, 'kind')} {lookup(s, 'name')}" for s in items(args.props, "subjects")]
        scope = "" if kind == "ClusterRoleBinding" else f" in namespace {namespace_of(args.props)}"
        report_violation(
            f"{kind} '{object_name(args.props, args.name)}' binds {CLUSTER_ADMIN}{scope} to "
            f"{', '.join(subjects) or 'no subject yet'}.",
            None,
        )
