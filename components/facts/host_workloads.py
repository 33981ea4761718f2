"""The workloads the stack runs with the node's privileges on purpose, each as the exact shape it may take.

The NCCL gIB installer, a DaemonSet that copies the gIB plugin and its NCCL libraries onto every A4 node, where
each GPU job mounts them read-only (built from this record, components/kube/rdma.py); and on NVL72 pools the
NVIDIA DRA driver's kubelet plugin, which prepares IMEX channels for pods (the chart's own DaemonSet,
components/facts/nvidia_dra.py). The policy pack exempts each from the pod rules only while it keeps this shape
(policies/allow_lists.py): the same name with another image, host path, host namespace, privileged container,
added capability or a mounted API token it does not need is judged as any other workload. docs/security.md says
what each keeps and why.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from components.facts import gke, gpu_software, nvidia_dra

# GKE's pause image, as Google's own installer DaemonSet runs it after its init container.
PAUSE_IMAGE = "gke.gcr.io/pause:3.8@sha256:880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830"
# Where the installer puts the gIB plugin, beside GKE's NVIDIA libraries (gke.HOST_NVIDIA_DIR).
HOST_NVIDIA_DIR = gke.HOST_NVIDIA_DIR
HOST_GIB_DIR = "/home/kubernetes/bin/gib"
HOST_NAMESPACES = ("hostPID", "hostNetwork", "hostIPC")
# The only host folders a workload pod may mount, read-only: the driver and gIB libraries the FSDP trainer loads.
READ_ONLY_HOST_PATHS = (HOST_NVIDIA_DIR, HOST_GIB_DIR)
PAUSE_USER = 65535  # the pause image's nobody


@dataclass(frozen=True)
class HostWorkload:
    kind: str
    namespace: str
    name: str
    service_account: str  # its own
    host_namespaces: tuple[str, ...]
    host_paths: dict[str, str]  # volume name -> host path; the privileged containers write them
    privileged_containers: tuple[str, ...]
    images: tuple[str, ...]
    api_token: bool = False  # whether its pods mount their account's token (then a binding of the stack grants it)

    @property
    def ref(self) -> str:
        """`Kind/namespace/name`, as the pack config's allow-lists name workloads."""
        return f"{self.kind}/{self.namespace}/{self.name}"


NCCL_INSTALLER = HostWorkload(
    kind="DaemonSet",
    namespace=gke.NCCL_INSTALLER_NAMESPACE,
    name=gke.NCCL_INSTALLER_NAME,
    service_account=gke.NCCL_INSTALLER_NAME,
    # Google's installer manifest runs with both; its install script is inside the image and undocumented, so they
    # stay until it is read or tried on an A4 node (docs/security.md: accepted risks).
    host_namespaces=("hostNetwork", "hostPID"),
    host_paths={"library-dir-host": f"{HOST_NVIDIA_DIR}/lib64", "gib": HOST_GIB_DIR},
    privileged_containers=(gke.NCCL_INSTALLER_NAME,),
    images=(gpu_software.GIB.reference, PAUSE_IMAGE),
)
# The same installer for Arm GPU nodes (A4X), with the arm64 build of the same gIB release.
NCCL_INSTALLER_ARM64 = dataclasses.replace(
    NCCL_INSTALLER,
    name=f"{gke.NCCL_INSTALLER_NAME}-arm64",
    service_account=f"{gke.NCCL_INSTALLER_NAME}-arm64",
    images=(gpu_software.GIB_ARM64.reference, PAUSE_IMAGE),
)
NCCL_INSTALLERS = {"amd64": NCCL_INSTALLER, "arm64": NCCL_INSTALLER_ARM64}
# The chart's kubelet plugin, as the vendored render has it: it registers with the kubelet, writes CDI specs for
# the channels it prepares and reads the driver root; it publishes its node's ResourceSlices through the API.
NVIDIA_DRA_KUBELET_PLUGIN = HostWorkload(
    kind="DaemonSet",
    namespace=nvidia_dra.NAMESPACE,
    name=nvidia_dra.KUBELET_PLUGIN,
    service_account=nvidia_dra.KUBELET_PLUGIN_ACCOUNT,
    host_namespaces=(),
    host_paths=nvidia_dra.KUBELET_PLUGIN_HOST_PATHS,
    privileged_containers=nvidia_dra.KUBELET_PLUGIN_PRIVILEGED,
    images=(nvidia_dra.IMAGE,),
    api_token=True,
)
HOST_WORKLOADS = {workload.ref: workload for workload in (*NCCL_INSTALLERS.values(), NVIDIA_DRA_KUBELET_PLUGIN)}
