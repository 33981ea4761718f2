"""Issue 30's probes, one change each to the good stack, with exactly the policies it must fire."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from tests.helpers import policy_stacks as fx
from tests.policies.policy_edits import (
    Stack,
    add,
    container_edit,
    edit,
    iam,
    installer,
    kube_object,
    plain_deployment,
    public_endpoint,
    without,
)

Case = tuple[str, Callable[[], Stack], set[str]]
WORKER = "spec.rayClusterSpec.workerGroupSpecs.0.template.spec"
HEAD = "spec.rayClusterSpec.headGroupSpec.template.spec"
TRAINER = "spec.template.spec"
RESTRICTED = {"pods-run-restricted"}
POOL = "principalSet://iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/trainyard-dev.svc.id.goog"
HF_TOKEN = "hf_" + "x" * 34


def _binding(kind: str, role: str, namespace: str | None = None) -> Callable[[], dict]:
    body = {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "User", "name": "ci@example.com"}],
    }
    return kube_object("rbac.authorization.k8s.io/v1", kind, "ci-admin", body, namespace=namespace)


def _service(service_type: str, port: float, target: object) -> Callable[[], dict]:
    """A Service that selects the Ray head."""
    spec = {
        "type": service_type,
        "selector": {"ray.io/node-type": "head"},
        "ports": [{"port": port, "targetPort": target}],
    }
    return kube_object("v1", "Service", "ray-dashboard", {"spec": spec})


POD_SECURITY_CASES: list[Case] = [
    (
        "trainer adds SYS_ADMIN",
        container_edit("fsdp-finetune", "securityContext.capabilities.add", ["SYS_ADMIN"]),
        RESTRICTED,
    ),
    (
        "trainer leaves privilege escalation unset",
        container_edit("fsdp-finetune", "securityContext", {"capabilities": {"drop": ["ALL"]}}),
        RESTRICTED,
    ),
    (
        "Ray worker allows privilege escalation",
        container_edit("maxtext", "securityContext.allowPrivilegeEscalation", True, WORKER),
        RESTRICTED,
    ),
    ("trainer pod as uid 0", edit("fsdp-finetune", f"{TRAINER}.securityContext.runAsUser", 0.0), RESTRICTED),
    ("Ray head runAsNonRoot false", edit("maxtext", f"{HEAD}.securityContext.runAsNonRoot", False), RESTRICTED),
    (
        "trainer container seccomp Unconfined",
        container_edit("fsdp-finetune", "securityContext.seccompProfile", {"type": "Unconfined"}),
        RESTRICTED,
    ),
    (
        "trainer mounts its API token",
        edit("fsdp-finetune", f"{TRAINER}.automountServiceAccountToken", True),
        {"service-account-token-only-where-needed"},
    ),
    (
        "Ray worker leaves its API token unset",
        edit("maxtext", f"{WORKER}.automountServiceAccountToken", fx.DELETE),
        {"service-account-token-only-where-needed"},
    ),
    (
        "a privileged Deployment named like the NCCL installer (the allow-list names a DaemonSet)",
        add(
            lambda: fx.changed(
                fx.changed(plain_deployment(hostNetwork=True), "metadata.name", "nccl-rdma-installer"),
                "metadata.namespace",
                "kube-system",
            )
        ),
        {"privileged-only-where-allowed", "host-access-only-where-allowed"},
    ),
]


def _read_only_host_path(path: str) -> Callable[[], Stack]:
    return add(
        lambda: plain_deployment(
            False,
            volumes=[{"name": "host", "hostPath": {"path": path}}],
            containers=[
                {
                    "name": "web",
                    "image": fx.image("web:1.27.3"),
                    "volumeMounts": [{"name": "host", "mountPath": "/host", "readOnly": True}],
                }
            ],
        )
    )


def _installer_with(path: str, value: object) -> Callable[[], Stack]:
    """The NCCL installer, in its shape but for one field of its pod spec."""
    return add(lambda: fx.changed(installer(), f"spec.template.spec.{path}", value))


PRIVILEGE_AND_HOST = {"privileged-only-where-allowed", "host-access-only-where-allowed"}
# The installer's name exempts only its shape (components/facts/host_workloads.py): each edit outside it is judged.
HOST_WORKLOAD_CASES: list[Case] = [
    (
        "the NCCL installer's init container runs another image",
        _installer_with("initContainers.0.image", fx.image("busybox:1.37.0")),
        PRIVILEGE_AND_HOST,
    ),
    ("the NCCL installer with hostIPC too", _installer_with("hostIPC", True), PRIVILEGE_AND_HOST),
    ("the NCCL installer mounts the node's root", _installer_with("volumes.0.hostPath.path", "/"), PRIVILEGE_AND_HOST),
    (
        "the NCCL installer's pause container privileged",
        _installer_with("containers.0.securityContext.privileged", True),
        PRIVILEGE_AND_HOST,
    ),
    (
        "the NCCL installer's pause container adds SYS_ADMIN",
        _installer_with("containers.0.securityContext.capabilities.add", ["SYS_ADMIN"]),
        PRIVILEGE_AND_HOST | RESTRICTED,
    ),
    (
        "the NCCL installer mounts its API token",
        _installer_with("automountServiceAccountToken", fx.DELETE),
        PRIVILEGE_AND_HOST | {"service-account-token-only-where-needed"},
    ),
    (
        "the NCCL installer runs as another account",
        _installer_with("serviceAccountName", "default"),
        PRIVILEGE_AND_HOST,
    ),
]


def _privileged_pod(api_version: str, kind: str, path: str, **pod: Any) -> Callable[[], Stack]:
    """A `kind` whose pod template (at `path`) runs a privileged container on the host's network."""
    container = {"name": "web", "image": fx.image("web:1.27.3"), "securityContext": {"privileged": True}}
    spec = fx.contained({"containers": [container], "hostNetwork": True, **pod})
    return add(lambda: fx.changed(kube_object(api_version, kind, "web", {})(), path, spec))


