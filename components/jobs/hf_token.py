"""The Hugging Face token's one path into a job's pods, FSDP or MaxText: the Pulumi secret that hfTokenKey names
becomes a Kubernetes Secret `<job>-hf-token`, read by the trainer containers as HF_TOKEN through a secretKeyRef.
The value stays a Pulumi secret throughout (masked in the plan, encrypted in the state), never an argument."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.facts import huggingface

HF_TOKEN_SECRET_KEY = "token"


def hf_token_secret_name(job_name: str) -> str:
    return f"{job_name}-hf-token"


def hf_token_secret(
    job_name: str, hf_token_key: str | None, namespace: pulumi.Input[str], opts: pulumi.ResourceOptions
) -> k8s.core.v1.Secret | None:
    """The job's token Secret, or None when hfTokenKey is unset or its secret is not (components.config.tokens
    stopped `up` or warned already if the job needs one)."""
    if not hf_token_key:
        return None
    config_namespace, _, key = hf_token_key.partition(":")
    token = pulumi.Config(config_namespace).get_secret(key)
    if token is None:
        return None
    return k8s.core.v1.Secret(
        f"secret-{job_name}-hf-token",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=hf_token_secret_name(job_name), namespace=namespace),
        type="Opaque",
        string_data={HF_TOKEN_SECRET_KEY: token},
        opts=opts,
    )


def hf_token_env(job_name: str) -> dict:
    """The container env entry (Kubernetes JSON) that reads the job's token Secret."""
    reference = {"name": hf_token_secret_name(job_name), "key": HF_TOKEN_SECRET_KEY}
    return {"name": huggingface.TOKEN_ENV, "valueFrom": {"secretKeyRef": reference}}
