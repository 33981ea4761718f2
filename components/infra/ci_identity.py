"""Who CI may act as: a Workload Identity pool for GitHub Actions, its one provider, the two service accounts the
workflows use, and one Workload Identity User binding each, to exactly one GitHub subject.

GitHub gives a job that names an environment the subject `repo:ORG/REPO:environment:NAME`, and only once the
environment's protection rules (required reviewers, allowed branches) let the job run. So:

- the provider maps `google.subject` to that subject and admits only tokens of this repository, known by its
  numeric id (a name can be freed and registered again by someone else; an id is never reused), from the workflow
  that runs Pulumi (`pulumi.yml`), and of its two environments: the preview one, and the deploy one on the deploy
  branch (its attribute condition; GCP requires one for GitHub's issuer);
- the deploy account's binding names `principal://.../subject/repo:ORG/REPO:environment:dev`, the preview
  account's `.../environment:preview`: one principal each, no principal set, no IAM condition (a service
  account binding's condition cannot read the token's claims; only the provider's can).

No other workflow, branch, fork or environment of the repository becomes either account. The accounts' project
roles stay outside the code (docs/security.md: the deploy account's roles).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.facts.images import DEPLOY_ACCOUNT_ID

GITHUB_ISSUER = "https://token.actions.githubusercontent.com"
WORKLOAD_IDENTITY_USER = "roles/iam.workloadIdentityUser"
# IAM's limits: pool and provider ids 4-32 of [a-z0-9-], not starting with gcp-; google.subject at most 127 bytes.
_ID = re.compile(r"^(?!gcp-)[a-z0-9-]{4,32}$")
SUBJECT_MAX_BYTES = 127
# What the CEL condition quotes: nothing that needs escaping.
_REPOSITORY = re.compile(r"^[A-Za-z0-9-]+/[A-Za-z0-9._-]+$")
_REPOSITORY_ID = re.compile(r"^[1-9][0-9]*$")
_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
_BRANCH = re.compile(r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")
_WORKFLOW = re.compile(r"^\.github/workflows/[A-Za-z0-9._-]+\.ya?ml$")


@dataclass(frozen=True)
class CiIdentityArgs:
    project: str
    repository: str  # ORG/REPO
    repository_id: str  # GitHub's numeric id of ORG/REPO: the token's `repository_id` claim
    deploy_environment: str = "dev"
    preview_environment: str = "preview"
    deploy_branch: str = "main"
    workflow: str = ".github/workflows/pulumi.yml"
    pool_id: str = "github-actions"
    provider_id: str = "trainyard-pulumi"

    def subject(self, environment: str) -> str:
        """GitHub's `sub` claim for a job of this repository that runs in `environment`."""
        return f"repo:{self.repository}:environment:{environment}"

    def attribute_condition(self) -> str:
        """The provider's CEL condition: this repository (by id) and its Pulumi workflow, in its preview environment
        or in its deploy environment on the deploy branch."""
        preview, deploy = self.subject(self.preview_environment), self.subject(self.deploy_environment)
        return (
            f"assertion.repository_id == '{self.repository_id}'"
            f" && assertion.workflow_ref.startsWith('{self.repository}/{self.workflow}@')"
            f" && (assertion.sub == '{preview}'"
            f" || (assertion.sub == '{deploy}' && assertion.ref == 'refs/heads/{self.deploy_branch}'))"
        )

    def problems(self, key: str) -> list[str]:
        """One line per value IAM or the CEL condition would not take, naming `key.<field>`."""
        checks = [
            ("repository", self.repository, _REPOSITORY, "ORG/REPO"),
            ("repositoryId", self.repository_id, _REPOSITORY_ID, "digits: `gh api repos/ORG/REPO --jq .id`"),
            ("deployEnvironment", self.deploy_environment, _NAME, "letters, digits, . _ -"),
            ("previewEnvironment", self.preview_environment, _NAME, "letters, digits, . _ -"),
            ("deployBranch", self.deploy_branch, _BRANCH, "a branch name such as main"),
            ("workflow", self.workflow, _WORKFLOW, ".github/workflows/NAME.yml"),
            ("poolId", self.pool_id, _ID, "4-32 of a-z, 0-9, -, not starting with gcp-"),
            ("providerId", self.provider_id, _ID, "4-32 of a-z, 0-9, -, not starting with gcp-"),
        ]
        lines = [
            f"{key}.{field}: {f'{value!r} is not valid' if value else 'not set'} (allowed: {allowed})"
            for field, value, pattern, allowed in checks
            if not pattern.match(value)
        ]
        if self.deploy_environment == self.preview_environment:
            lines.append(f"{key}.previewEnvironment: {self.preview_environment!r} is the deploy environment too")
        for environment in (self.deploy_environment, self.preview_environment):
            if len(self.subject(environment).encode()) > SUBJECT_MAX_BYTES:
                lines.append(
                    f"{key}.repository: subject {self.subject(environment)!r} is longer than IAM's "
                    f"{SUBJECT_MAX_BYTES} bytes for google.subject"
                )
        return lines