# Every kind that carries a pod template is read, a server-side-apply patch of one too.
POD_KIND_CASES: list[Case] = [
    (
        "a privileged ReplicationController",
        _privileged_pod("v1", "ReplicationController", "spec.template.spec"),
        PRIVILEGE_AND_HOST,
    ),
    ("a privileged PodTemplate", _privileged_pod("v1", "PodTemplate", "template.spec"), PRIVILEGE_AND_HOST),
    (
        "a DaemonSetPatch that makes a pod privileged",
        _privileged_pod("apps/v1", "DaemonSetPatch", "spec.template.spec"),
        PRIVILEGE_AND_HOST,
    ),
    (
        "a RayJob's submitter pod privileged",
        edit(
            "maxtext",
            "spec.submitterPodTemplate",
            {
                "spec": fx.contained(
                    {
                        "containers": [
                            {
                                "name": "submit",
                                "image": fx.image("maxtext:2.60.0"),
                                "securityContext": {"privileged": True},
                            }
                        ]
                    }
                )
            },
        ),
        {"privileged-only-where-allowed"},
    ),
    (
        "an ephemeral debug container, privileged",
        edit(
            "fsdp-finetune",
            "spec.template.spec.ephemeralContainers",
            [{"name": "debug", "image": fx.image("busybox:1.37.0"), "securityContext": {"privileged": True}}],
        ),
        {"privileged-only-where-allowed"},
    ),
]

