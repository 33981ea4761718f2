"""Well-formed Kubernetes objects in the shape of the seed tutorials (seeds/, FACTS.md A and B).

Each call returns fresh dicts, so a test may mutate them freely.
"""

from __future__ import annotations

import json
from typing import Any

NAMESPACE = "trainyard"
GCS_FUSE_ANNOTATIONS = {
    "gke-gcsfuse/volumes": "true",
    "gke-gcsfuse/cpu-limit": "0",
    "gke-gcsfuse/memory-limit": "0",
    "gke-gcsfuse/ephemeral-storage-limit": "0",
}
MOUNT_OPTIONS = "implicit-dirs,uid=1000,gid=1000,dir-mode=775,file-mode=664,file-cache:max-size-mb:-1"
RAY_IMAGE = "rayproject/ray:2.55.0-py312-tpu"


def _data_volumes() -> list[dict[str, Any]]:
    return [
        {"name": "dshm", "emptyDir": {"medium": "Memory"}},
        {
            "name": "gcs-fuse-csi-ephemeral",
            "csi": {
                "driver": "gcsfuse.csi.storage.gke.io",
                "volumeAttributes": {"bucketName": "trainyard-dev-data", "mountOptions": MOUNT_OPTIONS},
            },
        },
    ]


def _data_mounts() -> list[dict[str, Any]]:
    return [{"name": "gcs-fuse-csi-ephemeral", "mountPath": "/data"}, {"name": "dshm", "mountPath": "/dev/shm"}]


def ray_head_group() -> dict[str, Any]:
    return {
        "rayStartParams": {},
        "template": {
            "metadata": {"annotations": dict(GCS_FUSE_ANNOTATIONS)},
            "spec": {
                "serviceAccountName": "trainyard-workload",
                "containers": [
                    {
                        "name": "ray-head",
                        "image": RAY_IMAGE,
                        "ports": [
                            {"containerPort": 6379, "name": "gcs-server"},
                            {"containerPort": 8265, "name": "dashboard"},
                            {"containerPort": 10001, "name": "client"},
                        ],
                        "resources": {"limits": {"memory": "16Gi"}, "requests": {"cpu": "8", "memory": "16Gi"}},
                        "volumeMounts": _data_mounts(),
                    }
                ],
                "volumes": _data_volumes(),
                "nodeSelector": {"iam.gke.io/gke-metadata-server-enabled": "true"},
            },
        },
    }


def ray_tpu_worker_group() -> dict[str, Any]:
    """seeds/ray-maxtext-multislice-gke.txt: 2 slices of v6e 4x4, 4 VMs per slice, 4 chips per VM."""
    env = {
        "MEGASCALE_NUM_SLICES": "2",
        "MEGASCALE_PORT": "9915",
        "JAX_PLATFORMS": "tpu,cpu",
        "ENABLE_PJRT_COMPATIBILITY": "true",
        "LIBTPU_INIT_ARGS": "--xla_tpu_scoped_vmem_limit_kib=122880 --megascale_grpc_interface_prefixes=eth1,eth2,lo",
    }
    tpu = {"memory": "200G", "google.com/tpu": "4"}
    return {
        "replicas": 2,
        "numOfHosts": 4,
        "groupName": "tpu-group",
        "rayStartParams": {"metrics-export-port": "8082"},
        "template": {
            "metadata": {"annotations": dict(GCS_FUSE_ANNOTATIONS)},
            "spec": {
                "serviceAccountName": "trainyard-workload",
                "resourceClaims": [{"name": "netdev", "resourceClaimTemplateName": "two-netdev"}],
                "containers": [
                    {
                        "name": "ray-worker",
                        "image": RAY_IMAGE,
                        "resources": {"claims": [{"name": "netdev"}], "limits": tpu, "requests": {**tpu, "cpu": "8"}},
                        "env": [{"name": name, "value": value} for name, value in env.items()],
                        "securityContext": {"privileged": True},
                        "volumeMounts": _data_mounts(),
                    }
                ],
                "volumes": _data_volumes(),
                "nodeSelector": {
                    "iam.gke.io/gke-metadata-server-enabled": "true",
                    "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                    "cloud.google.com/gke-tpu-topology": "4x4",
                },
            },
        },
    }


def ray_cluster() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "maxtext", "namespace": NAMESPACE},
        "spec": {"headGroupSpec": ray_head_group(), "workerGroupSpecs": [ray_tpu_worker_group()]},
    }


