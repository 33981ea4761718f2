"""The workloads' namespace's ValidatingAdmissionPolicy, its CEL evaluated by a CEL interpreter (cel-python) on the
pods the namespace really runs, as the API server sees them (GKE's GCS FUSE sidecar injected, KubeRay's default
submitter added), and on one breach of each rule."""

from __future__ import annotations

import copy
from typing import Any

import celpy
import pytest

from tests.helpers.plans import everything_on, manifest

NAMESPACE = "trainyard"
POLICY = f"{NAMESPACE}-workload-pods"
# GKE's GCS FUSE webhook injects this native sidecar (GoogleCloudPlatform/gcs-fuse-csi-driver,
# pkg/webhook/sidecar_spec.go: "follows Restricted Pod Security Standard") and its emptyDir volumes.
GCS_FUSE_SIDECAR = {
    "name": "gke-gcsfuse-sidecar",
    "restartPolicy": "Always",
    "securityContext": {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
        "runAsNonRoot": True,
        "runAsUser": 65534,
        "runAsGroup": 65534,
    },
    "volumeMounts": [{"name": "gke-gcsfuse-tmp", "mountPath": "/gcsfuse-tmp"}],
}
# KubeRay v1.6.2's submitter when a RayJob names no template (common/job.go GetDefaultSubmitterTemplate): no
# securityContext at all.
KUBERAY_SUBMITTER = {
    "restartPolicy": "Never",
    "containers": [{"name": "ray-job-submitter", "image": "rayproject/ray:2.60.0-py312-tpu"}],
}


def integral(value: Any) -> Any:
    """Engine-shaped numbers are floats; the API server's objects hold integers."""
    if isinstance(value, dict):
        return {key: integral(item) for key, item in value.items()}
    if isinstance(value, list):
        return [integral(item) for item in value]
    return int(value) if isinstance(value, float) and value.is_integer() else value


def pod_specs(plan) -> list[tuple[str, dict]]:
    found = []
    for m in plan.manifests:
        if m["metadata"].get("namespace") != NAMESPACE:
            continue
        if m["kind"] == "Job":
            found.append((m["metadata"]["name"], m["spec"]["template"]["spec"]))
        elif m["kind"] in ("RayJob", "RayCluster"):
            spec = m["spec"]["rayClusterSpec"] if m["kind"] == "RayJob" else m["spec"]
            found.append((m["metadata"]["name"] + "/head", spec["headGroupSpec"]["template"]["spec"]))
            found += [
                (m["metadata"]["name"] + "/" + g["groupName"], g["template"]["spec"]) for g in spec["workerGroupSpecs"]
            ]
    return found