HOST_AND_PORT_CASES: list[Case] = [
    ("read-only hostPath of /", _read_only_host_path("/"), {"host-access-only-where-allowed"}),
    # A deny-list always misses a folder: read-only hostPaths are judged by the GPU library folders they may be.
    ("read-only hostPath of /home", _read_only_host_path("/home"), {"host-access-only-where-allowed"}),
    ("read-only hostPath of /var/log", _read_only_host_path("/var/log"), {"host-access-only-where-allowed"}),
    ("read-only hostPath of /dev", _read_only_host_path("/dev"), {"host-access-only-where-allowed"}),
    (
        "read-only hostPath climbing out of the GPU libraries",
        _read_only_host_path("/home/kubernetes/bin/nvidia/../../.."),
        {"host-access-only-where-allowed"},
    ),
    (
        "read-only hostPath of the kubelet's directory",
        _read_only_host_path("/var/lib/kubelet/"),
        {"host-access-only-where-allowed"},
    ),
    (
        "read-only hostPath of /var (holds the kubelet's)",
        _read_only_host_path("/var"),
        {"host-access-only-where-allowed"},
    ),
    (
        "ClusterRoleBinding to cluster-admin",
        add(_binding("ClusterRoleBinding", "cluster-admin")),
        {"no-cluster-admin-bindings"},
    ),
    (
        "RoleBinding to cluster-admin in the workload namespace",
        add(_binding("RoleBinding", "cluster-admin", "trainyard")),
        {"no-cluster-admin-bindings"},
    ),
    ("default-deny NetworkPolicy deleted", without("default-deny"), {"workload-namespaces-deny-by-default"}),
    (
        "default-deny narrowed to ingress",
        edit("default-deny", "spec.policyTypes", ["Ingress"]),
        {"workload-namespaces-deny-by-default"},
    ),
    (
        "default-deny given an allow rule",
        edit("default-deny", "spec.ingress", [{"from": [{"podSelector": {}}]}]),
        {"workload-namespaces-deny-by-default"},
    ),
    (
        "LoadBalancer on the Ray dashboard",
        add(_service("LoadBalancer", 8265.0, 8265.0)),
        {"ray-ports-stay-in-the-cluster"},
    ),
    (
        "NodePort to the Ray client port by name",
        add(_service("NodePort", 80.0, "client")),
        {"ray-ports-stay-in-the-cluster"},
    ),
    (
        "Ray head Service of type LoadBalancer",
        edit("maxtext", "spec.rayClusterSpec.headGroupSpec.serviceType", "LoadBalancer"),
        {"ray-ports-stay-in-the-cluster"},
    ),
    (
        "hostPort on the Ray GCS port",
        container_edit("maxtext", "ports", [{"containerPort": 6379.0, "hostPort": 6379.0}], HEAD),
        {"ray-ports-stay-in-the-cluster"},
    ),
]

IDENTITY_CASES: list[Case] = [
    (
        "token creator to one service account",
        add(
            iam(
                "gcp:serviceaccount/iAMMember:IAMMember",
                role="roles/iam.serviceAccountTokenCreator",
                member="serviceAccount:ci@trainyard-dev.iam.gserviceaccount.com",
            )
        ),
        {"no-admin-or-token-creator-roles"},
    ),
    (
        "container admin to one service account",
        add(
            iam(
                "gcp:projects/iAMMember:IAMMember",
                role="roles/container.admin",
                member="serviceAccount:deployer@trainyard-dev.iam.gserviceaccount.com",
            )
        ),
        {"no-admin-or-token-creator-roles"},
    ),
    ("bucket grant to the whole GKE pool", edit("runner-object-user", "member", f"{POOL}/*"), {"no-pool-wide-grants"}),
    (
        "bucket grant to every account of a namespace",
        edit("runner-object-user", "member", f"{POOL}/namespace/trainyard"),
        {"no-pool-wide-grants"},
    ),
    (
        "bucket grant to a wildcard member",
        edit("runner-object-user", "member", "serviceAccount:trainyard-dev.svc.id.goog[trainyard/*]"),
        {"no-pool-wide-grants"},
    ),
    (
        "project grant to every identity of a cluster",
        add(
            iam(
                "gcp:projects/iAMMember:IAMMember",
                role="roles/logging.logWriter",
                member=f"{POOL}/kubernetes.cluster/https://container.googleapis.com/v1/projects/p/locations/l/clusters/c",
            )
        ),
        {"no-pool-wide-grants"},
    ),
]

RBAC = "rbac.authorization.k8s.io/v1"
ROLE_RULE = {"roles-grant-no-escalation"}
BINDING_RULE = {"bindings-widen-no-role"}


def _role(kind: str, *rules: tuple[list[str], list[str], list[str]]) -> Callable[[], dict]:
    """A Role or ClusterRole `probe` with (apiGroups, resources, verbs) rules."""
    body = {"rules": [{"apiGroups": g, "resources": r, "verbs": v} for g, r, v in rules]}
    return kube_object(RBAC, kind, "probe", body, namespace="trainyard" if kind == "Role" else None)


def _bound(kind: str, role_kind: str, role: str, subject: tuple[str, str]) -> Callable[[], dict]:
    body = {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": subject[0], "name": subject[1]}],
    }
    return kube_object(RBAC, kind, "probe-binding", body, namespace="trainyard" if kind == "RoleBinding" else None)


