"""facts.images: which references are pinned, and what the rule says about the rest."""

from __future__ import annotations

import pytest

from components.config.jobs import SmokeConfig
from components.facts.gpu_software import GIB
from components.facts.host_workloads import PAUSE_IMAGE
from components.facts.images import (
    TRUSTED_REGISTRIES,
    image_source,
    image_tag,
    pin_problem,
    repository_path,
    within_registry,
)
from components.facts.kueue_release import release_objects, vendored_versions

DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize(
    "reference",
    [
        f"us-east5-docker.pkg.dev/p/trainyard/fsdp:4c97fee6f8642c94@{DIGEST}",
        f"nginx@{DIGEST}",
        "rayproject/ray:2.60.0-py312-tpu",
        "nvcr.io/nvidia/pytorch:25.03-py3",
        "localhost:5000/team/trainer:v1",
    ],
)
def test_digests_and_version_tags_are_pinned(reference):
    assert pin_problem(reference) is None


@pytest.mark.parametrize(
    ("reference", "reason"),
    [
        ("nginx", "no tag"),
        ("localhost:5000/team/trainer", "no tag"),
        ("us-docker.pkg.dev/cloud-tpu-images/jax-ai-image/tpu:latest", ":latest is not a version"),
        ("python:stable", ":stable is not a version"),
        ("python:slim", ":slim is not a version"),
        ("nginx@sha256:abc", "digest is not sha256"),
    ],
)
def test_moving_references_say_why(reference, reason):
    assert reason in pin_problem(reference)


def test_a_registry_port_is_not_a_tag():
    assert image_tag("localhost:5000/team/trainer") is None
    assert image_tag(f"localhost:5000/team/trainer:v1@{DIGEST}") == "v1"


def test_artifact_registry_path():
    assert repository_path("us-east5", "my-proj", "trainyard") == "us-east5-docker.pkg.dev/my-proj/trainyard"


@pytest.mark.parametrize(
    ("reference", "source"),
    [
        ("nginx:1.27.3", "docker.io/library/nginx"),
        ("rayproject/ray:2.60.0-py312-tpu", "docker.io/rayproject/ray"),
        ("index.docker.io/rayproject/ray:2.60.0", "docker.io/rayproject/ray"),
        ("localhost/trainer:1.0", "localhost/trainer"),
        ("localhost:5000/team/trainer:v1", "localhost:5000/team/trainer"),
        ("GKE.GCR.IO/pause:3.8", "gke.gcr.io/pause"),
        (f"us-east5-docker.pkg.dev/p/trainyard/fsdp:4c97@{DIGEST}", "us-east5-docker.pkg.dev/p/trainyard/fsdp"),
        ("not a reference", None),
    ],
)
def test_an_image_comes_from_the_repository_a_registry_resolves(reference, source):
    assert image_source(reference) == source


@pytest.mark.parametrize(
    ("source", "registry", "within"),
    [
        ("us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib", "us-docker.pkg.dev/gce-ai-infra", True),
        ("us-docker.pkg.dev/gce-ai-infra-mirror/gib", "us-docker.pkg.dev/gce-ai-infra", False),
        ("us-docker.pkg.dev.example.com/gce-ai-infra/gib", "us-docker.pkg.dev/gce-ai-infra", False),
        ("example.com/us-docker.pkg.dev/gce-ai-infra/gib", "us-docker.pkg.dev/gce-ai-infra", False),
        ("gke.gcr.io/pause", "gke.gcr.io", True),
        ("gke.gcr.io/pause", "GKE.gcr.io/", True),
        ("gke.gcr.io:5000/pause", "gke.gcr.io", False),
        ("docker.io/library/nginx", "docker.io/rayproject", False),
    ],
)
def test_a_registry_holds_an_image_by_host_and_path_parts(source, registry, within):
    assert within_registry(source, registry) is within


def test_every_image_the_program_names_comes_from_a_trusted_registry():
    kueue = [
        container["image"]
        for version in vendored_versions()
        for obj in release_objects(version)
        if obj["kind"] == "Deployment"
        for container in obj["spec"]["template"]["spec"]["containers"]
    ]
    images = [PAUSE_IMAGE, GIB.reference, SmokeConfig().jax_image, *kueue]
    assert all(any(within_registry(image_source(i), r) for r in TRUSTED_REGISTRIES) for i in images), images
