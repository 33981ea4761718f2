"""MaxText jobs take the Hugging Face token as FSDP jobs do: hfTokenKey names a Pulumi secret, a Kubernetes Secret
holds it, every Ray container reads it as HF_TOKEN through a secretKeyRef; never an argument, never in the plan."""

from __future__ import annotations

import json

import pytest

from components.config.load import load_stack_config
from components.config.tokens import TokenError
from preflight.engine.plan import plan_config
from preflight.engine.stack_files import read_stack_files
from tests.helpers.plans import PROJECT_DIR, as_engine_config, dev_config_values, manifest

TOKEN = "hf_SENTINELmaxtextTokenValue"
KEY = "huggingface:token"
GATED_TOKENIZER = "meta-llama/Llama-3.1-8B"


def plan(values, token: str | None = None, preview: bool = True):
    files = read_stack_files(PROJECT_DIR, "dev")
    config = as_engine_config(values) | ({KEY: token} if token else {})
    return plan_config(files.project, "dev", files.main, config, secret_keys=[KEY] if token else [], preview=preview)


def maxtext_job(values, **fields):
    job = values["trainyard:jobs"]["maxtext"][0]
    job.update(fields)
    return values


def ray_containers(rayjob):
    spec = rayjob["spec"]["rayClusterSpec"]
    templates = [spec["headGroupSpec"]["template"], *(group["template"] for group in spec["workerGroupSpecs"])]
    return [container for template in templates for container in template["spec"]["containers"]]


def hf_env(container):
    return [e for e in container.get("env", []) if e["name"] == "HF_TOKEN"]


def test_a_maxtext_job_that_names_the_key_reads_the_token_from_a_secret_in_every_ray_container():
    tokened = plan(maxtext_job(dev_config_values(), hfTokenKey=KEY), token=TOKEN)
    secret = manifest(tokened, "Secret", "llama3-8b-hf-token")
    assert secret["stringData"] == {"token": "[secret]"}
    reference = {"secretKeyRef": {"name": "llama3-8b-hf-token", "key": "token"}}
    containers = ray_containers(manifest(tokened, "RayJob", "llama3-8b"))
    assert len(containers) == 2  # the head (the driver) and the TPU workers (MaxText's pyconfig reads HF_TOKEN)
    assert all(hf_env(container) == [{"name": "HF_TOKEN", "valueFrom": reference}] for container in containers)
    assert TOKEN not in json.dumps(tokened.to_json())
    assert TOKEN not in manifest(tokened, "RayJob", "llama3-8b")["spec"]["entrypoint"]


def test_a_maxtext_job_without_the_key_gets_no_token_even_when_the_secret_is_set():
    tokened = plan(dev_config_values(), token=TOKEN)
    assert all(not hf_env(container) for container in ray_containers(manifest(tokened, "RayJob", "llama3-8b")))
    secrets = [m["metadata"]["name"] for m in tokened.manifests if m["kind"] == "Secret"]
    assert "llama3-8b-hf-token" not in secrets and "llama31-70b-fsdp-hf-token" in secrets


def test_a_gated_maxtext_job_without_a_token_stops_up_and_warns_in_a_preview(caplog):
    values = maxtext_job(dev_config_values(), hfTokenKey=KEY, extraArgs={"tokenizer_path": GATED_TOKENIZER})
    values["trainyard:jobs"]["fsdp"][0]["enabled"] = False
    with pytest.raises(TokenError, match=f"job llama3-8b downloads gated {GATED_TOKENIZER}"):
        plan(values, preview=False)
    plan(values)
    assert "huggingface:token is not set, and job llama3-8b" in caplog.text


def test_a_gated_maxtext_job_that_names_no_key_is_told_to():
    values = maxtext_job(dev_config_values(), extraArgs={"tokenizer_path": GATED_TOKENIZER})
    values["trainyard:jobs"]["fsdp"][0]["enabled"] = False
    with pytest.raises(
        TokenError, match="(?s)hfTokenKey is not set, and job llama3-8b .* set hfTokenKey and that secret"
    ):
        plan(values, preview=False)


def test_counts_and_repositories_under_token_words_pass():
    values = maxtext_job(
        dev_config_values(), extraArgs={"num_moe_token_chunks": "4", "tokenizer_path": "google/gemma-2b"}
    )
    (job, _) = load_stack_config(as_engine_config(values), "dev").jobs.maxtext
    assert job.extra_args == {"num_moe_token_chunks": "4", "tokenizer_path": "google/gemma-2b"}
    assert not job.needs_token