CI_USER = ("User", "ci@example.com")
EVERYONE = ("Group", "system:authenticated")
# Kubernetes RBAC judged by what it grants, not by the role's name (policies/rbac_rules.py).
RBAC_CASES: list[Case] = [
    ("a ClusterRole of every verb on every resource", add(_role("ClusterRole", (["*"], ["*"], ["*"]))), ROLE_RULE),
    ("a Role that may impersonate", add(_role("Role", ([""], ["serviceaccounts"], ["impersonate"]))), ROLE_RULE),
    (
        "a ClusterRole that may bind and escalate",
        add(_role("ClusterRole", (["rbac.authorization.k8s.io"], ["clusterroles"], ["bind", "escalate"]))),
        ROLE_RULE,
    ),
    (
        "a ClusterRole that mints tokens",
        add(_role("ClusterRole", ([""], ["serviceaccounts/token"], ["create"]))),
        ROLE_RULE,
    ),
    ("a ClusterRole that reaches the kubelet", add(_role("ClusterRole", ([""], ["nodes/proxy"], ["get"]))), ROLE_RULE),
    (
        "a ClusterRolePatch to every verb",
        add(
            lambda: (
                fx.changed(_role("ClusterRole", ([""], ["pods"], ["*"]))(), "kind", "ClusterRolePatch")
                | {"type": "kubernetes:rbac.authorization.k8s.io/v1:ClusterRolePatch"}
            )
        ),
        ROLE_RULE,
    ),
    ("edit bound cluster-wide", add(_bound("ClusterRoleBinding", "ClusterRole", "edit", CI_USER)), BINDING_RULE),
    (
        "a Secrets reader bound cluster-wide",
        add(
            _role("ClusterRole", ([""], ["secrets"], ["get", "list"])),
            _bound("ClusterRoleBinding", "ClusterRole", "probe", CI_USER),
        ),
        BINDING_RULE,
    ),
    (
        "pod writes for every signed-in caller",
        add(_role("Role", ([""], ["pods"], ["create"])), _bound("RoleBinding", "Role", "probe", EVERYONE)),
        BINDING_RULE,
    ),
    (
        "a role the stack does not show, for every service account",
        add(_bound("RoleBinding", "ClusterRole", "ops", ("Group", "system:serviceaccounts"))),
        BINDING_RULE,
    ),
    (
        "cluster-admin for every signed-in caller",
        add(_bound("ClusterRoleBinding", "ClusterRole", "cluster-admin", EVERYONE)),
        BINDING_RULE | {"no-cluster-admin-bindings"},
    ),
]

DENY_RULE = {"workload-namespaces-deny-by-default"}
ADMISSION_RULE = {"workload-pods-admission-enforced"}


def _network_policy(name: str, **spec: Any) -> Callable[[], dict]:
    return kube_object("networking.k8s.io/v1", "NetworkPolicy", name, {"spec": {"podSelector": {}, **spec}})


