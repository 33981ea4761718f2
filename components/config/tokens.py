"""The Hugging Face token: set as a Pulumi secret, and set wherever a job downloads a gated repository.

A token in clear text is refused everywhere (it would sit unencrypted in the stack file and the state); one
written into a trainer argument (FSDP args, MaxText extraArgs) already when the stack loads (job_checks). FSDP and
MaxText jobs take it the same way: hfTokenKey names the secret, a Kubernetes Secret holds it, and the pods read it
through a secretKeyRef (components/jobs/hf_token.py). A
gated job without a token stops `pulumi up` before any resource exists (its pods could only fail on the
cluster); a preview (and preflight, which never holds a shipped stack's secrets) shows the same line as a
warning.
"""

from __future__ import annotations

import pulumi
from pulumi.runtime import config as runtime_config

from components.config.models import StackConfig


class TokenError(pulumi.RunError):
    """The engine prints the lines without a trace."""


def _set_command(key: str) -> str:
    return f"`pulumi config set --secret {key} hf_...`"


def token_problems(config: StackConfig) -> tuple[list[str], list[str]]:
    """(tokens set in clear text, gated jobs without a token), one line each."""
    clear, missing = [], []
    for job in (*config.jobs.enabled_maxtext, *config.jobs.enabled_fsdp):
        key = job.hf_token_key
        value = runtime_config.get_config(key) if key else None
        if key and value is not None and not runtime_config.is_config_secret(key):
            clear.append(f"{key} is set in clear text; set it as a secret instead: {_set_command(key)}")
        if value is None and job.needs_token:
            repositories = ", ".join(job.gated_repositories) or "a gated repository"
            where = f"run {_set_command(key)}" if key else "set hfTokenKey and that secret"
            missing.append(
                f"{key or 'hfTokenKey'} is not set, and job {job.name} downloads gated {repositories}:\n"
                f"  {where} (an account that accepted the license)"
            )
    return clear, missing


def check_tokens(config: StackConfig) -> None:
    """Raise TokenError before any resource is registered; in a preview, warn about missing tokens."""
    clear, missing = token_problems(config)
    if clear or (missing and not pulumi.runtime.is_dry_run()):
        raise TokenError("\n".join(clear + missing))
    for line in missing:
        pulumi.log.warn(line)
