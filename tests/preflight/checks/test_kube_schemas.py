"""Preflight's Kubernetes schema checks: well-formed seed objects pass, each kind of mistake is caught."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from preflight.checks.kube_schemas import (
    SchemaProblem,
    check_manifests,
    supported_kubernetes_versions,
)
from tests.helpers import kube_objects as fx

CLUSTER_VERSION = "1.34"


def _problems(manifest: dict[str, Any], version: str = CLUSTER_VERSION) -> list[SchemaProblem]:
    return check_manifests([manifest], version).problems


def _walk_to(obj: Any, path: str) -> tuple[Any, str | int]:
    """The container holding the last step of 'spec.items[0].name', and that last step."""
    steps: list[str | int] = [int(s) if s.isdigit() else s for s in re.findall(r"[^.\[\]]+", path)]
    for step in steps[:-1]:
        obj = obj[step]
    return obj, steps[-1]


def setting(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(obj: dict[str, Any]) -> None:
        container, last = _walk_to(obj, path)
        container[last] = value

    return mutate


def renaming(path: str, new_name: str) -> Callable[[dict[str, Any]], None]:
    def mutate(obj: dict[str, Any]) -> None:
        container, last = _walk_to(obj, path)
        container[new_name] = container.pop(last)

    return mutate


def deleting(path: str) -> Callable[[dict[str, Any]], None]:
    def mutate(obj: dict[str, Any]) -> None:
        container, last = _walk_to(obj, path)
        del container[last]

    return mutate


@pytest.mark.parametrize("kind", sorted(fx.VALID_OBJECTS))
@pytest.mark.parametrize("version", supported_kubernetes_versions())
def test_well_formed_seed_objects_pass(kind: str, version: str) -> None:
    assert _problems(fx.VALID_OBJECTS[kind](), version) == []


def test_all_valid_objects_together_and_problem_format() -> None:
    manifests = [make() for make in fx.VALID_OBJECTS.values()]
    manifests[list(fx.VALID_OBJECTS).index("RayCluster")]["spec"]["workerGroupSpecs"][0]["numOfHost"] = 4
    assert check_manifests(manifests, CLUSTER_VERSION).problems == [
        SchemaProblem(
            obj="RayCluster trainyard/maxtext",
            path="spec.workerGroupSpecs[0].numOfHost",
            reason="additional property 'numOfHost' is not allowed (did you mean 'numOfHosts'?)",
        )
    ]


MISTAKES = [
    # (object, mutation, expected path, expected reason pattern)
    # built-in kinds
    (
        "Job",
        renaming("spec.template.spec.restartPolicy", "restartPolcy"),
        "spec.template.spec.restartPolcy",
        "additional property 'restartPolcy' is not allowed",
    ),
    ("Job", setting("spec.parallelism", "2"), "spec.parallelism", "expected integer or null, got string"),
    ("Job", setting("spec.parallelism", 2.5), "spec.parallelism", "expected integer or null, got number 2.5"),
    ("Job", deleting("spec.template"), "spec.template", "required property 'template' is missing"),
    ("Job", setting("metadata.name", "FSDP_llama"), "metadata.name", "not a valid lowercase RFC 1123 subdomain"),
    (
        "Job",
        setting("spec.template.spec.containers[0].resources.limits", {"nvidia.com/gpu": "eight"}),
        'spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]',
        '"eight" is not a Kubernetes quantity',
    ),
    (
        "Job",
        setting("spec.template.spec.containers[0].resources.limits", {"memory": "16 Gi"}),
        "spec.template.spec.containers[0].resources.limits.memory",
        '"16 Gi" is not a Kubernetes quantity',
    ),
    (
        "Job",
        setting("metadata.labels", {"kueue.x-k8s.io/queue-name": "not a label value"}),
        'metadata.labels["kueue.x-k8s.io/queue-name"]',
        "invalid label value",
    ),
    ("Service", renaming("spec.clusterIP", "clusterIp"), "spec.clusterIp", "did you mean 'clusterIP'"),
    ("Service", deleting("spec.ports[0].port"), "spec.ports[0].port", "required property 'port' is missing"),
    # "1-headless" is a valid DNS subdomain but Services need an RFC 1035 label (starts with a letter)
    ("Service", setting("metadata.name", "1-headless"), "metadata.name", "RFC 1035 label"),
    (
        "DaemonSet",
        renaming("spec.template.spec.hostNetwork", "hostNetwerk"),
        "spec.template.spec.hostNetwerk",
        "additional property",
    ),
    ("DaemonSet", deleting("spec.selector"), "spec.selector", "required property 'selector' is missing"),
    (
        "DaemonSet",
        setting("spec.template.spec.volumes[0].hostPath.path", 5),
        "spec.template.spec.volumes[0].hostPath.path",
        "expected string, got number 5",
    ),
    (
        "ResourceClaimTemplate",
        renaming("spec.spec.devices.requests[0].exactly.allocationMode", "allocationmode"),
        "spec.spec.devices.requests[0].exactly.allocationmode",
        "did you mean 'allocationMode'",
    ),
    (
        "ResourceClaimTemplate",
        setting("spec.spec.devices.requests[0].exactly.count", "2"),
        "spec.spec.devices.requests[0].exactly.count",
        "expected integer or null, got string",
    ),
    (
        "ResourceClaimTemplate",
        deleting("spec.spec.devices.requests[0].exactly.deviceClassName"),
        "spec.spec.devices.requests[0].exactly.deviceClassName",
        "required property 'deviceClassName' is missing",
    ),
    ("Secret", setting("data.token", "hf_plaintext!"), "data.token", "not base64-encoded data"),
    ("Secret", renaming("data", "stringdata"), "stringdata", "did you mean 'stringData'"),
    ("Namespace", setting("metadata.name", "Trainyard"), "metadata.name", "RFC 1123 label"),
    ("Namespace", setting("metadata.name", "team.trainyard"), "metadata.name", "RFC 1123 label"),
    (
        "ServiceAccount",
        setting("automountServiceAccountToken", "yes"),
        "automountServiceAccountToken",
        "expected boolean or null, got string",
    ),
    ("ServiceAccount", setting("metadata.namespace", "Trainyard"), "metadata.namespace", "RFC 1123 label"),
    # custom resources
    (
        "RayCluster",
        setting("spec.workerGroupSpecs[0].replicas", "2"),
        "spec.workerGroupSpecs[0].replicas",
        "expected integer, got string",
    ),
    (
        "RayCluster",
        setting("spec.workerGroupSpecs[0].replicas", 2.5),
        "spec.workerGroupSpecs[0].replicas",
        "expected integer, got number 2.5",
    ),
    ("RayCluster", deleting("spec.headGroupSpec"), "spec.headGroupSpec", "required property 'headGroupSpec'"),
    (
        "RayCluster",
        deleting("spec.workerGroupSpecs[0].groupName"),
        "spec.workerGroupSpecs[0].groupName",
        "required property 'groupName'",
    ),
    ("RayCluster", setting("metadata.name", "MaxText"), "metadata.name", "RFC 1123 subdomain"),
    ("RayCluster", renaming("metadata.namespace", "namspace"), "metadata.namspace", "did you mean 'namespace'"),
    # the seed ray-tpu-first-class.txt writes `value: true` unquoted: env values must be strings
    (
        "RayCluster",
        setting("spec.workerGroupSpecs[0].template.spec.containers[0].env[3].value", True),
        "spec.workerGroupSpecs[0].template.spec.containers[0].env[3].value",
        "expected string, got boolean true",
    ),
    (
        "RayCluster",
        setting("spec.workerGroupSpecs[0].template.spec.containers[0].env[1].name", "MEGASCALE_NUM_SLICES"),
        "spec.workerGroupSpecs[0].template.spec.containers[0].env[1]",
        "duplicate key",
    ),
    (
        "RayCluster",
        setting("spec.headGroupSpec.template.metadata.labels", {"app": "-ray-"}),
        "spec.headGroupSpec.template.metadata.labels.app",
        "invalid label value '-ray-'",
    ),
    (
        "RayJob",
        renaming("spec.shutdownAfterJobFinishes", "shutdownAfterJobFinish"),
        "spec.shutdownAfterJobFinish",
        "did you mean 'shutdownAfterJobFinishes'",
    ),
    (
        "RayJob",
        setting("spec.rayClusterSpec.workerGroupSpecs[0].numOfHosts", "4"),
        "spec.rayClusterSpec.workerGroupSpecs[0].numOfHosts",
        "expected integer, got string",
    ),
    (
        "RayJob",
        deleting("spec.rayClusterSpec.workerGroupSpecs[0].template"),
        "spec.rayClusterSpec.workerGroupSpecs[0].template",
        "required property 'template'",
    ),
    (
        "RayJob",
        setting("metadata.annotations", {"pulumi.com/": "true"}),
        'metadata.annotations["pulumi.com/"]',
        "invalid annotation key",
    ),
    # v1beta1 spellings are errors in v1beta2
    ("ClusterQueue", renaming("spec.cohortName", "cohort"), "spec.cohort", "additional property 'cohort'"),
    ("ClusterQueue", setting("spec.admissionChecks", ["dws-prov"]), "spec.admissionChecks", "additional property"),
    (
        "ClusterQueue",
        setting("spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "lots"),
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        '"lots" is not a Kubernetes quantity',
    ),
    (
        "ClusterQueue",
        deleting("spec.resourceGroups[0].coveredResources"),
        "spec.resourceGroups[0].coveredResources",
        "required property 'coveredResources'",
    ),
    ("ResourceFlavor", renaming("spec.nodeLabels", "nodeLabel"), "spec.nodeLabel", "did you mean 'nodeLabels'"),
    (
        "ResourceFlavor",
        setting("spec.nodeLabels", {"cloud.google.com/gke-tpu-topology": 4}),
        'spec.nodeLabels["cloud.google.com/gke-tpu-topology"]',
        "expected string, got number 4",
    ),
    (
        "AdmissionCheck",
        setting("spec.parameters.kind", "Provisioning_RequestConfig"),
        "spec.parameters.kind",
        "does not match",
    ),
    ("AdmissionCheck", deleting("spec.controllerName"), "spec.controllerName", "required property 'controllerName'"),
    (
        "ProvisioningRequestConfig",
        setting("spec.managedResources", "nvidia.com/gpu"),
        "spec.managedResources",
        "expected array, got string",
    ),
    (
        "ProvisioningRequestConfig",
        deleting("spec.provisioningClassName"),
        "spec.provisioningClassName",
        "required property 'provisioningClassName'",
    ),
    ("LocalQueue", renaming("spec.clusterQueue", "clusterqueue"), "spec.clusterqueue", "did you mean 'clusterQueue'"),
    ("LocalQueue", setting("spec.clusterQueue", "Cluster_Queue"), "spec.clusterQueue", "does not match"),
    ("GKENetworkParamSet", setting("spec.deviceMode", "Rdma"), "spec.deviceMode", "is not one of"),
    ("GKENetworkParamSet", renaming("spec.vpcSubnet", "vpcSubnetwork"), "spec.vpcSubnetwork", "additional property"),
    ("Network", setting("spec.type", "device"), "spec.type", "is not one of"),
    ("Network", deleting("spec.type"), "spec.type", "required property 'type'"),
    ("Network", deleting("spec.parametersRef.kind"), "spec.parametersRef.kind", "required property 'kind'"),
    # unknown apiVersion / kind
    ("Job", setting("kind", "IndexedJob"), "kind", "unknown kind 'IndexedJob' in batch/v1 at Kubernetes 1.34"),
    ("Job", setting("apiVersion", "batch/v2"), "apiVersion", "unknown apiVersion 'batch/v2' .*batch serves: v1"),
    ("ResourceClaimTemplate", setting("apiVersion", "resource.k8s.io/v2"), "apiVersion", "resource.k8s.io serves: v1,"),
    ("Secret", setting("kind", "Secrets"), "kind", "did you mean 'Secret'"),
    (
        "RayCluster",
        setting("kind", "RayClustr"),
        "kind",
        "unknown kind 'RayClustr' in ray.io/v1; known kinds: RayCluster, RayJob",
    ),
    ("RayCluster", setting("kind", "Raycluster"), "kind", "did you mean 'RayCluster'"),
    (
        "RayJob",
        setting("apiVersion", "ray.io/v2"),
        "apiVersion",
        "unknown apiVersion 'ray.io/v2'; ray.io serves: v1, v1alpha1",
    ),
    (
        "ClusterQueue",
        setting("apiVersion", "kueue.x-k8s.io/v1beta3"),
        "apiVersion",
        "kueue.x-k8s.io serves: v1beta1, v1beta2",
    ),
    ("Network", setting("apiVersion", "networking.gke.io/v2"), "apiVersion", "networking.gke.io serves: v1"),
    ("Network", setting("apiVersion", "networking.example.com/v1"), "apiVersion", "no CRD schemas for group"),
]


@pytest.mark.parametrize(("kind", "mutate", "path", "reason"), MISTAKES, ids=[f"{m[0]}:{m[2]}" for m in MISTAKES])
def test_each_kind_of_mistake_is_caught(
    kind: str, mutate: Callable[[dict[str, Any]], None], path: str, reason: str
) -> None:
    manifest = fx.VALID_OBJECTS[kind]()
    mutate(manifest)
    problems = _problems(manifest)
    assert [p.path for p in problems] == [path], problems
    assert re.search(reason, problems[0].reason), problems[0].reason


def test_every_mistake_in_an_object_is_reported_not_only_the_first() -> None:
    job = fx.fsdp_job()
    job["spec"]["parallelism"] = "2"
    job["spec"]["template"]["spec"]["containers"][0]["imagePullPolice"] = "Always"
    job["metadata"]["name"] = "FSDP"
    assert sorted(p.path for p in _problems(job)) == [
        "metadata.name",
        "spec.parallelism",
        "spec.template.spec.containers[0].imagePullPolice",
    ]


def test_integral_floats_from_pulumi_count_as_integers() -> None:
    # The engine hands numbers over as floats; 2.0 reaches the API server as 2.
    ray = fx.ray_cluster()
    ray["spec"]["workerGroupSpecs"][0].update(replicas=2.0, numOfHosts=4.0)
    job = fx.fsdp_job()
    job["spec"].update(parallelism=2.0, completions=2.0)
    assert check_manifests([ray, job], CLUSTER_VERSION).problems == []


def test_null_fields_are_pruned_like_the_api_server_does_for_custom_resources() -> None:
    ray = fx.ray_cluster()
    ray["spec"]["workerGroupSpecs"][0]["idleTimeoutSeconds"] = None
    assert _problems(ray) == []
    del ray["spec"]["headGroupSpec"]["template"]
    ray["spec"]["headGroupSpec"]["template"] = None  # pruned, so still missing
    assert [p.path for p in _problems(ray)] == ["spec.headGroupSpec.template"]


def test_required_fields_with_server_defaults_may_be_omitted() -> None:
    ray = fx.ray_cluster()
    group = ray["spec"]["workerGroupSpecs"][0]
    assert "minReplicas" not in group and "maxReplicas" not in group  # required in the CRD, defaulted by the server
    assert _problems(ray) == []


def test_unnamed_objects_pass_because_pulumi_auto_names_them() -> None:
    flavor = fx.resource_flavor()
    del flavor["metadata"]["name"]
    assert _problems(flavor) == []


@pytest.mark.parametrize(
    ("bad", "path", "reason"),
    [
        ("Job", "", "expected a Kubernetes object (a mapping), got str"),
        ({"kind": "Job"}, "apiVersion", "required string 'apiVersion' is missing"),
        ({"apiVersion": "batch/v1", "kind": ""}, "kind", "required string 'kind' is missing or empty"),
    ],
)
def test_malformed_manifests_are_problems_not_crashes(bad: Any, path: str, reason: str) -> None:
    [problem] = check_manifests([bad], CLUSTER_VERSION).problems
    assert (problem.path, problem.reason[: len(reason)]) == (path, reason)
