"""The stack config: the dev stack parses with its documented defaults; bad values stop with a precise message."""

from __future__ import annotations

import re
import typing

import pydantic
import pytest

from components.config.load import ConfigError, load_stack_config
from tests.infra.helpers.plans import as_engine_config, dev_config_values


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


def _set(*path_and_value):
    """An edit that sets values[path...] = value (creating nothing: the path must exist or be a leaf)."""
    *path, value = path_and_value

    def edit(values):
        target = values
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def _add_slice(**fields):
    return lambda values: values["trainyard:tpuSlices"].append({"name": "extra", "topology": "2x2", **fields})


def _delete(key):
    return lambda values: values.pop(key)


BAD_CONFIGS = [
    # (edit, key path in the message, value in the message, words of the rule)
    (
        _add_slice(topology="4x3"),
        "trainyard:tpuSlices[1].topology",
        '"4x3"',
        "is not a v6e topology (allowed: 1x1, 2x2, 2x4, 4x4",
    ),
    (
        _set("trainyard:tpuSlices", 0, "generation", "v9"),
        "trainyard:tpuSlices[0].generation",
        '"v9"',
        "not a supported TPU generation",
    ),
    (
        _set("trainyard:tpuSlices", 0, "machineType", "ct6e-standard-8t"),
        "trainyard:tpuSlices[0].machineType",
        '"ct6e-standard-8t"',
        "cannot form a v6e 4x4 slice (allowed: ct6e-standard-4t)",
    ),
    (
        _set("trainyard:tpuSlices", 0, "capacity", "dwsQueued"),
        "trainyard:tpuSlices[0].capacity",
        '"dwsQueued"',
        "rejects TPU flex-start pools with queued provisioning",
    ),
    (
        _set("trainyard:tpuSlices", 0, "capacity", "reservation"),
        "trainyard:tpuSlices[0].reservation",
        "",
        'is required when capacity is "reservation"',
    ),
    (
        _set("trainyard:tpuSlices", 0, "reservation", "my-res"),
        "trainyard:tpuSlices[0].reservation",
        '"my-res"',
        'only allowed with capacity "reservation"',
    ),
    (_set("trainyard:tpuSlices", 0, "count", 0), "trainyard:tpuSlices[0].count", "0", "out of range (allowed: >= 1)"),
    (
        _set("trainyard:tpuSlices", 0, "topolgy", "4x4"),
        "trainyard:tpuSlices[0].topolgy",
        "",
        "not a known key (allowed: name, generation, topology",
    ),
    (_set("trainyard:network", "mtu", 9000), "trainyard:network.mtu", "9000", "out of range (allowed: 1300 to 8896)"),
    (_set("trainyard:network", "mtu", "big"), "trainyard:network.mtu", '"big"', "is not allowed"),
    (
        _set("trainyard:network", "podRange", "10.50.0.0/19"),
        "trainyard:network.dcnRanges[0]",
        '"10.50.0.0/16"',
        "overlaps trainyard:network.podRange 10.50.0.0/19",
    ),
    (
        _set("trainyard:network", "gvnicRange", "192.168.1.0/24"),
        "trainyard:network.rdmaRanges[0]",
        '"192.168.1.0/24"',
        "overlaps trainyard:network.gvnicRange",
    ),
    (
        _set("trainyard:network", "nodeRange", "10.0.0.1/20"),
        "trainyard:network.nodeRange",
        '"10.0.0.1/20"',
        "is not allowed",
    ),
    (
        _set("trainyard:network", "rdmaRanges", ["192.168.1.0/24"]),
        "trainyard:network.rdmaRanges",
        '["192.168.1.0/24"]',
        "allowed: exactly 8, one per RDMA NIC",
    ),
    (
        _set("trainyard:network", "podRange", "10.64.0.0/21"),
        "trainyard:network.podRange",
        '"10.64.0.0/21"',
        "holds 8 nodes but the pools can reach 23 (allowed: /19 or larger)",
    ),
    (
        _set("trainyard:gpuPools", 0, "capacity", "dws"),
        "trainyard:gpuPools[0].capacity",
        '"dws"',
        "allowed: dwsQueued, flexStart, spot, onDemand, reservation",
    ),
    (
        _set("trainyard:gpuPools", 0, "machineType", "a3-highgpu-8g"),
        "trainyard:gpuPools[0].machineType",
        '"a3-highgpu-8g"',
        "not a supported GPU machine type (allowed: a4-highgpu-8g)",
    ),
    (
        _set("trainyard:gpuPools", 0, "minNodes", 2),
        "trainyard:gpuPools[0].minNodes",
        "2",
        'not allowed with capacity "dwsQueued": flex-start pools scale from 0',
    ),
    (
        _set("trainyard:gpuPools", 0, "maxNodes", 0),
        "trainyard:gpuPools[0].maxNodes",
        "0",
        "out of range (allowed: >= 1)",
    ),
    (
        _set("trainyard:gpuPools", 0, "name", "v6e-16-1"),
        "trainyard:gpuPools[0].name",
        '"v6e-16-1"',
        "already used by trainyard:tpuSlices[0].name",
    ),
    (
        _set("trainyard:gpuPools", 0, "gpuDriverVersion", "555"),
        "trainyard:gpuPools[0].gpuDriverVersion",
        '"555"',
        "allowed: DEFAULT, LATEST, INSTALLATION_DISABLED",
    ),
    (
        _set("trainyard:gpuPools", 0, "driverVersion", "570.133.20"),
        "trainyard:gpuPools[0].driverVersion",
        '"570.133.20"',
        "is too old for the gIB plugin v1.1.2 on every node, which needs 580.95.05 or newer, and for the FSDP "
        + "image's torch 2.14.1 (CUDA 13.0), which needs 580 or newer (allowed: 580.95.05 or newer)",
    ),
    (
        _set("trainyard:gpuPools", 0, "driverVersion", "580.65.06"),
        "trainyard:gpuPools[0].driverVersion",
        '"580.65.06"',
        "is too old for the gIB plugin v1.1.2 on every node, which needs 580.95.05 or newer (allowed: 580.95.05",
    ),
    (
        _set("trainyard:gpuPools", 0, "driverVersion", "580"),
        "trainyard:gpuPools[0].driverVersion",
        '"580"',
        "allowed: an NVIDIA driver version such as 580.95.05",
    ),
    (
        _set("trainyard:cluster", "releaseChannel", "FAST"),
        "trainyard:cluster.releaseChannel",
        '"FAST"',
        "allowed: RAPID, REGULAR, STABLE, EXTENDED, UNSPECIFIED",
    ),
    (
        _set("trainyard:cluster", "version", "1.33"),
        "trainyard:cluster.version",
        '"1.33"',
        "too old: DRANET and resource.k8s.io/v1 need it (allowed: 1.34 or newer)",
    ),
    (_set("trainyard:cluster", "name", "Trainyard_Dev"), "trainyard:cluster.name", '"Trainyard_Dev"', "is not allowed"),
    (_set("trainyard:zone", "europe-west4-a"), "trainyard:zone", '"europe-west4-a"', "is not in gcp:region us-east5"),
    (
        _set("trainyard:storage", "bucket", "UPPER"),
        "trainyard:storage.bucket",
        '"UPPER"',
        "has characters GCS refuses (allowed: 3-63",
    ),
    (
        _set("trainyard:storage", "bucket", "goog-trainyard-data"),
        "trainyard:storage.bucket",
        '"goog-trainyard-data"',
        "starts with 'goog'",
    ),
    (
        _set("trainyard:storage", "bucket", "my-google-data"),
        "trainyard:storage.bucket",
        '"my-google-data"',
        "contains 'google' or a close misspelling",
    ),
    (
        _set("trainyard:storage", "bucket", "my-g00gle-data"),
        "trainyard:storage.bucket",
        '"my-g00gle-data"',
        "contains 'google' or a close misspelling",
    ),
    (
        _set("trainyard:storage", "bucket", "192.168.5.4"),
        "trainyard:storage.bucket",
        '"192.168.5.4"',
        "is an IP address",
    ),
    (_set("trainyard:storage", "bucket", "ab"), "trainyard:storage.bucket", '"ab"', "has 2 characters"),
    (
        _set("trainyard:storage", "bucket", "data-"),
        "trainyard:storage.bucket",
        '"data-"',
        "does not start and end with a letter or digit",
    ),
    (
        _set("trainyard:storage", "bucket", "a." + "b" * 64),
        "trainyard:storage.bucket",
        "",
        "has a part of 64 characters between dots",
    ),
    (
        _set("trainyard:cluster", "systemPool", "minNodes", 6),
        "trainyard:cluster.systemPool.minNodes",
        "6",
        "is above trainyard:cluster.systemPool.maxNodes 5 (allowed: 0 to 5)",
    ),
    (
        _set("trainyard:gpuPools", 0, "minNodes", 11),
        "trainyard:gpuPools[0].minNodes",
        "11",
        "is above trainyard:gpuPools[0].maxNodes 10",
    ),
    (
        _set("trainyard:tpuSlices", 0, "count", True),
        "trainyard:tpuSlices[0].count",
        "true",
        "a boolean is not a number",
    ),
    (_set("trainyard:network", "mtu", False), "trainyard:network.mtu", "false", "a boolean is not a number"),
    (
        _set("trainyard:storage", "namespace", "default"),
        "trainyard:storage.namespace",
        '"default"',
        "belongs to Kubernetes",
    ),
    (
        _set("trainyard:storage", "namespace", "kube-jobs"),
        "trainyard:storage.namespace",
        '"kube-jobs"',
        "belongs to Kubernetes",
    ),
    (
        _set("trainyard:storage", "namespace", "kueue-system"),
        "trainyard:storage.namespace",
        '"kueue-system"',
        "is Kueue's namespace",
    ),
    (
        _set("trainyard:kueue", "namespace", "kube-system"),
        "trainyard:kueue.namespace",
        '"kube-system"',
        "belongs to Kubernetes",
    ),
    (
        _set("trainyard:tpuSlices", 0, "name", "s" * 39),
        "trainyard:tpuSlices[0].name",
        "",
        f"gives node pool '{'s' * 39}-0', which has 41 characters, more than 40",
    ),
    (_delete("gcp:project"), "gcp:project", "", "is required but not set"),
    (
        _set("trainyard:images", {"fsdp": "us-east5-docker.pkg.dev/p/r/fsdp:latest"}),
        "trainyard:images.fsdp",
        '"us-east5-docker.pkg.dev/p/r/fsdp:latest"',
        "its tag :latest is not a version and moves; allowed: an image pinned by digest",
    ),
    (
        _set("trainyard:images", {"maxtext": "my-ray"}),
        "trainyard:images.maxtext",
        '"my-ray"',
        "it has no tag, so it means :latest",
    ),
    (
        _set("trainyard:jobs", "smoke", {"ncclImage": "nvcr.io/nvidia/pytorch:latest"}),
        "trainyard:jobs.smoke.ncclImage",
        '"nvcr.io/nvidia/pytorch:latest"',
        "not :latest and not untagged",
    ),
    (
        _set("trainyard:images", {"repository": "Trainyard"}),
        "trainyard:images.repository",
        '"Trainyard"',
        "an Artifact Registry repository ID",
    ),
    (
        _set("trainyard:cluster", "privateNodes", False),
        "trainyard:cluster.publicEndpoint",
        "false",
        "needs privateNodes: GKE closes the IP endpoint only on clusters with private nodes",
    ),
    (
        _set("trainyard:cluster", "authorizedNetworks", [{"name": "office", "cidr": "203.0.113.0/24"}]),
        "trainyard:cluster.authorizedNetworks",
        '["203.0.113.0/24"]',
        "would admit nothing: the public IP endpoint is closed",
    ),
    (
        _set("trainyard:cluster", "authorizedNetworks", [{"name": "office", "cidr": "203.0.113.0/33"}]),
        "trainyard:cluster.authorizedNetworks[0].cidr",
        '"203.0.113.0/33"',
        "is not allowed (input is not a valid IPv4 network)",
    ),
    (
        _set("trainyard:cluster", "secretsEncryptionKey", "projects/p-kms1/locations/us/keyRings/r/cryptoKeys/k"),
        "trainyard:cluster.secretsEncryptionKey",
        '"projects/p-kms1/locations/us/keyRings/r/cryptoKeys/k"',
        "is in us; GKE needs a key in the cluster's region (allowed: a key in us-east5)",
    ),
    (
        _set("trainyard:cluster", "secretsEncryptionKey", "my-key"),
        "trainyard:cluster.secretsEncryptionKey",
        '"my-key"',
        "projects/PROJECT/locations/REGION/keyRings/RING/cryptoKeys/KEY",
    ),
    (
        _set("trainyard:gpuPools", 0, "compactPlacement", True),
        "trainyard:gpuPools[0].compactPlacement",
        "true",
        'is refused with capacity "dwsQueued": GKE does not place queued-provisioning GPU pools compactly',
    ),
    (
        _set("trainyard:tpuslices", []),
        "trainyard:tpuslices",
        "",
        "not a known key (allowed: gcp:project, gcp:region, trainyard:zone",
    ),
]


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
    from preflight.stack_files import StackFileError, read_stack_files

    (tmp_path / "Pulumi.yaml").write_text("name: trainyard\nruntime: python\n")
    (tmp_path / "Pulumi.bad.yaml").write_text("config:\n  gcp:project: x\n  trainyard:zone: [us-east5-b\n")
    with pytest.raises(StackFileError) as caught:
        read_stack_files(tmp_path, "bad")
    assert re.fullmatch(r"Pulumi\.bad\.yaml:4:1: .+ \(not valid YAML\)", str(caught.value)), str(caught.value)