def ray_job() -> dict[str, Any]:
    """FACTS.md B: rayjob-tpu-v6e-dws.yaml, queued through Kueue, elastic between 1 and 2 slices."""
    workers = ray_tpu_worker_group()
    workers.update(minReplicas=1, maxReplicas=2)
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {
            "name": "llama3-8b",
            "namespace": NAMESPACE,
            "labels": {"kueue.x-k8s.io/queue-name": "trainyard"},
            "annotations": {"kueue.x-k8s.io/elastic-job": "true", "pulumi.com/skipAwait": "true"},
        },
        "spec": {
            "entrypoint": "python -m workloads.maxtext.train model_name=llama3-8b steps=100",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": {"headGroupSpec": ray_head_group(), "workerGroupSpecs": [workers]},
        },
    }


def dranet_claim_template() -> dict[str, Any]:
    exactly = {"deviceClassName": "netdev.google.com", "allocationMode": "ExactCount", "count": 2}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "two-netdev", "namespace": NAMESPACE},
        "spec": {"spec": {"devices": {"requests": [{"name": "req-netdev", "exactly": exactly}]}}},
    }


def fsdp_service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "fsdp-llama", "namespace": NAMESPACE},
        "spec": {
            "clusterIP": "None",
            "selector": {"job-name": "fsdp-llama"},
            "ports": [{"name": "rendezvous", "port": 29400, "targetPort": 29400}],
        },
    }


def fsdp_job() -> dict[str, Any]:
    """FACTS.md A: the torchrun Indexed Job on 2 A4 nodes, held by Kueue until DWS provides them."""
    interfaces = [{"interfaceName": "eth0", "network": "default"}, {"interfaceName": "eth1", "network": "gvnic-1"}]
    interfaces += [{"interfaceName": f"eth{index + 2}", "network": f"rdma-{index}"} for index in range(8)]
    nccl_env = {"NCCL_NET": "gIB", "NCCL_CROSS_NIC": "0", "LD_LIBRARY_PATH": "/usr/local/nvidia/lib64"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "fsdp-llama",
            "namespace": NAMESPACE,
            "labels": {"kueue.x-k8s.io/queue-name": "trainyard"},
            "annotations": {"provreq.kueue.x-k8s.io/maxRunDurationSeconds": "7200", "pulumi.com/skipAwait": "true"},
        },
        "spec": {
            "completionMode": "Indexed",
            "completions": 2,
            "parallelism": 2,
            "backoffLimit": 0,
            "suspend": True,
            "template": {
                "metadata": {
                    "annotations": {
                        "networking.gke.io/default-interface": "eth0",
                        "networking.gke.io/interfaces": json.dumps(interfaces),
                    }
                },
                "spec": {
                    "subdomain": "fsdp-llama",
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "trainer",
                            "image": "us-docker.pkg.dev/example/trainyard/fsdp:1",
                            "command": [
                                "torchrun",
                                "--nnodes=2",
                                "--nproc_per_node=8",
                                "--rdzv_endpoint=fsdp-llama-0.fsdp-llama:29400",
                            ],
                            "env": [{"name": name, "value": value} for name, value in nccl_env.items()]
                            + [
                                {
                                    "name": "HF_TOKEN",
                                    "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}},
                                }
                            ],
                            "resources": {"limits": {"nvidia.com/gpu": 8}, "requests": {"nvidia.com/gpu": 8}},
                            "securityContext": {"privileged": True},
                            "volumeMounts": [{"name": "nvidia", "mountPath": "/usr/local/nvidia"}],
                        }
                    ],
                    "volumes": [{"name": "nvidia", "hostPath": {"path": "/home/kubernetes/bin/nvidia"}}],
                },
            },
        },
    }


def nccl_installer() -> dict[str, Any]:
    labels = {"name": "nccl-rdma-installer"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nccl-rdma-installer", "namespace": "kube-system", "labels": labels},
        "spec": {
            "selector": {"matchLabels": dict(labels)},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "hostNetwork": True,
                    "nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-b200"},
                    "tolerations": [{"operator": "Exists"}],
                    "initContainers": [
                        {
                            "name": "nccl-rdma-installer",
                            "image": "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.0",
                            "args": ["set -ex; /scripts/container_entry.sh install --install-nccl"],
                            "command": ["/bin/sh", "-c"],
                            "securityContext": {"privileged": True},
                            "volumeMounts": [{"name": "gib", "mountPath": "/usr/local/home/kubernetes/bin/gib"}],
                        }
                    ],
                    "containers": [{"name": "pause", "image": "gke.gcr.io/pause:3.8"}],
                    "volumes": [{"name": "gib", "hostPath": {"path": "/home/kubernetes/bin/gib"}}],
                },
            },
        },
    }


