"""How every workload container runs: unprivileged, no privilege escalation, no Linux capabilities, the
runtime's default seccomp filter, no Kubernetes API token, and as a non-root user where its image has one.

No trainer needs more on the GKE versions trainyard supports: TPU containers need no privilege or capability
from GKE 1.28, A4 pods reach their GPUs and RDMA NICs through the device plugin and multi-networking, and GKE
Autopilot runs GPU and TPU pods under this same seccomp default (docs/cloud-facts.md: privileges). Workload
Identity goes through the GKE metadata server and GCS FUSE through the CSI driver's own token, so no pod needs
its service account token mounted.

The dicts are the Kubernetes JSON (the RayJob's raw spec takes them as they are); `snake` turns one into
pulumi_kubernetes' keyword arguments.
"""

from __future__ import annotations

import re
from typing import Any

# The Ray images' `ray` user and the FSDP image's USER (workloads/fsdp/Dockerfile).
TRAINER_UID = 1000
# GCS FUSE shows the bucket's files as root's unless told otherwise; the trainers write checkpoints there.
FUSE_OWNER_OPTIONS = f"uid={TRAINER_UID},gid={TRAINER_UID},dir-mode=775,file-mode=664"


def container_security() -> dict[str, Any]:
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def pod_security(run_as: int | None = TRAINER_UID) -> dict[str, Any]:
    """`run_as`: the image's non-root uid; None keeps the image's own user (a third-party image run as root)."""
    context: dict[str, Any] = {"seccompProfile": {"type": "RuntimeDefault"}}
    if run_as is not None:
        context.update(runAsNonRoot=True, runAsUser=run_as, runAsGroup=run_as, fsGroup=run_as)
    return context


POD_TOKEN = {"automountServiceAccountToken": False}


def snake(value: Any) -> Any:
    """Kubernetes JSON keys as pulumi_kubernetes' Python argument names (seccompProfile -> seccomp_profile)."""
    if isinstance(value, dict):
        return {re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower(): snake(item) for key, item in value.items()}
    return value
