"""Compliant variations of the good stack, each with the pack config it runs under: no policy may fire."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.helpers import policy_stacks as fx
from tests.policies.policy_edits import (
    GPU_POOL,
    Stack,
    add,
    cpu_job,
    dcn_attached_to_a_pool,
    edit,
    iam,
    installer,
    kube_object,
    metadata_selecting_stack,
    plain_deployment,
    public_endpoint,
    queued_tpu_pool,
    shaped_rayjob,
)

RBAC = "rbac.authorization.k8s.io/v1"


def _binding_body(role_kind: str, role: str, subject_kind: str, subject: str) -> dict[str, Any]:
    return {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": subject_kind, "name": subject}],
    }


PASSES: list[tuple[str, Callable[[], Stack], dict[str, Any] | None]] = [
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
        edit("fsdp-finetune", "spec.template.spec.containers.0.image", f"trainer:dev@sha256:{'ab' * 32}"),
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
                        "image": "nginx:1.27.3",
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
