"""Hugging Face Hub repositories that only load with an access token (docs/cloud-facts.md: gated models)."""

from __future__ import annotations

# Organisations whose model repositories are gated: a download needs a token of an account that accepted
# the license on the Hub.
GATED_ORGANIZATIONS = frozenset({"meta-llama"})
TOKEN_ENV = "HF_TOKEN"  # what huggingface_hub reads the token from


def known_gated(repo_id: str) -> bool:
    return repo_id.split("/", 1)[0] in GATED_ORGANIZATIONS