def principal(project_number: str, pool_id: str, subject: str) -> str:
    """The IAM principal of one subject of a Workload Identity pool."""
    return (
        f"principal://iam.googleapis.com/projects/{project_number}/locations/global/workloadIdentityPools/"
        f"{pool_id}/subject/{subject}"
    )


class CiIdentity(pulumi.ComponentResource):
    provider: gcp.iam.WorkloadIdentityPoolProvider
    deploy_account: gcp.serviceaccount.Account
    preview_account: gcp.serviceaccount.Account

    def __init__(self, name: str, args: CiIdentityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:infra:CiIdentity", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        pool = gcp.iam.WorkloadIdentityPool(
            args.pool_id,
            project=args.project,
            workload_identity_pool_id=args.pool_id,
            display_name="GitHub Actions",
            description=f"GitHub Actions of {args.repository}",
            opts=child,
        )
        self.provider = gcp.iam.WorkloadIdentityPoolProvider(
            args.provider_id,
            project=args.project,
            workload_identity_pool_id=pool.workload_identity_pool_id,
            workload_identity_pool_provider_id=args.provider_id,
            display_name="trainyard Pulumi workflow",
            attribute_mapping={
                "google.subject": "assertion.sub",
                "attribute.repository": "assertion.repository",
                "attribute.repository_id": "assertion.repository_id",
                "attribute.ref": "assertion.ref",
                "attribute.workflow_ref": "assertion.workflow_ref",
            },
            attribute_condition=args.attribute_condition(),
            oidc=gcp.iam.WorkloadIdentityPoolProviderOidcArgs(issuer_uri=GITHUB_ISSUER),
            opts=child,
        )
        project_number = gcp.organizations.get_project_output(project_id=args.project).number
        self.deploy_account = self._account_for(
            DEPLOY_ACCOUNT_ID, "runs pulumi up", args, args.deploy_environment, project_number, pool
        )
        self.preview_account = self._account_for(
            "trainyard-preview", "runs pulumi preview", args, args.preview_environment, project_number, pool
        )
        self.register_outputs(
            {
                "workloadIdentityProvider": self.provider.name,
                "deployServiceAccount": self.deploy_account.email,
                "previewServiceAccount": self.preview_account.email,
            }
        )

    def _account_for(
        self,
        account_id: str,
        does: str,
        args: CiIdentityArgs,
        environment: str,
        project_number: pulumi.Output[str],
        pool: gcp.iam.WorkloadIdentityPool,
    ) -> gcp.serviceaccount.Account:
        account = gcp.serviceaccount.Account(
            account_id,
            project=args.project,
            account_id=account_id,
            display_name=f"CI: {does} ({args.repository}, environment {environment})",
            opts=pulumi.ResourceOptions(parent=self),
        )
        gcp.serviceaccount.IAMMember(
            f"{account_id}-workload-identity-user",
            service_account_id=account.name,
            role=WORKLOAD_IDENTITY_USER,
            member=project_number.apply(lambda number: principal(number, args.pool_id, args.subject(environment))),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[pool]),
        )
        return account
