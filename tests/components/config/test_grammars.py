"""Values held to the grammar of what reads them (issue 36 item 3): ASCII digits only, and Kubernetes' quantity
grammar, so a value the stack accepts never ends in a traceback in a check that parses it."""

from __future__ import annotations

import pytest

from components.config.load import ConfigError, load_stack_config
from preflight.checks.pods import parse_quantity
from tests.helpers.plans import as_engine_config, dev_config_values


def _refusal(edit) -> str:
    values = dev_config_values()
    edit(values)
    with pytest.raises(ConfigError) as error:
        load_stack_config(as_engine_config(values), "dev")
    return str(error.value)


@pytest.mark.parametrize("memory", ["16000000K", "1.３５Gi", "２００G", "200 G", "-5Gi", "1e"])
def test_a_quantity_outside_kubernetes_grammar_is_refused_naming_the_key(memory):
    message = _refusal(lambda values: values["trainyard:jobs"]["ray"].update(workerMemory=memory))
    assert "trainyard:jobs.ray.workerMemory" in message and "a Kubernetes quantity" in message


@pytest.mark.parametrize("memory", ["200G", "16Gi", "500m", "1e9", "1.5Ti", "128974848"])
def test_every_quantity_the_config_takes_is_one_placement_parses(memory):
    values = dev_config_values()
    values["trainyard:jobs"]["ray"]["workerMemory"] = memory
    config = load_stack_config(as_engine_config(values), "dev")
    assert parse_quantity(config.jobs.ray.worker_memory) > 0


def test_non_ascii_digits_are_refused_in_versions_and_zones():
    assert "trainyard:zone" in _refusal(lambda values: values.update({"trainyard:zone": "us-east５-b"}))
    message = _refusal(lambda values: values["trainyard:cluster"].update(version="1.３５"))
    assert "trainyard:cluster.version" in message


@pytest.mark.parametrize(
    "image",
    [
        "us-docker.pkg.dev/cloud-tpu-images/jax-ai-image/TPU:jax0.8.1-rev1",  # upper case in the path
        "us-docker.pkg.dev/cloud-tpu-images/jax-ai-image/tpu:" + "1" * 129,  # a tag past 128 characters
        "us-docker.pkg.dev/cloud-tpu-images/jax-ai-image/tpu:jax0.8.1-rev1 ",  # a trailing space
        "us-docker.pkg.dev/" + "a" * 250 + "/tpu:1.0",  # a name past 255 characters
    ],
)
def test_an_image_outside_the_reference_grammar_is_refused_naming_the_key(image):
    message = _refusal(lambda values: values["trainyard:jobs"]["smoke"].update(jaxImage=image))
    assert "trainyard:jobs.smoke.jaxImage" in message
    assert "not an image reference a registry takes" in message or "more than a registry takes" in message


def test_a_128_character_tag_and_a_registry_port_are_references():
    from components.facts.images import reference_problem

    assert reference_problem("localhost:5000/team/tpu:" + "1" * 128) is None
    assert reference_problem("registry.k8s.io/kueue/kueue:v0.19.2") is None


@pytest.mark.parametrize(
    ("edit", "key", "words"),
    [
        (
            lambda values: values["trainyard:jobs"]["ray"].update(metricsExportPort=6379),
            "trainyard:jobs.ray.metricsExportPort: 6379",
            "is Ray's gcs-server port on the Ray head",
        ),
        (
            lambda values: values["trainyard:jobs"]["ray"].update(metricsExportPort=9915),
            "trainyard:jobs.ray.megascalePort: 9915",
            "is also trainyard:jobs.ray.metricsExportPort on every TPU worker",
        ),
        (
            lambda values: values["trainyard:jobs"]["maxtext"][1].update(runName="llama3-8b", enabled=True),
            'trainyard:jobs.maxtext[1].runName: "llama3-8b"',
            "is trainyard:jobs.maxtext[0]'s run too, so both would write one checkpoint folder",
        ),
    ],
    ids=["metrics-on-gcs", "megascale-on-metrics", "shared-run-name"],
)
def test_what_two_parts_of_the_stack_share_is_refused_naming_the_key(edit, key, words):
    lines = _refusal(edit).splitlines()
    assert any(line.startswith(key) and words in line for line in lines), lines


@pytest.mark.parametrize(
    ("setting", "value", "words"),
    [("learning_rate", "-0.001", ">= 0"), ("gradient_accumulation_steps", "0", "> 0")],
)
def test_maxtext_settings_are_held_to_the_bounds_maxtext_declares(setting, value, words):
    message = _refusal(lambda values: values["trainyard:jobs"]["maxtext"][0].update(extraArgs={setting: value}))
    (line,) = [line for line in message.splitlines() if f"extraArgs.{setting}" in line]
    assert words in line


def test_a_machine_type_between_the_sizes_gcp_sells_is_refused_naming_them():
    message = _refusal(lambda values: values["trainyard:cluster"]["systemPool"].update(machineType="e2-standard-7"))
    (line,) = [line for line in message.splitlines() if "systemPool.machineType" in line]
    assert "is not a e2-standard machine type" in line and "e2-standard-8" in line


def test_an_nccl_smoke_buffer_past_the_gpus_memory_is_refused():
    def huge(values):
        values["trainyard:jobs"]["smoke"].update(enabled=True, ncclMegabytes=20000)

    (line,) = [line for line in _refusal(huge).splitlines() if "ncclMegabytes" in line]
    assert line.startswith("trainyard:jobs.smoke.ncclMegabytes: 20000 needs 332 GiB on each GPU of pool")
    assert "(16 ranks' buffers and its own)" in line and "(allowed: 1 to " in line
