"""docs/security.md's table of the deploy account's roles against what the stacks really plan: every GCP resource
type has a role that lets `pulumi up` manage it, and the project roles the stack grants are those the documented
IAM condition lets the deploy account grant."""

from __future__ import annotations

import functools
import re

import pytest

from tests.helpers.plans import PROJECT_DIR

# The role each resource type needs (Google Cloud's predefined roles; docs/cloud-facts.md: the deploy account).
ROLE_FOR_TYPE = {
    "gcp:compute/network:Network": "roles/compute.networkAdmin",
    "gcp:compute/subnetwork:Subnetwork": "roles/compute.networkAdmin",
    "gcp:compute/router:Router": "roles/compute.networkAdmin",
    "gcp:compute/routerNat:RouterNat": "roles/compute.networkAdmin",
    "gcp:compute/firewall:Firewall": "roles/compute.securityAdmin",
    "gcp:compute/resourcePolicy:ResourcePolicy": "roles/compute.instanceAdmin.v1",  # A4X's, TPU7x's workload policies
    "gcp:container/cluster:Cluster": "roles/container.admin",
    "gcp:container/nodePool:NodePool": "roles/container.admin",
    "gcp:serviceaccount/account:Account": "roles/iam.serviceAccountAdmin",
    "gcp:projects/iAMMember:IAMMember": "roles/resourcemanager.projectIamAdmin",
    "gcp:projects/iAMAuditConfig:IAMAuditConfig": "roles/resourcemanager.projectIamAdmin",  # part of the IAM policy
    "gcp:storage/bucket:Bucket": "roles/storage.admin",
    "gcp:storage/bucketIAMMember:BucketIAMMember": "roles/storage.admin",
    "gcp:artifactregistry/repository:Repository": "roles/artifactregistry.admin",
    "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember": "roles/artifactregistry.admin",
    "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember": "roles/cloudkms.admin",
    "docker-build:index:Image": "roles/artifactregistry.admin",  # pushes to the stack's repositories
}
ACT_AS = "roles/iam.serviceAccountUser"  # node pools run as the node accounts: no resource type of its own
STACKS = sorted(path.name.split(".")[1] for path in PROJECT_DIR.glob("Pulumi.*.yaml"))


@functools.cache
def planned(stack: str) -> list[dict]:
    from preflight.engine.plan import plan_stack

    return plan_stack(stack, PROJECT_DIR).to_json()["resources"]


def deploy_roles_section() -> str:
    text = (PROJECT_DIR / "docs/security.md").read_text()
    return text.split("### The deploy account's roles", 1)[1].split("\n## ", 1)[0]


def documented_roles() -> set[str]:
    """The first column of the section's table."""
    return set(re.findall(r"^\| `(roles/[\w.]+)`", deploy_roles_section(), re.MULTILINE))


def condition_allows() -> set[str]:
    """The roles the documented condition on the deploy account's project IAM grant lets it grant or revoke."""
    (listed,) = re.findall(r"modifiedGrantsByRole', \[\]\)\.hasOnly\(\[([^\]]*)\]\)", deploy_roles_section())
    return set(re.findall(r"'([^']+)'", listed))


@pytest.mark.parametrize("stack", STACKS)
def test_every_cloud_resource_the_stack_plans_has_a_documented_role(stack):
    types = {r["type"] for r in planned(stack) if r["type"].startswith(("gcp:", "docker-build:"))}
    assert types - set(ROLE_FOR_TYPE) == set(), "add the role to docs/security.md and ROLE_FOR_TYPE"
    assert {ROLE_FOR_TYPE[t] for t in types} | {ACT_AS} <= documented_roles()


def test_the_documented_roles_are_the_needed_ones():
    """No stale row: every role in the table is one some resource type (or acting as the node accounts) needs."""
    assert documented_roles() == set(ROLE_FOR_TYPE.values()) | {ACT_AS}


@pytest.mark.parametrize("stack", STACKS)
def test_the_condition_allows_every_project_role_the_stack_grants(stack):
    """A project role the stack starts granting fails here until someone decides the deploy account may grant it
    (and says so in the condition); without the condition the account could grant itself roles/owner."""
    granted = {r["inputs"]["role"] for r in planned(stack) if r["type"] == "gcp:projects/iAMMember:IAMMember"}
    assert granted and granted <= condition_allows()


def test_the_condition_grants_only_the_node_role():
    from components.infra.node_identity import NODE_ROLE

    assert condition_allows() == {NODE_ROLE}
