"""The Hugging Face token: only as a Pulumi secret, only into a Kubernetes Secret, and required by gated jobs."""

from __future__ import annotations

import json

import pytest

from components.config.tokens import TokenError
from preflight.diff.compare import compare
from preflight.diff.markdown import render_markdown
from preflight.engine.plan import plan_config
from preflight.engine.stack_files import read_stack_files
from tests.helpers.plans import PROJECT_DIR, as_engine_config, dev_config_values, manifest

TOKEN = "hf_SENTINELxq7Zt0kenValue"
KEY = "huggingface:token"


def plan(values=None, token: str | None = None, secret: bool = True, preview: bool = True):
    files = read_stack_files(PROJECT_DIR, "dev")
    config = as_engine_config(values or dev_config_values()) | ({KEY: token} if token else {})
    secret_keys = [KEY] if token and secret else []
    return plan_config(files.project, "dev", files.main, config, secret_keys=secret_keys, preview=preview)


def without_gated_flag_on_a_public_model(values):
    (job,) = values["trainyard:jobs"]["fsdp"]
    del job["gated"]
    job["args"]["model-id"] = "Qwen/Qwen2.5-0.5B"
    return values


def test_the_token_reaches_the_pod_only_through_a_secret_and_is_never_shown(capfd, caplog):
    tokened = plan(token=TOKEN)
    secret = manifest(tokened, "Secret", "llama31-70b-fsdp-hf-token")
    assert secret["stringData"] == {"token": "[secret]"}  # the value masked, the shape kept: it schema-checks
    env = manifest(tokened, "Job", "llama31-70b-fsdp")["spec"]["template"]["spec"]["containers"][0]["env"]
    (variable,) = [e for e in env if e["name"] == "HF_TOKEN"]
    assert variable == {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": secret["metadata"]["name"], "key": "token"}},
    }
    config_maps = [m for m in tokened.manifests if m["kind"] == "ConfigMap"]
    diff = render_markdown(compare(plan().to_json(), tokened.to_json()), "before", "after")
    shown = [json.dumps(tokened.to_json()), json.dumps(tokened.outputs), json.dumps(config_maps), diff]
    shown += [*capfd.readouterr(), caplog.text]
    assert [TOKEN in text for text in shown] == [False] * len(shown)
    assert "Secret" in diff  # the diff does show that the Secret appears


def test_a_gated_job_without_a_token_stops_up_before_any_resource_and_warns_in_a_preview(caplog):
    with pytest.raises(TokenError) as stopped:
        plan(preview=False)
    message = str(stopped.value)
    assert "huggingface:token is not set" in message and "llama31-70b-fsdp" in message
    assert "meta-llama/Llama-3.1-70B" in message and "pulumi config set --secret huggingface:token" in message
    previewed = plan()
    assert any(r.type == "kubernetes:batch/v1:Job" for r in previewed.resources)
    assert "huggingface:token is not set, and job llama31-70b-fsdp" in caplog.text


def test_up_with_a_secret_token_goes_ahead():
    assert manifest(plan(token=TOKEN, preview=False), "Secret", "llama31-70b-fsdp-hf-token")


def test_a_token_in_clear_text_is_refused_even_in_a_preview():
    for preview in (True, False):
        with pytest.raises(TokenError, match="huggingface:token is set in clear text; set it as a secret"):
            plan(token=TOKEN, secret=False, preview=preview)


def test_a_public_model_needs_no_token(caplog):
    values = without_gated_flag_on_a_public_model(dev_config_values())
    secrets = [m["metadata"]["name"] for m in plan(values, preview=False).manifests if m["kind"] == "Secret"]
    assert secrets == ["kueue-webhook-server-cert"]  # Kueue's own (its webhook certificate); no token Secret
    assert "is not set" not in caplog.text


def test_gated_is_derived_from_the_repositories_unless_said():
    from components.config.load import load_stack_config

    values = dev_config_values()
    (job,) = values["trainyard:jobs"]["fsdp"]
    del job["gated"]
    (parsed,) = load_stack_config(as_engine_config(values), "dev").jobs.fsdp
    assert parsed.gated_repositories == ["meta-llama/Llama-3.1-70B"]
    job["gated"] = ["meta-llama/Llama-3.1-70B", "philschmid/gretel-synthetic-text-to-sql"]
    (parsed,) = load_stack_config(as_engine_config(values), "dev").jobs.fsdp
    assert parsed.gated_repositories == ["meta-llama/Llama-3.1-70B", "philschmid/gretel-synthetic-text-to-sql"]
    job["gated"] = []
    (parsed,) = load_stack_config(as_engine_config(values), "dev").jobs.fsdp
    assert not parsed.needs_token


def test_a_job_that_leaves_the_model_to_the_trainer_is_held_to_the_model_it_loads():
    values = dev_config_values()
    (job,) = values["trainyard:jobs"]["fsdp"]
    del job["gated"]
    job["args"].pop("model-id", None)  # the trainer's default: meta-llama/Llama-3.1-70B, gated
    with pytest.raises(TokenError, match="downloads gated meta-llama/Llama-3.1-70B"):
        plan(values, preview=False)
