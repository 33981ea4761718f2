"""Multi-node NVLink for NVL72 machines (A4X): NVIDIA's DRA driver for GPUs and one ComputeDomain per job.

The GPUs of the VMs in one NVLink domain share memory across VMs only through IMEX channels. NVIDIA's DRA driver
for GPUs (github.com/NVIDIA/k8s-dra-driver-gpu) makes them: a job's `ComputeDomain` has the driver's controller
start an IMEX daemon on each node the job's pods land on and create a ResourceClaimTemplate, named by the
ComputeDomain, whose claim hands a pod its channel. GKE installs the GPU device plugin itself, so the driver runs
with its GPU resources off and only ComputeDomains on, with GKE's driver root (Cluster Toolkit
modules/management/kubectl-apply/main.tf, `install_nvidia_dra_driver`).

The chart is vendored rendered (components/facts/releases/, gen_nvidia_dra.py, `CHART_VALUES` below) and applied
object by object like Kueue's release, so preflight and the pack see every object. What trainyard sets beyond the
chart is stated here: the namespace with the ResourceQuota GKE needs for its critical-priority pods, the
controller on the system pool, the kubelet plugin on the NVL72 machines only.
"""

from __future__ import annotations

import copy
import posixpath
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

import yaml

from components.facts import gke
from components.facts.releases import pinned_text

CHART = "nvidia-dra-driver-gpu"
VERSION = "v25.8.1"
RELEASE_KEY = f"{CHART} {VERSION}"
REPO = "NVIDIA/k8s-dra-driver-gpu"
NAMESPACE = CHART  # the chart's default, and the Cluster Toolkit's
IMAGE = f"nvcr.io/nvidia/k8s-dra-driver-gpu:{VERSION}"
CONTROLLER = f"{CHART}-controller"
KUBELET_PLUGIN = f"{CHART}-kubelet-plugin"
KUBELET_PLUGIN_ACCOUNT = f"{CHART}-service-account-kubeletplugin"
# The pods the chart runs at system-node-critical; GKE admits that priority outside kube-system only where a
# ResourceQuota scoped to it exists (Kubernetes: "Limit Priority Class consumption by default"; the Cluster Toolkit's
# examples/gke-a4x/nvidia-dra-driver.yaml creates this one).
CRITICAL_QUOTA = f"{CHART}-quota"
CRITICAL_QUOTA_PODS = 100

# What the render sets (gen_nvidia_dra.py): GKE's NVIDIA driver root, the GPU device plugin left to GKE, no chart
# affinity (trainyard places both pods below), and the controller held to the pack's restricted profile.
CHART_VALUES: dict[str, Any] = {
    "nvidiaDriverRoot": gke.HOST_NVIDIA_DIR,
    "resources": {"gpus": {"enabled": False}},
    "controller": {
        "affinity": None,
        "containers": {
            "computeDomain": {"securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}
        },
    },
    "kubeletPlugin": {"affinity": None},
}
# Where the kubelet plugin mounts the host (the chart's kubeletplugin.yaml with CHART_VALUES).
KUBELET_PLUGIN_HOST_PATHS = {
    "plugins-registry": "/var/lib/kubelet/plugins_registry",
    "plugins": "/var/lib/kubelet/plugins",
    "cdi": "/var/run/cdi",
    "driver-root-parent": posixpath.dirname(gke.HOST_NVIDIA_DIR),
    "driver-root": gke.HOST_NVIDIA_DIR,
}
KUBELET_PLUGIN_PRIVILEGED = ("init-container", "compute-domains")

# The ComputeDomain API (the chart's crds/resource.nvidia.com_computedomains.yaml) and the claim its controller
# writes for a workload (templates/compute-domain-workload-claim-template.tmpl.yaml, at VERSION).
COMPUTE_DOMAIN_API_VERSION = "resource.nvidia.com/v1beta1"
COMPUTE_DOMAIN_KIND = "ComputeDomain"
CHANNEL_DEVICE_CLASS = "compute-domain-default-channel.nvidia.com"
CHANNEL_REQUEST = "channel"
CHANNEL_CLAIM = "compute-domain-channel"  # the pod's name for the claim
# Kueue counts each pod's channel claim as this resource (a name of trainyard's, like gke.RDMA_NIC_RESOURCE).
CHANNEL_RESOURCE = "trainyard/nvlink-channel"


@cache
def _release_text() -> str:
    return pinned_text(RELEASE_KEY, "python -m components.facts.releases.gen_nvidia_dra")


def release_objects() -> list[dict[str, Any]]:
    """The rendered chart's objects, each a fresh copy."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [document for document in yaml.load_all(_release_text(), Loader=loader) if document]


def namespace_objects() -> list[dict[str, Any]]:
    """What `helm install --create-namespace` and the Cluster Toolkit's manifest add around the chart."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": CRITICAL_QUOTA, "namespace": NAMESPACE},
            "spec": {
                "hard": {"pods": str(CRITICAL_QUOTA_PODS)},
                "scopeSelector": {
                    "matchExpressions": [
                        {
                            "operator": "In",
                            "scopeName": "PriorityClass",
                            "values": ["system-node-critical", "system-cluster-critical"],
                        }
                    ]
                },
            },
        },
    ]


