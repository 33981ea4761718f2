"""The stack config: the dev stack parses with its documented defaults; bad values stop with a precise message."""

from __future__ import annotations

import re
import typing

import pydantic
import pytest

from components.config.job_checks import driver_summary
from components.config.load import ConfigError, load_stack_config
from tests.components.config.bad_configs import BAD_CONFIGS
from tests.helpers.plans import as_engine_config, dev_config_values


def load(values):
    return load_stack_config(as_engine_config(values), "dev")


def test_dev_stack_parses_with_defaults():
    config = load(dev_config_values())
    assert config.network.mtu == 8896
    assert [str(r) for r in config.network.dcn_ranges] == ["10.50.0.0/16", "10.60.0.0/16"]
    assert [str(r) for r in config.network.rdma_ranges] == [f"192.168.{n + 1}.0/24" for n in range(8)]
    (slices,) = config.tpu_slices
    assert (slices.slice.vms, slices.slice.machine_type, slices.pool_names) == (
        4,
        "ct6e-standard-4t",
        ["v6e-16-0", "v6e-16-1"],
    )
    (gpu,) = config.gpu_pools
    assert (gpu.machine_type, gpu.capacity, gpu.max_nodes) == ("a4-highgpu-8g", "dwsQueued", 10)
    assert config.storage.delete_with_stack is False
    assert config.bucket_location == "US-EAST5"


def test_minimal_config_takes_documented_defaults():
    config = load(
        {
            "gcp:project": "my-proj-1",
            "gcp:region": "us-central1",
            "trainyard:zone": "us-central1-b",
            "trainyard:storage": {"bucket": "my-bucket"},
        }
    )
    assert (config.cluster.name, config.cluster.version, config.cluster.release_channel) == (
        "trainyard",
        "1.35",
        "REGULAR",
    )
    assert config.cluster.deletion_protection is True
    assert (config.cluster.system_pool.machine_type, config.cluster.system_pool.min_nodes) == ("e2-standard-8", 3)
    assert config.tpu_slices == () and config.gpu_pools == ()
    assert (config.storage.namespace, config.storage.service_account) == ("trainyard", "trainyard-runner")


@pytest.mark.parametrize(("edit", "path", "value", "rule"), BAD_CONFIGS, ids=[case[1] for case in BAD_CONFIGS])
def test_bad_config_is_refused_with_key_value_and_rule(edit, path, value, rule):
    values = dev_config_values()
    edit(values)
    with pytest.raises(ConfigError) as error:
        load(values)
    lines = str(error.value).splitlines()
    matching = [line for line in lines if line.startswith(f"{path}: {value}".rstrip())]
    assert matching, f"no line for {path} in:\n{error.value}"
    assert any(rule in line for line in matching), f"rule {rule!r} missing in:\n{error.value}"


def test_a_driver_the_stack_can_run_passes_and_a_prebuilt_image_is_held_to_the_plugin_alone():
    values = dev_config_values()
    values["trainyard:gpuPools"][0]["driverVersion"] = "580.95.05"
    assert load(values).gpu_pools[0].driver_version == "580.95.05"
    values["trainyard:gpuPools"][0]["driverVersion"] = "580.65.06"
    values["trainyard:images"] = {"fsdp": "us-docker.pkg.dev/p/r/fsdp:1.2.3"}
    with pytest.raises(ConfigError) as error:
        load(values)
    (line,) = [line for line in str(error.value).splitlines() if "driverVersion" in line]
    assert "gIB plugin v1.1.2" in line and "FSDP image" not in line


def test_every_problem_is_reported_at_once():
    values = dev_config_values()
    values["trainyard:network"]["mtu"] = 100
    values["trainyard:gpuPools"][0]["capacity"] = "dws"
    with pytest.raises(ConfigError) as error:
        load(values)
    assert [problem.path for problem in error.value.problems] == [
        "trainyard:network.mtu",
        "trainyard:gpuPools[0].capacity",
    ]


