"""The pod parts both trainers share, built once and in one form: the Kubernetes JSON (camelCase) a RayJob's raw
spec takes as it is; the Job builder turns a part into pulumi_kubernetes' keyword arguments with `snake`.

The bucket's mount (GCS FUSE, at DATA_MOUNT), the pod's identity (the workload service account, no API token)
and security (components/jobs/pod_security.py), and the toleration of an accelerator node's taint.
"""

from __future__ import annotations

from typing import Any

from components.jobs.pod_security import FUSE_OWNER_OPTIONS, POD_TOKEN, pod_security

DATA_MOUNT = "/data"  # the bucket, in every trainer pod
DATA_VOLUME = "gcs-fuse-csi-ephemeral"
GCS_FUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
# GCS FUSE's file cache on the node (unbounded: the node's local SSD or boot disk). The FSDP trainer reads a large
# model once per node: parallel downloads fetch it at the NICs' speed (the A4 tutorial's options).
MOUNT_OPTIONS = {
    "ray": f"implicit-dirs,{FUSE_OWNER_OPTIONS},file-cache:max-size-mb:-1",
    "torch": (
        f"implicit-dirs,{FUSE_OWNER_OPTIONS},"
        "file-cache:enable-parallel-downloads:true,file-cache:parallel-downloads-per-file:100,"
        "file-cache:max-parallel-downloads:-1,file-cache:download-chunk-size-mb:10,file-cache:max-size-mb:-1"
    ),
}


def data_volume(bucket: str, trainer: str) -> dict[str, Any]:
    attributes = {"bucketName": bucket, "mountOptions": MOUNT_OPTIONS[trainer]}
    return {"name": DATA_VOLUME, "csi": {"driver": GCS_FUSE_DRIVER, "volumeAttributes": attributes}}


def data_mount() -> dict[str, Any]:
    return {"name": DATA_VOLUME, "mountPath": DATA_MOUNT}


def trainer_pod(service_account: str) -> dict[str, Any]:
    """Who a trainer pod runs as: the workload's service account (Workload Identity), no API token, no root."""
    return {"serviceAccountName": service_account, **POD_TOKEN, "securityContext": pod_security()}


def accelerator_toleration(resource: str) -> dict[str, Any]:
    """GKE taints TPU and GPU nodes with their resource's name (components/facts/gke.py TPU_TAINT, GPU_TAINT)."""
    return {"key": resource, "operator": "Exists", "effect": "NoSchedule"}