def as_admitted(spec: dict) -> dict:
    """The pod after GKE's mutating webhooks: the GCS FUSE sidecar where a pod asks for it."""
    pod = copy.deepcopy(integral(spec))
    if any("csi" in volume for volume in pod.get("volumes", [])):
        pod["initContainers"] = [copy.deepcopy(GCS_FUSE_SIDECAR), *pod.get("initContainers", [])]
        pod["volumes"] = [*pod["volumes"], {"name": "gke-gcsfuse-tmp", "emptyDir": {}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": NAMESPACE}, "spec": pod}


class Admission:
    """The policy's validations, compiled once, evaluated as the API server does."""

    def __init__(self, policy: dict):
        environment = celpy.Environment()
        self.validations = [
            (environment.program(environment.compile(v["expression"])), v["message"])
            for v in policy["spec"]["validations"]
        ]

    def refusals(self, pod: dict) -> list[str]:
        activation = {"object": celpy.json_to_cel(pod)}
        return [message for program, message in self.validations if not bool(program.evaluate(activation))]


@pytest.fixture(scope="module")
def full_plan(plan_with):
    return plan_with(everything_on)


@pytest.fixture(scope="module")
def admission(full_plan) -> Admission:
    return Admission(manifest(full_plan, "ValidatingAdmissionPolicy", POLICY))


def test_the_binding_denies_in_the_workloads_namespace_only(full_plan):
    policy = manifest(full_plan, "ValidatingAdmissionPolicy", POLICY)
    binding = manifest(full_plan, "ValidatingAdmissionPolicyBinding", POLICY)
    assert binding["spec"]["policyName"] == POLICY and binding["spec"]["validationActions"] == ["Deny"]
    selector = binding["spec"]["matchResources"]["namespaceSelector"]
    assert selector == {"matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}}
    (rule,) = policy["spec"]["matchConstraints"]["resourceRules"]
    assert set(rule["resources"]) == {"pods", "pods/ephemeralcontainers"} and "CREATE" in rule["operations"]
    assert policy["spec"]["failurePolicy"] == "Fail"


def test_every_pod_the_namespace_runs_is_admitted(full_plan, admission):
    pods = pod_specs(full_plan)
    names = " ".join(name for name, _ in pods)
    for workload in ("llama31-70b-fsdp-", "llama3-8b-", "maxtext/head", "smoke-jax-", "smoke-nccl-"):
        assert workload in names
    for name, spec in [*pods, ("kuberay-submitter", KUBERAY_SUBMITTER)]:
        assert admission.refusals(as_admitted(spec)) == [], name


def fsdp_pod(full_plan) -> dict:
    (spec,) = [spec for name, spec in pod_specs(full_plan) if name.startswith("llama31-70b-fsdp-")]
    return as_admitted(spec)


def _container_context(pod, **fields):
    pod["spec"]["containers"][0].setdefault("securityContext", {}).update(fields)


def _init_container(pod, **fields):
    pod["spec"]["initContainers"].append({"name": "setup", "image": "busybox:1.36", "securityContext": fields})


def _host_volume(path, read_only):
    def breach(pod):
        pod["spec"]["volumes"].append({"name": "host", "hostPath": {"path": path}})
        pod["spec"]["containers"][0]["volumeMounts"].append(
            {"name": "host", "mountPath": "/host", "readOnly": read_only}
        )

    return breach


def _writable_library_mount(pod):
    for mount in pod["spec"]["containers"][0]["volumeMounts"]:
        if mount["name"] == "library-dir-host":
            mount["readOnly"] = False


def _ephemeral_debugger(pod):
    pod["spec"]["ephemeralContainers"] = [
        {"name": "debug", "image": "busybox:1.36", "securityContext": {"privileged": True}}
    ]


BREACHES = [
    ("privileged container", lambda pod: _container_context(pod, privileged=True), "no privileged container"),
    ("privileged init container", lambda pod: _init_container(pod, privileged=True), "no privileged container"),
    ("privileged ephemeral container", _ephemeral_debugger, "no privileged container"),
    (
        "privilege escalation",
        lambda pod: _container_context(pod, allowPrivilegeEscalation=True),
        "allowPrivilegeEscalation",
    ),
    (
        "added capability",
        lambda pod: _container_context(pod, capabilities={"add": ["NET_ADMIN"]}),
        "adds Linux capabilities",
    ),
    ("unconfined container", lambda pod: _container_context(pod, seccompProfile={"type": "Unconfined"}), "Unconfined"),
    (
        "unconfined pod",
        lambda pod: pod["spec"]["securityContext"].update(seccompProfile={"type": "Unconfined"}),
        "Unconfined",
    ),
    ("uid 0 in a container", lambda pod: _container_context(pod, runAsUser=0), "runAsUser: 0"),
    ("uid 0 for the pod", lambda pod: pod["spec"]["securityContext"].update(runAsUser=0), "runAsUser: 0"),
    ("host network", lambda pod: pod["spec"].update(hostNetwork=True), "host network, PID or IPC"),
    ("host PID", lambda pod: pod["spec"].update(hostPID=True), "host network, PID or IPC"),
    ("host IPC", lambda pod: pod["spec"].update(hostIPC=True), "host network, PID or IPC"),
    (
        "host port",
        lambda pod: pod["spec"]["containers"][0]["ports"].append({"containerPort": 8265, "hostPort": 8265}),
        "hostPort",
    ),
    ("the host's root, read-only", _host_volume("/", True), "host paths only"),
    ("the kubelet's folder, read-only", _host_volume("/var/lib/kubelet", True), "host paths only"),
    ("a listed folder, writable", _host_volume("/home/kubernetes/bin/gib", False), "host paths only"),
    ("the driver folder made writable", _writable_library_mount, "host paths only"),
]


@pytest.mark.parametrize(("label", "breach", "rule"), BREACHES, ids=[b[0] for b in BREACHES])
def test_each_breach_is_refused_by_its_rule(full_plan, admission, label, breach, rule):
    pod = fsdp_pod(full_plan)
    breach(pod)
    refusals = admission.refusals(pod)
    assert len(refusals) == 1 and rule in refusals[0], refusals


def test_the_namespace_warns_and_audits_the_restricted_profile_and_enforces_none(dev_plan):
    labels = manifest(dev_plan, "Namespace", NAMESPACE)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/warn"] == "restricted"
    assert labels["pod-security.kubernetes.io/audit"] == "restricted"
    # Not enforced: the FSDP trainer's read-only host library mounts break even `baseline` (hostPath volumes).
    assert "pod-security.kubernetes.io/enforce" not in labels
