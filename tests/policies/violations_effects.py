"""Issue 39's probes, judged by what the change does: a route to a Ray head, Ray without its token, checkpoints that
cannot be restored, a long-lived storage secret, an image from a registry nobody vetted."""

from __future__ import annotations

from collections.abc import Callable

from tests.helpers import policy_stacks as fx
from tests.policies.policy_edits import (
    Stack,
    add,
    container_edit,
    edit,
    head_service,
    http_route,
    iam,
    ingress,
    ray_cluster,
    selecting,
)

Case = tuple[str, Callable[[], Stack], set[str]]
CLUSTER = "spec.rayClusterSpec"
HEAD_GROUP = f"{CLUSTER}.headGroupSpec"
HEAD = f"{HEAD_GROUP}.template.spec"
WORKER = f"{CLUSTER}.workerGroupSpecs.0.template.spec"
ROUTED = {"ray-head-not-routed"}
PORTS = {"ray-ports-stay-in-the-cluster"}
TOKEN = {"ray-requires-token-auth"}
REGISTRIES = {"images-from-allowed-registries"}


ON_HEAD = {"ray.io/node-type": "head"}
# Ingresses and Gateway routes to the Ray head's Service: one the stack writes, or one KubeRay makes.
ROUTE_CASES: list[Case] = [
    ("an Ingress to a Service selecting the Ray head", add(selecting("ray-api", ON_HEAD), ingress("ray-api")), ROUTED),
    (
        "an Ingress's default backend, a Service selecting the whole Ray cluster",
        add(selecting("ray-all", {"ray.io/cluster": "maxtext"}), ingress("ray-all", default=True)),
        ROUTED,
    ),
    ("an Ingress to the head Service KubeRay makes for a RayJob", add(ingress("maxtext-x7k2p-head-svc")), ROUTED),
    (
        "an Ingress to the head Service a RayJob names itself",
        lambda: [
            *head_service({"metadata": {"name": "ray-jobs"}})(),
            ingress("ray-jobs")(),
        ],
        ROUTED,
    ),
    (
        "an HTTPRoute to the head Service KubeRay makes for a RayCluster",
        add(http_route({"name": "maxtext-head-svc", "port": 8265.0})),
        ROUTED,
    ),
    (
        "an HTTPRoute to a head-selecting Service of another namespace",
        add(
            lambda: fx.changed(selecting("ray-api", ON_HEAD)(), "metadata.namespace", "ray"),
            http_route({"kind": "Service", "name": "ray-api", "namespace": "ray", "port": 8265.0}),
        ),
        ROUTED,
    ),
    (
        "an HTTPRoute that mirrors its traffic to the Ray head",
        add(
            selecting("web", {"app": "web"}),
            http_route({"name": "web", "port": 80.0}, mirror={"name": "maxtext-head-svc", "port": 8265.0}),
        ),
        ROUTED,
    ),
]

# Ray's ports opened outside the cluster by other means than a LoadBalancer or NodePort type.
PORT_CASES: list[Case] = [
    (
        "a Service with externalIPs selecting the Ray head",
        add(selecting("ray-external", ON_HEAD, externalIPs=["203.0.113.7"])),
        PORTS,
    ),
    ("the Ray head Service given externalIPs", head_service({"spec": {"externalIPs": ["203.0.113.7"]}}), PORTS),
    ("the Ray head Service made a LoadBalancer", head_service({"spec": {"type": "LoadBalancer"}}), PORTS),
    ("KubeRay's Ingress for the Ray head", edit("maxtext", f"{HEAD_GROUP}.enableIngress", True), PORTS),
]

AUTH_CASES: list[Case] = [
    ("RayJob without token auth (authOptions removed)", edit("maxtext", f"{CLUSTER}.authOptions", fx.DELETE), TOKEN),
    ("RayJob's auth mode disabled", edit("maxtext", f"{CLUSTER}.authOptions.mode", "disabled"), TOKEN),
    ("RAY_AUTH_MODE removed from the Ray head", container_edit("maxtext", "env", [], HEAD), TOKEN),
    (
        "RAY_AUTH_MODE disabled on the workers",
        container_edit("maxtext", "env", [{"name": "RAY_AUTH_MODE", "value": "disabled"}], WORKER),
        TOKEN,
    ),
    (
        "RAY_AUTH_MODE stated twice, the last disabled",
        container_edit("maxtext", "env", [*fx.RAY_AUTH_ENV, {"name": "RAY_AUTH_MODE", "value": "disabled"}], HEAD),
        TOKEN,
    ),
    ("a standalone RayCluster without token auth", add(ray_cluster(authOptions={})), TOKEN),
]

BUCKET = "trainyard-dev-data"
DATA_CASES: list[Case] = [
    (
        "bucket soft delete off",
        edit(BUCKET, "softDeletePolicy", {"retentionDurationSeconds": 0.0}),
        {"bucket-soft-delete-on"},
    ),
    (
        "an HMAC key for the workloads' account",
        add(
            iam(
                "gcp:storage/hmacKey:HmacKey",
                serviceAccountEmail="trainyard-runner@trainyard-dev.iam.gserviceaccount.com",
            )
        ),
        {"no-hmac-keys"},
    ),
]

TRAINER_IMAGE = "spec.template.spec.containers.0.image"
RAY_IMAGE = f"{WORKER}.containers.0.image"
# Images judged by the registry host and path their reference resolves to, not by a substring of it.
SOURCE_CASES: list[Case] = [
    ("trainer from Docker Hub, pinned", edit("fsdp-finetune", TRAINER_IMAGE, "pytorch/pytorch:2.7.1"), REGISTRIES),
    ("Ray workers from Docker Hub, pinned", edit("maxtext", RAY_IMAGE, "rayproject/ray:2.60.0-py312-tpu"), REGISTRIES),
    (
        "an allowed registry's name as a longer host",
        edit("fsdp-finetune", TRAINER_IMAGE, "us-docker.pkg.dev.example.com/gce-ai-infra/gpudirect-gib/gib:v1.1.2"),
        REGISTRIES,
    ),
    (
        "an allowed registry's name as a path on another host",
        edit("fsdp-finetune", TRAINER_IMAGE, "example.com/us-docker.pkg.dev/gce-ai-infra/gib:v1.1.2"),
        REGISTRIES,
    ),
    (
        "an allowed path prefix extended",
        edit("fsdp-finetune", TRAINER_IMAGE, "us-docker.pkg.dev/gce-ai-infra-mirror/gib:v1.1.2"),
        REGISTRIES,
    ),
    (
        "the stack's repository name in another project",
        edit("fsdp-finetune", TRAINER_IMAGE, "us-east5-docker.pkg.dev/other-project/trainyard/fsdp:1.0"),
        REGISTRIES,
    ),
    ("an allowed host on another port", edit("fsdp-finetune", TRAINER_IMAGE, "gke.gcr.io:5000/fsdp:1.0"), REGISTRIES),
]

EFFECT_CASES: list[Case] = [*ROUTE_CASES, *PORT_CASES, *AUTH_CASES, *DATA_CASES, *SOURCE_CASES]
