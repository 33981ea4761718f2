"""facts.images: which references are pinned, and what the rule says about the rest."""

from __future__ import annotations

import pytest

from components.facts.images import image_tag, pin_problem, repository_path

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
