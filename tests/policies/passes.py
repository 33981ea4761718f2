"""Compliant variations of the good stack, each with the pack config it runs under: no policy may fire."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from components.facts.gpu_software import GIB
from components.facts.host_workloads import PAUSE_IMAGE
from components.facts.images import TRUSTED_REGISTRIES
from tests.helpers import policy_stacks as fx
from tests.policies.policy_edits import (
    GPU_POOL,
    Stack,
    add,
    cpu_job,
    dcn_attached_to_a_pool,
    edit,
    http_route,
    iam,
    ingress,
    installer,
    kube_object,
    metadata_selecting_stack,
    plain_deployment,
    public_endpoint,
    queued_tpu_pool,
    ray_cluster,
    selecting,
    shaped_rayjob,
)

RBAC = "rbac.authorization.k8s.io/v1"


def _binding_body(role_kind: str, role: str, subject_kind: str, subject: str) -> dict[str, Any]:
    return {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": subject_kind, "name": subject}],
    }


TRAINER_IMAGE = "spec.template.spec.containers.0.image"
HEAD_ENV = "spec.rayClusterSpec.headGroupSpec.template.spec.containers.0.env"
DEFAULT_REGISTRIES = list(TRUSTED_REGISTRIES)

# Issue 39's compliant variations: what the probes of violations_effects.py refuse, done the way that passes.
EFFECT_PASSES: list[tuple[str, Callable[[], Stack], dict[str, Any] | None]] = [
    (
        "an Ingress to a web Service, an HTTPRoute to a RayService's Serve Service",
        add(selecting("web", {"app": "web"}), ingress("web"), http_route({"name": "chat-serve-svc", "port": 8000.0})),
        None,
    ),
    (
        "externalIPs on a Service that is not Ray's",
        add(
            lambda: fx.changed(
                selecting("web", {"app": "web"}, externalIPs=["203.0.113.7"])(),
                "spec.ports",
                [{"port": 443.0, "targetPort": 8443.0}],
            )
        ),
        None,
    ),
    (
        "a standalone RayCluster with token auth; a RayJob submitter that states no RAY_AUTH_MODE",
        lambda: fx.replace(
            fx.good_stack() + [ray_cluster()()],
            fx.changed(
                fx.maxtext_rayjob(),
                "spec.submitterPodTemplate",
                {"spec": fx.contained({"containers": [{"name": "submit", "image": fx.image("maxtext:1.0")}]})},
            ),
        ),
        None,
    ),
    (
        "RAY_AUTH_MODE among other env, a Secret's value beside it",
        edit(
            "maxtext",
            HEAD_ENV,
            [
                {"name": "JAX_PLATFORMS", "value": "tpu,cpu"},
                *fx.RAY_AUTH_ENV,
                {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "t", "key": "token"}}},
            ],
        ),
        None,
    ),
    ("soft delete unset (GCS keeps objects 7 days)", edit("trainyard-dev-data", "softDeletePolicy", fx.DELETE), None),
    (
        "soft delete of 90 days",
        edit("trainyard-dev-data", "softDeletePolicy.retentionDurationSeconds", 7_776_000.0),
        None,
    ),
    (
        "images from each default registry: GKE's, Kubernetes', gIB's, the TPU JAX images",
        add(
            lambda: plain_deployment(
                False,
                initContainers=[{"name": "gib", "image": GIB.reference}],
                containers=[
                    {"name": "pause", "image": PAUSE_IMAGE},
                    {"name": "kueue", "image": "registry.k8s.io/kueue/kueue:v0.19.2"},
                    {"name": "jax", "image": "us-docker.pkg.dev/cloud-tpu-images/jax-ai-image/tpu:jax0.8.1-rev1"},
                ],
            )
        ),
        None,
    ),
    (
        "NVIDIA's PyTorch image and Ray's Docker Hub images, allowed by host and path in the pack config",
        lambda: fx.replace(
            fx.replace(fx.good_stack(), fx.changed(fx.fsdp_job(), TRAINER_IMAGE, "nvcr.io/nvidia/pytorch:25.03-py3")),
            fx.changed(
                fx.maxtext_rayjob(),
                "spec.rayClusterSpec.workerGroupSpecs.0.template.spec.containers.0.image",
                "rayproject/ray:2.60.0-py312-tpu",
            ),
        ),
        {
            "images-from-allowed-registries": {
                "allowedRegistries": [*DEFAULT_REGISTRIES, "nvcr.io/nvidia", "docker.io/rayproject"]
            }
        },
    ),
    (
        "the trainer from a second repository of the stack, in another region",
        lambda: fx.replace(
            fx.good_stack() + [_repository("trainers", "us-central1")],
            fx.changed(fx.fsdp_job(), TRAINER_IMAGE, "us-central1-docker.pkg.dev/trainyard-dev/trainers/fsdp:1.0"),
        ),
        None,
    ),
]


def _repository(repository: str, location: str) -> dict[str, Any]:
    inputs = {**fx.image_repository()["inputs"], "repositoryId": repository, "location": location}
    return fx.resource("gcp:artifactregistry/repository:Repository", repository, inputs)


PASSES: list[tuple[str, Callable[[], Stack], dict[str, Any] | None]] = [
    *EFFECT_PASSES,
    (
        "egress rule to anywhere, a deny rule from anywhere, ingress from a network tag or two offices",
        add(
            iam("gcp:compute/firewall:Firewall", direction="EGRESS", sourceRanges=["0.0.0.0/0"]),
            iam(
                "gcp:compute/firewall:Firewall", sourceRanges=["0.0.0.0/1", "128.0.0.0/1"], denies=[{"protocol": "all"}]
            ),
            iam("gcp:compute/firewall:Firewall", sourceTags=["bastion"], allows=[{"protocol": "tcp"}]),
            iam(
                "gcp:compute/firewall:Firewall",
                sourceRanges=["198.51.100.0/24", "8.8.0.0/16", "10.0.0.0/8"],
                allows=[{"protocol": "tcp"}],
            ),
        ),
        None,
    ),
    (
        "the deploy account writes the build cache, a node account reads the images",
        add(
            iam(
                "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember",
                repository="trainyard-cache",
                role="roles/artifactregistry.writer",
                member="serviceAccount:trainyard-deploy@trainyard-dev.iam.gserviceaccount.com",
            ),
            iam(
                "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember",
                repository="trainyard",
                role="roles/artifactregistry.reader",
                member="serviceAccount:trainyard-dev-tpu@trainyard-dev.iam.gserviceaccount.com",
            ),
        ),
        None,
    ),
    (
        "object user to one workload identity, Workload Identity User to one CI subject",
        add(
            iam(
                "gcp:serviceaccount/iAMMember:IAMMember",
                role="roles/iam.workloadIdentityUser",
                member="principal://iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/github/"
                "subject/repo:example/trainyard:environment:dev",
            )
        ),
        None,
    ),
    (
        "the NCCL installer in its shape: privileged init, host namespaces, writable host paths, no token",
        add(installer),
        None,
    ),
    (
        "NET_BIND_SERVICE added, as the restricted profile allows",
        edit("fsdp-finetune", "spec.template.spec.containers.0.securityContext.capabilities.add", ["NET_BIND_SERVICE"]),
        None,
    ),
    (
        "a Ray head whose in-tree autoscaler calls the API keeps its token",
        lambda: fx.replace(
            fx.good_stack(),
            fx.changed(
                fx.changed(fx.maxtext_rayjob(), "spec.rayClusterSpec.enableInTreeAutoscaling", True),
                "spec.rayClusterSpec.headGroupSpec.template.spec.automountServiceAccountToken",
                fx.DELETE,
            ),
        ),
        None,
    ),
    (
        "the Ray dashboard behind a ClusterIP Service, a LoadBalancer on another port",
        add(
            kube_object(
                "v1",
                "Service",
                "ray-head",
                {"spec": {"selector": {"ray.io/node-type": "head"}, "ports": [{"port": 8265.0, "targetPort": 8265.0}]}},
            ),
            kube_object(
                "v1",
                "Service",
                "web",
                {"spec": {"type": "LoadBalancer", "ports": [{"port": 443.0, "targetPort": 8443.0}]}},
            ),
            kube_object(  # another app's port named `client`: not Ray's unless the Service selects Ray's pods
                "v1",
                "Service",
                "chat",
                {
                    "spec": {
                        "type": "NodePort",
                        "selector": {"app": "chat"},
                        "ports": [{"port": 80.0, "targetPort": "client"}],
                    }
                },
            ),
        ),
        None,
    ),
    (
        "a tokenizer flag, a token from the environment, a RayJob runtime env without secrets",
        lambda: fx.replace(
            fx.replace(
                fx.good_stack(),
                fx.changed(
                    fx.fsdp_job(),
                    "spec.template.spec.containers.0.args",
                    ['python -m train --tokenizer-id meta-llama/x --hub-token "$HF_TOKEN" --max-tokens 512'],
                ),
            ),
            fx.changed(
                fx.maxtext_rayjob(),
                "spec.runtimeEnvYAML",
                "working_dir: file:///opt/code.zip\nenv_vars:\n  HF_HOME: /cache\n",
            ),
        ),
        None,
    ),
    (
        "trainer image by digest",
        edit("fsdp-finetune", "spec.template.spec.containers.0.image", fx.image(f"fsdp:dev@sha256:{'ab' * 32}")),
        None,
    ),
    ("DCN node network with its ingress rule", dcn_attached_to_a_pool(firewall=True), None),
    # In a release channel GKE keeps every pool's auto-upgrade on, flex-start pools too.
    ("flex-start pool with auto-upgrade on", edit(GPU_POOL, "management.autoUpgrade", True), None),
    (
        "flex TPU slice used through Kueue",
        lambda: fx.replace(
            fx.good_stack() + [fx.flex_tpu_slice_pool()],
            fx.changed(fx.maxtext_rayjob(), "metadata.labels", {fx.QUEUE_LABEL: fx.QUEUE}),
        ),
        None,
    ),
    (
        "TPU queued provisioning allowed",
        lambda: fx.replace(
            fx.good_stack() + [queued_tpu_pool()],
            fx.changed(fx.maxtext_rayjob(), "metadata.labels", {fx.QUEUE_LABEL: fx.QUEUE}),
        ),
        {"tpu-queued-provisioning": {"allowTpuQueuedProvisioning": True}, "queued-provisioning-has-kueue": "disabled"},
    ),
    (
        "privileged web pod named in the pack config by kind, namespace and name",
        add(plain_deployment),
        {"privileged-only-where-allowed": {"allowedPrivileged": ["Deployment/default/web"]}},
    ),
    (
        "token from a Secret, paths and flags as literals",
        edit(
            "fsdp-finetune",
            "spec.template.spec.containers.0.env",
            [
                {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "t", "key": "token"}}},
                {"name": "HF_HOME", "value": "/cache/huggingface"},
                {"name": "NCCL_IB_GID_INDEX", "value": "3"},
                {"name": "HF_HUB_DISABLE_IMPLICIT_TOKEN", "value": "1"},
            ],
        ),
        None,
    ),
    (
        "read-only host path of the GPU libraries, and the NCCL installer on the host network",
        add(
            lambda: plain_deployment(
                False,
                volumes=[{"name": "lib", "hostPath": {"path": "/home/kubernetes/bin/nvidia/lib64"}}],
                containers=[
                    {
                        "name": "web",
                        "image": fx.image("web:1.27.3"),
                        "volumeMounts": [{"name": "lib", "mountPath": "/lib2", "readOnly": True}],
                    }
                ],
            ),
            installer,
        ),
        None,
    ),
    (
        "a Secrets reader bound in one namespace, reading for every signed-in caller, edit in one namespace",
        add(
            kube_object(
                RBAC,
                "ClusterRole",
                "secrets-reader",
                {"rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]},
                namespace=None,
            ),
            kube_object(
                RBAC,
                "RoleBinding",
                "read-secrets",
                _binding_body("ClusterRole", "secrets-reader", "User", "ci@example.com"),
            ),
            kube_object(
                RBAC,
                "ClusterRole",
                "queue-viewer",
                {
                    "rules": [
                        {
                            "apiGroups": ["kueue.x-k8s.io"],
                            "resources": ["localqueues"],
                            "verbs": ["get", "list", "watch"],
                        }
                    ]
                },
                namespace=None,
            ),
            kube_object(
                RBAC,
                "ClusterRoleBinding",
                "everyone-views-queues",
                _binding_body("ClusterRole", "queue-viewer", "Group", "system:authenticated"),
                namespace=None,
            ),
            kube_object(
                RBAC, "RoleBinding", "ci-edits", _binding_body("ClusterRole", "edit", "User", "ci@example.com")
            ),
        ),
        None,
    ),
    (
        "the trainer's Kubernetes account made its own Google account; CI's subject made the deploy account",
        add(
            iam(
                "gcp:serviceaccount/iAMMember:IAMMember",
                serviceAccountId="projects/trainyard-dev/serviceAccounts/trainer@trainyard-dev.iam.gserviceaccount.com",
                role="roles/iam.workloadIdentityUser",
                member="serviceAccount:trainyard-dev.svc.id.goog[trainyard/trainyard-runner]",
            ),
            iam(
                "gcp:serviceaccount/iAMMember:IAMMember",
                serviceAccountId="projects/trainyard-dev/serviceAccounts/trainyard-deploy@trainyard-dev.iam.gserviceaccount.com",
                role="roles/iam.workloadIdentityUser",
                member="principal://iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/github-actions/"
                "subject/repo:example/trainyard:environment:dev",
            ),
        ),
        None,
    ),
    (
        "the dev stack's allow policies: internet egress without the cluster's ranges, DNS, the namespace, Ray's head",
        add(
            kube_object(
                "networking.k8s.io/v1",
                "NetworkPolicy",
                "egress-out",
                {
                    "spec": {
                        "podSelector": {},
                        "policyTypes": ["Egress"],
                        "egress": [
                            {
                                "to": [
                                    {
                                        "ipBlock": {
                                            "cidr": "0.0.0.0/0",
                                            "except": ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"],
                                        }
                                    }
                                ]
                            },
                            {
                                "to": [
                                    {
                                        "namespaceSelector": {
                                            "matchLabels": {"kubernetes.io/metadata.name": "kube-system"}
                                        },
                                        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                                    }
                                ],
                                "ports": [{"port": 53.0}],
                            },
                        ],
                    }
                },
            ),
            kube_object(
                "networking.k8s.io/v1",
                "NetworkPolicy",
                "within",
                {
                    "spec": {
                        "podSelector": {},
                        "ingress": [{"from": [{"podSelector": {}}]}],
                        "egress": [{"to": [{"podSelector": {}}]}],
                    }
                },
            ),
            kube_object(
                "networking.k8s.io/v1",
                "NetworkPolicy",
                "ray-head",
                {
                    "spec": {
                        "podSelector": {"matchLabels": {"ray.io/node-type": "head"}},
                        "ingress": [
                            {
                                "from": [
                                    {"podSelector": {}},
                                    {
                                        "namespaceSelector": {
                                            "matchLabels": {"kubernetes.io/metadata.name": "kube-system"}
                                        }
                                    },
                                ],
                                "ports": [{"port": 8265.0}],
                            }
                        ],
                    }
                },
            ),
        ),
        None,
    ),
    (
        "a token in a Secret, where credentials belong; base64 of plain text in a ConfigMap",
        add(
            kube_object("v1", "Secret", "hf", {"stringData": {"token": "hf_" + "x" * 34}}),
            kube_object("v1", "ConfigMap", "notes", {"data": {"blob": "aGVsbG8gd29ybGQsIHRoaXMgaXMgbm90IGEgdG9rZW4="}}),
        ),
        None,
    ),
    ("unprivileged web pod", add(lambda: plain_deployment(privileged=False)), None),
    ("short CPU job", add(lambda: cpu_job(activeDeadlineSeconds=300.0)), None),
    (
        "hour-long CPU job under a raised await limit",
        add(lambda: cpu_job(activeDeadlineSeconds=3600.0)),
        {"long-running-jobs-skip-await": {"maxAwaitSeconds": 7200}},
    ),
    (
        "trainer told --slices 2 --hosts-per-slice 4 --chips-per-host 4",
        lambda: fx.replace(fx.good_stack(), shaped_rayjob("--slices 2 --hosts-per-slice 4 --chips-per-host 4")),
        None,
    ),
    ("workers select GKE-managed node labels", metadata_selecting_stack, None),
    ("public endpoint for an office", public_endpoint("203.0.113.0/24"), None),
    ("regions allowed", fx.good_stack, {"allowed-regions": {"allowedRegions": ["us-east5", "US-EAST5"]}}),
    (
        "spot GPU pool",
        lambda: fx.replace(
            fx.good_stack(),
            fx.changed(
                fx.changed(
                    fx.changed(
                        fx.changed(fx.dws_gpu_pool(), "nodeConfig.flexStart", fx.DELETE),
                        "queuedProvisioning",
                        fx.DELETE,
                    ),
                    "nodeConfig.spot",
                    True,
                ),
                "nodeConfig.reservationAffinity",
                fx.DELETE,
            ),
        ),
        {"queued-provisioning-has-kueue": "disabled"},
    ),
]