# What undoes the namespace's default-deny, and what takes run-time pods out of admission.
NAMESPACE_CASES: list[Case] = [
    (
        "an allow-all ingress policy beside default-deny",
        add(_network_policy("allow-all", policyTypes=["Ingress"], ingress=[{}])),
        DENY_RULE,
    ),
    (
        "ingress from every namespace",
        add(_network_policy("from-anywhere", ingress=[{"from": [{"namespaceSelector": {}}]}])),
        DENY_RULE,
    ),
    (
        "ingress from 0.0.0.0/0 on the Ray port",
        add(
            _network_policy(
                "ray-open", ingress=[{"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"port": 8265.0}]}]
            )
        ),
        DENY_RULE,
    ),
    (
        "egress everywhere on every port",
        add(
            _network_policy("egress-all", policyTypes=["Egress"], egress=[{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}])
        ),
        DENY_RULE,
    ),
    ("the pods' ValidatingAdmissionPolicy removed", without("trainyard-workload-pods"), ADMISSION_RULE),
    (
        "its binding only audits",
        edit("trainyard-workload-pods-binding", "spec.validationActions", ["Audit"]),
        ADMISSION_RULE,
    ),
    (
        "its binding names another namespace",
        edit(
            "trainyard-workload-pods-binding",
            "spec.matchResources.namespaceSelector.matchLabels",
            {"kubernetes.io/metadata.name": "default"},
        ),
        ADMISSION_RULE,
    ),
]

SA_MEMBER = "gcp:serviceaccount/iAMMember:IAMMember"
DEPLOY_ACCOUNT = "projects/trainyard-dev/serviceAccounts/trainyard-deploy@trainyard-dev.iam.gserviceaccount.com"
TRAINER_PRINCIPAL = (
    "principal://iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/trainyard-dev.svc.id.goog/"
    "subject/ns/trainyard/sa/trainyard-runner"
)
IDENTITY_RULE = {"identity-roles-name-one-workload"}
ADMIN_RULE = {"no-admin-or-token-creator-roles"}
# IAM judged by what the role lets its holder do: act as an account, or administer a service.
IAM_EFFECT_CASES: list[Case] = [
    (
        "Service Account User to one account",
        add(
            iam(
                SA_MEMBER,
                role="roles/iam.serviceAccountUser",
                member="serviceAccount:ci@trainyard-dev.iam.gserviceaccount.com",
            )
        ),
        IDENTITY_RULE,
    ),
    (
        "OpenID token creator to one account",
        add(
            iam(
                SA_MEMBER,
                role="roles/iam.serviceAccountOpenIdTokenCreator",
                member="serviceAccount:ci@trainyard-dev.iam.gserviceaccount.com",
            )
        ),
        IDENTITY_RULE,
    ),
    (
        "Workload Identity User to a Google account, not a workload",
        add(iam(SA_MEMBER, role="roles/iam.workloadIdentityUser", member="user:someone@example.com")),
        IDENTITY_RULE,
    ),
    (
        "a trainer made the deploy account",
        add(
            iam(
                SA_MEMBER,
                serviceAccountId=DEPLOY_ACCOUNT,
                role="roles/iam.workloadIdentityUser",
                member=TRAINER_PRINCIPAL,
            )
        ),
        IDENTITY_RULE,
    ),
    (
        "a versioned admin role (compute.instanceAdmin.v1)",
        add(
            iam(
                "gcp:projects/iAMMember:IAMMember",
                role="roles/compute.instanceAdmin.v1",
                member="serviceAccount:ci@trainyard-dev.iam.gserviceaccount.com",
            )
        ),
        ADMIN_RULE,
    ),
    (
        "an owner role on the bucket (legacyBucketOwner)",
        add(
            iam(
                "gcp:storage/bucketIAMMember:BucketIAMMember",
                bucket="trainyard-dev-data",
                role="roles/storage.legacyBucketOwner",
                member="serviceAccount:ci@trainyard-dev.iam.gserviceaccount.com",
            )
        ),
        ADMIN_RULE,
    ),
]

REGISTRY_WRITER = "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"
REGISTRY_CASES: list[Case] = [
    (
        "a node account may write the build cache",
        add(
            iam(
                REGISTRY_WRITER,
                repository="trainyard-cache",
                role="roles/artifactregistry.writer",
                member="serviceAccount:trainyard-dev-tpu@trainyard-dev.iam.gserviceaccount.com",
            )
        ),
        {"registry-writes-only-by-the-deploy-account"},
    ),
    (
        "the workloads' identity may push to the project's repositories",
        add(
            iam(
                "gcp:projects/iAMMember:IAMMember",
                role="roles/artifactregistry.createOnPushWriter",
                member="principal://iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/"
                "trainyard-dev.svc.id.goog/subject/ns/trainyard/sa/trainyard-runner",
            )
        ),
        {"registry-writes-only-by-the-deploy-account"},
    ),
    (
        "an account named like the deploy account writes the images",
        add(
            iam(
                REGISTRY_WRITER,
                repository="trainyard",
                role="roles/artifactregistry.writer",
                member="serviceAccount:trainyard-deploy-ci@trainyard-dev.iam.gserviceaccount.com",
            )
        ),
        {"registry-writes-only-by-the-deploy-account"},
    ),
]

ADDRESS_CASES: list[Case] = [
    (
        "firewall rule with no source",
        add(iam("gcp:compute/firewall:Firewall", allows=[{"protocol": "tcp", "ports": ["22"]}])),
        {"firewall-not-open-to-the-internet"},
    ),
    (
        "firewall rule from two /1 halves",
        add(
            iam(
                "gcp:compute/firewall:Firewall",
                sourceRanges=["0.0.0.0/1", "128.0.0.0/1"],
                allows=[{"protocol": "tcp", "ports": ["8265"]}],
            )
        ),
        {"firewall-not-open-to-the-internet"},
    ),
    (
        "firewall rule from all of IPv6's public space",
        add(iam("gcp:compute/firewall:Firewall", sourceRanges=["2000::/3"], allows=[{"protocol": "tcp"}])),
        {"firewall-not-open-to-the-internet"},
    ),
    (
        "authorized networks 0.0.0.0/1 + 128.0.0.0/1",
        public_endpoint("0.0.0.0/1", "128.0.0.0/1"),
        {"control-plane-not-open"},
    ),
    # Below the old /8 threshold, still far more than an office: 8 million and 1 million public addresses.
    (
        "firewall rule from 1.0.0.0/9",
        add(iam("gcp:compute/firewall:Firewall", sourceRanges=["1.0.0.0/9"], allows=[{"protocol": "tcp"}])),
        {"firewall-not-open-to-the-internet"},
    ),
    ("authorized network 44.0.0.0/12", public_endpoint("44.0.0.0/12"), {"control-plane-not-open"}),
]

WRAPPED_TOKEN = base64.b64encode(HF_TOKEN.encode()).decode()
SECRET_CASES: list[Case] = [
    (
        "a token in an annotation",
        edit("fsdp-finetune", "metadata.annotations.note", HF_TOKEN),
        {"no-secret-literals"},
    ),
    (
        "a token in a pod template's annotation",
        edit("fsdp-finetune", "spec.template.metadata", {"annotations": {"note": HF_TOKEN}}),
        {"no-secret-literals"},
    ),
    (
        "a base64-wrapped token under a neutral env name",
        container_edit("fsdp-finetune", "env", [{"name": "SETTINGS", "value": WRAPPED_TOKEN}]),
        {"no-secret-literals"},
    ),
    (
        "a base64-wrapped token in a ConfigMap",
        add(kube_object("v1", "ConfigMap", "settings", {"data": {"blob": WRAPPED_TOKEN}})),
        {"no-secret-literals"},
    ),
    (
        "a token in a custom resource's field",
        edit("maxtext", "spec.metadata", {"owner-note": HF_TOKEN}),
        {"no-secret-literals"},
    ),
    (
        "token in the trainer's args",
        container_edit("fsdp-finetune", "args", [f"exec torchrun -m workloads.fsdp.train --model-id m {HF_TOKEN}"]),
        {"no-secret-literals"},
    ),
    (
        "a literal after a token flag in the trainer's command",
        container_edit("fsdp-finetune", "command", ["python", "-m", "train", "--hub-token", "abc123"]),
        {"no-secret-literals"},
    ),
    (
        "token in the RayJob entrypoint",
        edit(
            "maxtext",
            "spec.entrypoint",
            f"python -m workloads.maxtext.train --num-workers=8 -- hf_access_token={HF_TOKEN}",
        ),
        {"no-secret-literals"},
    ),
    (
        "secret-named key=value in the RayJob entrypoint",
        edit("maxtext", "spec.entrypoint", "python -m workloads.maxtext.train --num-workers=8 -- hub_token=abc"),
        {"no-secret-literals"},
    ),
    (
        "a *token* key anywhere in a flag of the RayJob entrypoint",
        edit(
            "maxtext", "spec.entrypoint", "python -m workloads.maxtext.train --num-workers=8 -- hub_token_file=/tmp/t"
        ),
        {"no-secret-literals"},
    ),
    (
        "token in the RayJob's runtime env",
        edit("maxtext", "spec.runtimeEnvYAML", "env_vars:\n  HF_TOKEN: abc123\n"),
        {"no-secret-literals"},
    ),
    (
        "token in a Ray worker's env",
        container_edit("maxtext", "env", [*fx.RAY_AUTH_ENV, {"name": "HUB_TOKEN", "value": "abc"}], WORKER),
        {"no-secret-literals"},
    ),
]
