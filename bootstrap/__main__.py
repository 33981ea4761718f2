"""The CI identity bootstrap: `pulumi up` in bootstrap/ by someone who may manage IAM, once per repository.

Kept apart from the trainyard stack on purpose: the deploy account must not manage the trust that lets CI become
it. Its outputs are the repository variables pulumi.yml reads (GCP_WORKLOAD_IDENTITY_PROVIDER,
GCP_SERVICE_ACCOUNT, GCP_PREVIEW_SERVICE_ACCOUNT).
"""

import sys
from pathlib import Path

# The CLI runs this file with bootstrap/ as the working directory; the component lives in the project's root.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pulumi

from components.infra.ci_identity import CiIdentity, CiIdentityArgs

CONFIG = "trainyard-ci"


class CiConfigError(pulumi.RunError):
    """The engine prints the lines without a trace."""


def ci_identity_args() -> CiIdentityArgs:
    config = pulumi.Config(CONFIG)
    optional = {
        "deploy_environment": config.get("deployEnvironment"),
        "preview_environment": config.get("previewEnvironment"),
        "deploy_branch": config.get("deployBranch"),
        "workflow": config.get("workflow"),
        "pool_id": config.get("poolId"),
        "provider_id": config.get("providerId"),
    }
    args = CiIdentityArgs(
        project=pulumi.Config("gcp").require("project"),
        repository=config.require("repository"),
        repository_id=config.get("repositoryId", ""),  # no default: `problems` says how to find it
        **{field: value for field, value in optional.items() if value is not None},
    )
    problems = args.problems(CONFIG)
    if problems:
        raise CiConfigError("\n".join(problems))
    return args


identity = CiIdentity("ci-identity", ci_identity_args())
pulumi.export("workloadIdentityProvider", identity.provider.name)
pulumi.export("deployServiceAccount", identity.deploy_account.email)
pulumi.export("previewServiceAccount", identity.preview_account.email)
