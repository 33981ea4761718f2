"""The CI identity bootstrap (bootstrap/, components/infra/ci_identity.py): planned under preflight's mocks, its
inputs checked against pulumi-gcp's schema and the pack, its provider condition evaluated as IAM evaluates CEL on
GitHub's OIDC claims (token shapes from GitHub's "About security hardening with OpenID Connect")."""

from __future__ import annotations

import functools
from typing import Any

import celpy
import pytest

from components.infra.ci_identity import CiIdentityArgs
from preflight.checks.policy_runner import evaluate
from preflight.checks.provider_inputs import check_provider_inputs
from preflight.engine.plan import plan_stack
from tests.helpers.plans import PROJECT_DIR

REPOSITORY = "example-org/trainyard"
REPOSITORY_ID = "123456789"  # bootstrap/Pulumi.example.yaml
POOL = "principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/github-actions"
PULUMI_YML = f"{REPOSITORY}/.github/workflows/pulumi.yml"


@functools.cache
def bootstrap_plan() -> dict[str, Any]:
    return plan_stack("example", PROJECT_DIR / "bootstrap").to_json()


def of_type(suffix: str) -> list[dict[str, Any]]:
    return [r for r in bootstrap_plan()["resources"] if r["type"].endswith(suffix)]


def test_the_bootstrap_plans_with_inputs_the_provider_takes_and_passes_the_pack():
    plan = bootstrap_plan()
    assert check_provider_inputs(plan["resources"]) == []
    assert [v for v in evaluate(plan) if v.level == "mandatory"] == []
    assert set(plan["outputs"]) == {"workloadIdentityProvider", "deployServiceAccount", "previewServiceAccount"}


def test_each_account_is_bound_to_one_subject_without_a_condition():
    bindings = {r["inputs"]["serviceAccountId"]: r["inputs"] for r in of_type("serviceaccount/iAMMember:IAMMember")}
    assert {account: binding["member"] for account, binding in bindings.items()} == {
        "trainyard-deploy": f"{POOL}/subject/repo:{REPOSITORY}:environment:dev",
        "trainyard-preview": f"{POOL}/subject/repo:{REPOSITORY}:environment:preview",
    }
    assert {binding["role"] for binding in bindings.values()} == {"roles/iam.workloadIdentityUser"}
    assert all("condition" not in binding for binding in bindings.values())


def test_the_provider_maps_the_subject_and_trusts_githubs_issuer():
    (provider,) = of_type("iam/workloadIdentityPoolProvider:WorkloadIdentityPoolProvider")
    inputs = provider["inputs"]
    assert inputs["oidc"] == {"issuerUri": "https://token.actions.githubusercontent.com"}
    assert inputs["attributeMapping"]["google.subject"] == "assertion.sub"
    assert inputs["attributeMapping"]["attribute.repository_id"] == "assertion.repository_id"
    assert inputs["attributeCondition"].startswith(f"assertion.repository_id == '{REPOSITORY_ID}' && ")
    assert inputs["workloadIdentityPoolId"] == "github-actions"


def token(
    environment: str | None,
    ref: str,
    workflow: str = PULUMI_YML,
    repository: str = REPOSITORY,
    repository_id: str = REPOSITORY_ID,
) -> dict:
    """GitHub's claims: an environment job's sub names the environment, others the ref or pull_request; the
    repository's id is a string of digits."""
    if environment:
        sub = f"repo:{repository}:environment:{environment}"
    elif ref.startswith("refs/pull/"):
        sub = f"repo:{repository}:pull_request"
    else:
        sub = f"repo:{repository}:ref:{ref}"
    return {
        "sub": sub,
        "repository": repository,
        "repository_id": repository_id,
        "ref": ref,
        "workflow_ref": f"{workflow}@{ref}",
    }