def test_the_bucket_defaults_to_a_name_from_project_and_stack():
    minimal = {"gcp:project": "my-proj-1", "gcp:region": "us-central1", "trainyard:zone": "us-central1-b"}
    assert load(minimal).bucket_name == "my-proj-1-dev-data"
    assert load({**minimal, "trainyard:storage": {"bucket": "mine"}}).bucket_name == "mine"
    long_stack = load_stack_config(as_engine_config(minimal), "Feature_Branch." + "x" * 80)
    name = long_stack.bucket_name
    assert len(name) == 63 and re.fullmatch(r"[a-z0-9][-a-z0-9]*[a-z0-9]", name), name
    assert name.startswith("my-proj-1-feature-branch-xxx")
    other = load_stack_config(as_engine_config(minimal), "Feature_Branch." + "x" * 81).bucket_name
    assert other != name  # the hash keeps long names apart


def _patterns(model) -> set[str]:
    found = set()
    for field in model.model_fields.values():
        found.update(m.pattern for m in field.metadata if getattr(m, "pattern", None))
        for arg in (field.annotation, *typing.get_args(field.annotation)):
            for inner in (arg, *typing.get_args(arg)):
                if isinstance(inner, type) and issubclass(inner, pydantic.BaseModel):
                    found |= _patterns(inner)
    return found


def test_every_pattern_of_the_config_is_explained_in_words():
    from components.config.base import PATTERN_WORDS
    from components.config.models import StackConfig

    patterns = _patterns(StackConfig)
    assert len(patterns) >= 8 and patterns <= set(PATTERN_WORDS)


def test_messages_show_values_as_written_and_patterns_in_words():
    values = {
        "gcp:project": "my-proj-1",
        "gcp:region": "us-east5",
        "trainyard:zone": "us-east5-b",
        "trainyard:cluster": {"name": "Zürich"},
    }
    with pytest.raises(ConfigError) as caught:
        load(values)
    assert str(caught.value) == (
        "trainyard:cluster.name: \"Zürich\" is not allowed (allowed: lowercase letters, digits and '-', "
        "starting with a letter and ending with a letter or digit)"
    )


def test_a_stack_file_that_is_not_yaml_names_file_line_and_column(tmp_path):
    from preflight.engine.stack_files import StackFileError, read_stack_files

    (tmp_path / "Pulumi.yaml").write_text("name: trainyard\nruntime: python\n")
    (tmp_path / "Pulumi.bad.yaml").write_text("config:\n  gcp:project: x\n  trainyard:zone: [us-east5-b\n")
    with pytest.raises(StackFileError) as caught:
        read_stack_files(tmp_path, "bad")
    assert str(caught.value) == (
        "Pulumi.bad.yaml:4:1: a `[` list is never closed with `]` (YAML: expected ',' or ']', but got '<stream end>')"
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("config:\n  gcp:project: x\n    bad: indent\n", "Pulumi.bad.yaml:3:8: a `key: value` where none can start"),
        ("config:\n  - a\n  b: c\n", "Pulumi.bad.yaml:3:3: this line's indentation does not match the lines above"),
        ("config:\n\tgcp:project: x\n", "Pulumi.bad.yaml:2:1: a tab: YAML indents with spaces only"),
    ],
)
def test_the_parsers_words_come_in_plain_words_with_the_parsers_after(tmp_path, text, says):
    from preflight.engine.stack_files import StackFileError, read_stack_files

    (tmp_path / "Pulumi.yaml").write_text("name: trainyard\nruntime: python\n")
    (tmp_path / "Pulumi.bad.yaml").write_text(text)
    with pytest.raises(StackFileError) as caught:
        read_stack_files(tmp_path, "bad")
    assert str(caught.value).startswith(says) and "(YAML: " in str(caught.value)


def test_the_gpu_software_line_says_who_installs_the_driver():
    values = dev_config_values()
    config = load(values)
    assert driver_summary(config, config.gpu_pools[0]).startswith(
        "gpu-nodepool-dws: gpuDriverVersion DEFAULT must give 580.95.05 or newer"
    )
    values["trainyard:gpuPools"][0].update(gpuDriverVersion="INSTALLATION_DISABLED", driverVersion="590.44.01")
    config = load(values)
    line = driver_summary(config, config.gpu_pools[0])
    assert "the driver you install (gpuDriverVersion INSTALLATION_DISABLED) must be 580.95.05 or newer" in line
    assert line.endswith("; driverVersion 590.44.01")