def _plugin_affinity(accelerators: Iterable[str]) -> dict[str, Any]:
    expression = {"key": gke.GPU_ACCELERATOR_LABEL, "operator": "In", "values": sorted(accelerators)}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [expression]}
    ]}}}  # fmt: skip


def configured_driver(
    controller_node_selector: Mapping[str, str], accelerators: Iterable[str], tolerations: list[dict[str, str]]
) -> list[dict[str, Any]]:
    """The namespace, then the chart's objects: the controller placed by `controller_node_selector`, the kubelet
    plugin on the nodes of `accelerators` (the NVL72 machines), tolerating their `tolerations`."""
    objects = namespace_objects() + release_objects()
    for obj in objects:
        pod = ((obj.get("spec") or {}).get("template") or {}).get("spec")
        if obj["kind"] == "Deployment" and obj["metadata"]["name"] == CONTROLLER:
            pod["nodeSelector"] = dict(controller_node_selector)
        if obj["kind"] == "DaemonSet" and obj["metadata"]["name"] == KUBELET_PLUGIN:
            pod["affinity"] = _plugin_affinity(accelerators)
            pod["tolerations"] = copy.deepcopy(tolerations)
    return objects


# ---- a job's ComputeDomain -------------------------------------------------------------------------------------


def compute_domain_name(job: str) -> str:
    return f"{job}-nvlink"


def channel_template_name(job: str) -> str:
    return f"{job}-nvlink-channel"


def compute_domain_of_template(template: str) -> str | None:
    """The ComputeDomain trainyard names for a channel template, or None for a template that is not one."""
    suffix = channel_template_name("")
    return compute_domain_name(template.removesuffix(suffix)) if template.endswith(suffix) else None


def compute_domain_spec(job: str) -> dict[str, Any]:
    """`numNodes: 0`, as the driver asks with IMEXDaemonsWithDNSNames (on by default from 25.8): each IMEX daemon
    starts without waiting for its peers, and the spec (immutable: `self == oldSelf`) never depends on the job's
    size, so a resized job keeps its domain."""
    return {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": channel_template_name(job)}}}


def channel_template_of(compute_domain: Mapping[str, Any]) -> str | None:
    """The name of the channel template a ComputeDomain object asks the controller for."""
    return ((compute_domain.get("spec") or {}).get("channel") or {}).get("resourceClaimTemplate", {}).get("name")


def channel_claim_template(compute_domain: Mapping[str, Any]) -> dict[str, Any]:
    """The ResourceClaimTemplate the controller creates for `compute_domain`, as far as Kueue reads it: one channel
    device of CHANNEL_DEVICE_CLASS per claiming pod (the opaque config naming the domain is the driver's)."""
    request = {"name": CHANNEL_REQUEST, "exactly": {"deviceClassName": CHANNEL_DEVICE_CLASS}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": channel_template_of(compute_domain), "namespace": _namespace(compute_domain)},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def claim_templates(objects: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """The ResourceClaimTemplates that will exist, by (namespace, name): those among `objects` (as applied:
    apiVersion, kind, metadata, spec), and those the driver's controller makes for their ComputeDomains when
    `objects` run the controller."""
    objects = list(objects)
    runs_controller = any(
        o.get("kind") == "Deployment" and (o.get("metadata") or {}).get("name") == CONTROLLER for o in objects
    )
    domains = [
        o for o in objects if o.get("kind") == COMPUTE_DOMAIN_KIND and o.get("apiVersion") == COMPUTE_DOMAIN_API_VERSION
    ]
    made = [channel_claim_template(domain) for domain in domains] if runs_controller else []
    return {
        (_namespace(o), (o.get("metadata") or {}).get("name")): o
        for o in [*objects, *made]
        if o.get("kind") == "ResourceClaimTemplate"
    }


def _namespace(obj: Mapping[str, Any]) -> str:
    return (obj.get("metadata") or {}).get("namespace") or "default"
