"""Ray's token authentication on every RayCluster the stack creates (the standalone one and each RayJob's): KubeRay
v1.6.2's `authOptions`, the Ray version its validation asks for, and RAY_AUTH_MODE stated on every Ray container so
an operator that dropped `authOptions` would start Ray closed, not open."""

from __future__ import annotations

import copy
import re

import pytest

from components.facts.gke import RAY_VERSION
from preflight.checks.kube_schemas import check_manifest
from tests.helpers.plans import PROJECT_DIR, everything_on

KUBERAY_MIN_TOKEN_AUTH_RAY = (2, 52, 0)  # ray-operator v1.6.2, controllers/ray/utils/validation.go


@pytest.fixture(scope="module")
def full_plan(plan_with):
    return plan_with(everything_on)


def ray_objects(plan):
    return [m for m in plan.manifests if m["kind"] in ("RayCluster", "RayJob")]


def cluster_spec(ray_object):
    return ray_object["spec"]["rayClusterSpec"] if ray_object["kind"] == "RayJob" else ray_object["spec"]


def ray_containers(spec):
    templates = [spec["headGroupSpec"]["template"], *(group["template"] for group in spec["workerGroupSpecs"])]
    return [container for template in templates for container in template["spec"]["containers"]]


def test_every_ray_cluster_asks_kuberay_for_token_authentication(full_plan):
    found = ray_objects(full_plan)
    assert {m["kind"] for m in found} == {"RayCluster", "RayJob"}
    for ray_object in found:
        spec = cluster_spec(ray_object)
        # No secretName: the operator generates the token per RayCluster; it never passes through the state.
        assert spec["authOptions"] == {"mode": "token"}
        assert spec["rayVersion"] == RAY_VERSION


def test_every_ray_container_states_token_mode(full_plan):
    for ray_object in ray_objects(full_plan):
        for container in ray_containers(cluster_spec(ray_object)):
            env = {e["name"]: e for e in container["env"]}
            assert env["RAY_AUTH_MODE"] == {"name": "RAY_AUTH_MODE", "value": "token"}, container["name"]
            assert "RAY_AUTH_TOKEN" not in env  # KubeRay adds it from its Secret; no token in the plan


def test_the_ray_version_is_the_images_and_new_enough_for_kuberay():
    dockerfile = (PROJECT_DIR / "workloads/maxtext/Dockerfile").read_text()
    requirements = (PROJECT_DIR / "workloads/maxtext/requirements.txt").read_text()
    assert f"FROM rayproject/ray:{RAY_VERSION}-" in dockerfile
    assert re.search(rf"^ray\[[a-z,]+\]=={re.escape(RAY_VERSION)}$", requirements, re.MULTILINE)
    assert tuple(int(part) for part in RAY_VERSION.split(".")) >= KUBERAY_MIN_TOKEN_AUTH_RAY


def test_the_pinned_kuberay_schema_takes_the_stacks_auth_options_and_refuses_others(dev_plan):
    (job,) = [m for m in dev_plan.manifests if m["kind"] == "RayJob"]
    assert check_manifest(job, "1.35") == []
    for wrong in ({"mode": "password"}, {"mode": "token", "tokenValue": "x"}):
        changed = copy.deepcopy(job)
        changed["spec"]["rayClusterSpec"]["authOptions"] = wrong
        problems = check_manifest(changed, "1.35")
        assert problems and all("authOptions" in str(problem) for problem in problems), problems