def admitted(claims: dict) -> bool:
    (provider,) = of_type("iam/workloadIdentityPoolProvider:WorkloadIdentityPoolProvider")
    environment = celpy.Environment()
    program = environment.program(environment.compile(provider["inputs"]["attributeCondition"]))
    return bool(program.evaluate({"assertion": celpy.json_to_cel(claims)}))


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        (token("dev", "refs/heads/main"), True),  # `up` on main, after the dev environment's approval
        (token("preview", "refs/pull/7/merge"), True),  # `preview`, after the preview environment's approval
        (token("dev", "refs/heads/feature"), False),  # the deploy environment from another branch
        (token("dev", "refs/heads/main", f"{REPOSITORY}/.github/workflows/other.yml"), False),  # another workflow
        (token(None, "refs/heads/main"), False),  # a job on main without an environment
        (token(None, "refs/pull/7/merge"), False),  # a pull request's job without an environment
        (token("production", "refs/heads/main"), False),  # an environment the bindings do not name
        (
            token(
                "dev",
                "refs/heads/main",
                "fork-org/trainyard/.github/workflows/pulumi.yml",
                "fork-org/trainyard",
                "987654321",
            ),
            False,
        ),
        # The repository deleted and its name taken again: every name matches, the id does not.
        (token("dev", "refs/heads/main", repository_id="555555555"), False),
    ],
    ids=[
        "deploy",
        "preview",
        "dev-off-main",
        "other-workflow",
        "no-environment",
        "pr",
        "other-environment",
        "fork",
        "name-taken-again",
    ],
)
def test_the_provider_admits_only_the_pulumi_workflows_two_environments(claims, expected):
    assert admitted(claims) is expected


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"repository": "example-org"}, ["trainyard-ci.repository", "'example-org'", "ORG/REPO"]),
        ({"repository": "o/r' || true || '"}, ["trainyard-ci.repository"]),  # no CEL injection through the name
        ({"repository_id": ""}, ["trainyard-ci.repositoryId: not set", "gh api repos/ORG/REPO --jq .id"]),
        ({"repository_id": "o/r"}, ["trainyard-ci.repositoryId", "'o/r'", "digits"]),
        ({"repository_id": "1' || true || '"}, ["trainyard-ci.repositoryId"]),  # nor through the id
        ({"deploy_environment": "prod env"}, ["trainyard-ci.deployEnvironment", "'prod env'"]),
        ({"preview_environment": "dev"}, ["trainyard-ci.previewEnvironment", "the deploy environment too"]),
        ({"pool_id": "gcp-pool"}, ["trainyard-ci.poolId", "not starting with gcp-"]),
        ({"workflow": "pulumi.yml"}, ["trainyard-ci.workflow", ".github/workflows/NAME.yml"]),
        ({"repository": "o/" + "r" * 110}, ["longer than IAM's 127 bytes"]),
    ],
)
def test_a_value_iam_would_not_take_is_one_line_naming_its_key(change, words):
    args = CiIdentityArgs(**{"project": "p", "repository": REPOSITORY, "repository_id": REPOSITORY_ID, **change})
    (line,) = args.problems("trainyard-ci")[:1]
    assert all(word in line for word in words), line
    valid = CiIdentityArgs(project="p", repository=REPOSITORY, repository_id=REPOSITORY_ID)
    assert valid.problems("trainyard-ci") == []


def test_the_bootstrap_refuses_to_plan_without_the_repository_id(tmp_path):
    """The id cannot be derived from the name: a stack file without it stops with the line saying how to find it."""
    import shutil

    bootstrap = PROJECT_DIR / "bootstrap"
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(bootstrap / name, tmp_path / name)
    stack = (bootstrap / "Pulumi.example.yaml").read_text()
    (tmp_path / "Pulumi.example.yaml").write_text(
        "\n".join(line for line in stack.splitlines() if "repositoryId" not in line)
    )
    with pytest.raises(Exception, match=r"trainyard-ci\.repositoryId: not set .*gh api repos/ORG/REPO --jq \.id"):
        plan_stack("example", tmp_path)