def namespace() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}


def service_account() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "trainyard-workload", "namespace": NAMESPACE},
        "automountServiceAccountToken": False,
    }


def hf_token_secret() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "hf-token", "namespace": NAMESPACE},
        "type": "Opaque",
        "data": {"token": "aGZfZXhhbXBsZQ=="},
    }


def _kueue(kind: str, name: str, spec: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": metadata, "spec": spec}


def resource_flavor() -> dict[str, Any]:
    labels = {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "4x4"}
    return _kueue("ResourceFlavor", "tpu-v6e-4x4", {"nodeLabels": labels})


def cluster_queue() -> dict[str, Any]:
    """FACTS.md B: on-demand first, then DWS; the provisioning check only on the DWS flavor."""

    def quota() -> list[dict[str, Any]]:
        return [
            {"name": "cpu", "nominalQuota": 400},
            {"name": "memory", "nominalQuota": "3200Gi"},
            {"name": "google.com/tpu", "nominalQuota": 32},
        ]

    flavors = [{"name": "tpu-v6e-4x4", "resources": quota()}, {"name": "tpu-v6e-4x4-dws", "resources": quota()}]
    return _kueue(
        "ClusterQueue",
        "trainyard",
        {
            "namespaceSelector": {},
            "cohortName": "trainyard",
            "resourceGroups": [{"coveredResources": ["cpu", "memory", "google.com/tpu"], "flavors": flavors}],
            "admissionChecksStrategy": {"admissionChecks": [{"name": "dws-prov", "onFlavors": ["tpu-v6e-4x4-dws"]}]},
        },
    )


def admission_check() -> dict[str, Any]:
    # `kind` is matched by Kueue's Go regex ^(?i)[a-z]...: mixed case is valid.
    parameters = {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "dws-config"}
    return _kueue(
        "AdmissionCheck",
        "dws-prov",
        {
            "controllerName": "kueue.x-k8s.io/provisioning-request",
            "parameters": parameters,
        },
    )


def provisioning_request_config() -> dict[str, Any]:
    return _kueue(
        "ProvisioningRequestConfig",
        "dws-config",
        {
            "provisioningClassName": "queued-provisioning.gke.io",
            "managedResources": ["nvidia.com/gpu", "google.com/tpu"],
        },
    )


def local_queue() -> dict[str, Any]:
    return _kueue("LocalQueue", "trainyard", {"clusterQueue": "trainyard"}, namespace=NAMESPACE)


def gke_network_param_set(name: str = "rdma-0", device_mode: str = "RDMA") -> dict[str, Any]:
    return {
        "apiVersion": "networking.gke.io/v1",
        "kind": "GKENetworkParamSet",
        "metadata": {"name": name},
        "spec": {"vpc": "trainyard-rdma-net", "vpcSubnet": "trainyard-rdma-sub-0", "deviceMode": device_mode},
    }


def network(name: str = "rdma-0") -> dict[str, Any]:
    return {
        "apiVersion": "networking.gke.io/v1",
        "kind": "Network",
        "metadata": {"name": name},
        "spec": {
            "type": "Device",
            "parametersRef": {"group": "networking.gke.io", "kind": "GKENetworkParamSet", "name": name},
        },
    }


VALID_OBJECTS = {
    "Namespace": namespace,
    "ServiceAccount": service_account,
    "Secret": hf_token_secret,
    "Service": fsdp_service,
    "Job": fsdp_job,
    "DaemonSet": nccl_installer,
    "ResourceClaimTemplate": dranet_claim_template,
    "RayCluster": ray_cluster,
    "RayJob": ray_job,
    "ResourceFlavor": resource_flavor,
    "ClusterQueue": cluster_queue,
    "AdmissionCheck": admission_check,
    "ProvisioningRequestConfig": provisioning_request_config,
    "LocalQueue": local_queue,
    "GKENetworkParamSet": gke_network_param_set,
    "Network": network,
}
