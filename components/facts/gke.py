"""GKE, Kubernetes, Kueue and Pulumi names, each written once.

The stack writes these names, the policy pack and preflight read them back from the plan, and a name
typed twice drifts. Policies still re-derive what they check from the plan; they share the names only.
"""

from __future__ import annotations

import re
from types import MappingProxyType

# Extended resources the device plugins advertise; GKE also taints accelerator nodes with these keys.
TPU_RESOURCE = "google.com/tpu"
GPU_RESOURCE = "nvidia.com/gpu"
ACCELERATOR_RESOURCES = (TPU_RESOURCE, GPU_RESOURCE)

# Node labels GKE sets on every node of a pool.
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
# Where GKE's GPU nodes keep the NVIDIA driver and its libraries (the GPU driver installer's target).
HOST_NVIDIA_DIR = "/home/kubernetes/bin/nvidia"
GPU_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
TPU_ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
FLEX_START_LABEL = "cloud.google.com/gke-flex-start"
QUEUED_LABEL = "cloud.google.com/gke-queued"  # also the taint key of queued-provisioning nodes
SPOT_LABEL = "cloud.google.com/gke-spot"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
METADATA_SERVER_LABEL = "iam.gke.io/gke-metadata-server-enabled"
DRANET_LABEL = "cloud.google.com/gke-networking-dra-driver"  # a node label that turns managed DRANET on
# Trainyard's own node label on every TPU pool: the slice group it belongs to. Kueue flavors select on it, so
# groups of one shape on different capacity (on-demand, spot, reservation) never share a flavor's nodes.
SLICE_GROUP_LABEL = "trainyard/tpu-slice-group"
# The DaemonSet that copies the NCCL gIB plugin onto A4 hosts: the one workload that needs the host.
KUBE_SYSTEM_NAMESPACE = "kube-system"
NCCL_INSTALLER_NAMESPACE, NCCL_INSTALLER_NAME = KUBE_SYSTEM_NAMESPACE, "nccl-rdma-installer"
WORKLOAD_LABEL = "trainyard/workload"  # a job's pods across its revisions (the Job's own name changes)
JOB_NAME_POD_LABEL = "batch.kubernetes.io/job-name"  # set by the Job controller on every pod it creates

# Taints GKE puts on nodes itself, as (key, value, effect): pods must tolerate them to land there.
# TPU and GPU nodes: https://cloud.google.com/kubernetes-engine/docs/concepts/tpus ("GKE automatically adds
# the google.com/tpu taint") and https://cloud.google.com/kubernetes-engine/docs/how-to/gpus (nvidia.com/gpu);
# queued-provisioning nodes: https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest.
TPU_TAINT = (TPU_RESOURCE, "present", "NoSchedule")
GPU_TAINT = (GPU_RESOURCE, "present", "NoSchedule")
QUEUED_TAINT = (QUEUED_LABEL, "true", "NoSchedule")
# Arm nodes (A4X): https://cloud.google.com/kubernetes-engine/docs/how-to/prepare-arm-workloads-for-deployment.
ARCH_LABEL = "kubernetes.io/arch"
ARM64_TAINT = (ARCH_LABEL, "arm64", "NoSchedule")


def gpu_node_tolerations(arm: bool) -> list[dict[str, str]]:
    """What a per-node daemon on GPU pools tolerates: only the taints GPU pools carry (GPU, queued provisioning on
    DWS pools, Arm), not every taint there is."""
    taints = (GPU_TAINT, QUEUED_TAINT, *((ARM64_TAINT,) if arm else ()))
    return [{"key": key, "operator": "Exists", "effect": effect} for key, _, effect in taints]


# GKE runs Kubernetes' ExtendedResourceToleration admission plugin (same GPU page): a pod that requests an
# extended resource (google.com/tpu, nvidia.com/gpu) gets a toleration for the taint of that name added.

# GKE multi-networking: the pod annotations that attach extra interfaces, and the DRANET device class.
INTERFACES_ANNOTATION = "networking.gke.io/interfaces"
DEFAULT_INTERFACE_ANNOTATION = "networking.gke.io/default-interface"
NETWORKING_GROUP = "networking.gke.io"
DRANET_DEVICE_CLASS = "netdev.google.com"
# A GPU pool's RDMA NICs under managed DRANET (Cluster Toolkit's gke-node-pool default for GPU pools); pods claim
# them, and Kueue counts them as RDMA_NIC_RESOURCE, a name of trainyard's like DCN_NIC_RESOURCE.
GPU_DRANET_DEVICE_CLASS = "mrdma.google.com"
RDMA_NIC_RESOURCE = "trainyard/rdma-nic"
# A node pool's network config that turns managed DRANET on (google_container_node_pool
# network_config.accelerator_network_profile).
ACCELERATOR_NETWORK_PROFILE = "auto"
# The resource Kueue counts DRANET NICs as (its manager configuration maps the device class to it), so a TPU
# worker's claim is quota like its chips: a name of trainyard's, any label key Kueue accepts.
DCN_NIC_RESOURCE = "trainyard/dcn-nic"

# The GCS FUSE CSI driver's sidecar: injected on this annotation; "0" lifts each resource limit (the
# sidecar stages checkpoints and file-cache data through its own disk and memory).
GCS_FUSE_ANNOTATIONS = MappingProxyType(
    {
        "gke-gcsfuse/volumes": "true",
        "gke-gcsfuse/cpu-limit": "0",
        "gke-gcsfuse/memory-limit": "0",
        "gke-gcsfuse/ephemeral-storage-limit": "0",
    }
)

# Kubernetes quantities, exactly as apimachinery parses them (and as controller-gen writes them into CRDs):
# a signed decimal, then a binary (Ki..Ei) or decimal (n, u, m, k, M..E) suffix, or a decimal exponent.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
QUANTITY_SUFFIXES = MappingProxyType(
    {"": 1, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
    | {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
)

# Kubernetes labels every namespace, and KubeRay every pod, with these.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
RAY_NODE_TYPE_LABEL = "ray.io/node-type"
# The Ray head's ports: GCS, the dashboard (also the job API, which the KubeRay operator polls) and the client.
RAY_HEAD_PORTS = MappingProxyType({"gcs-server": 6379, "dashboard": 8265, "client": 10001})
# The Ray of the MaxText image (workloads/maxtext/Dockerfile, requirements.txt): KubeRay refuses token
# authentication on a RayCluster that does not state a rayVersion of 2.52.0 or later (ray-operator v1.6.2,
# controllers/ray/utils/validation.go).
RAY_VERSION = "2.60.0"
# Ray's token authentication (ray 2.60, python/ray/_private/authentication): every Ray process reads the mode
# and the token from these; KubeRay v1.6.2 sets both on every Ray container from the Secret it generates per
# RayCluster (named as the cluster, the token under RAY_AUTH_SECRET_KEY; controllers/ray/common/pod.go).
RAY_AUTH_MODE_ENV, RAY_AUTH_TOKEN_ENV, RAY_AUTH_SECRET_KEY = "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "auth_token"
# The mode that requires the token: Ray's RAY_AUTH_MODE value and KubeRay's authOptions.mode (unset: disabled).
RAY_TOKEN_AUTH = "token"

# Kueue.
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
ELASTIC_JOB_ANNOTATION = "kueue.x-k8s.io/elastic-job"
MAX_RUN_ANNOTATION = "provreq.kueue.x-k8s.io/maxRunDurationSeconds"
PROVISIONING_REQUEST_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
QUEUED_PROVISIONING_CLASS = "queued-provisioning.gke.io"  # GKE's ProvisioningRequest class for DWS
# Topology-Aware Scheduling: the labels GKE puts on A4/A3 nodes, widest first (block, sub-block, host), then the
# node (https://cloud.google.com/ai-hypercomputer/docs/workloads/schedule-gke-workloads-tas); the Topology's
# name is the one GKE's guide and Cluster Toolkit use.
TAS_TOPOLOGY = "gke-default"
TOPOLOGY_BLOCK_LABEL = "cloud.google.com/gce-topology-block"
TAS_LEVELS = (
    TOPOLOGY_BLOCK_LABEL,
    "cloud.google.com/gce-topology-subblock",
    "cloud.google.com/gce-topology-host",
    "kubernetes.io/hostname",
)
# Compact placement on GPU pools: queued provisioning refuses it, and flex-start takes it only on these machine
# families (Cluster Toolkit's gke-node-pool preconditions; GKE's docs state neither).
FLEX_START_COMPACT_MACHINES = ("a3-ultragpu-", "a4-", "h4d-")
PREFERRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
REQUIRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
UNCONSTRAINED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-unconstrained-topology"
# A pod set asks Kueue for Topology-Aware Scheduling with one of these on its pod template.
TOPOLOGY_ANNOTATIONS = (REQUIRED_TOPOLOGY_ANNOTATION, PREFERRED_TOPOLOGY_ANNOTATION, UNCONSTRAINED_TOPOLOGY_ANNOTATION)

# Pulumi: jobs that wait for capacity or train for hours are submitted, not awaited.
SKIP_AWAIT_ANNOTATION = "pulumi.com/skipAwait"
SKIP_AWAIT = MappingProxyType({SKIP_AWAIT_ANNOTATION: "true"})

# Pulumi type tokens of the GCP resources that policies, preflight and cost read back by type.
FIREWALL_TYPE = "gcp:compute/firewall:Firewall"
CLUSTER_TYPE = "gcp:container/cluster:Cluster"
NODE_POOL_TYPE = "gcp:container/nodePool:NodePool"
NETWORK_TYPE = "gcp:compute/network:Network"
SUBNETWORK_TYPE = "gcp:compute/subnetwork:Subnetwork"
ROUTER_TYPE = "gcp:compute/router:Router"
ROUTER_NAT_TYPE = "gcp:compute/routerNat:RouterNat"
BUCKET_TYPE = "gcp:storage/bucket:Bucket"
DEPLOYMENT_TYPE = "kubernetes:apps/v1:Deployment"
SERVICE_ACCOUNT_TYPE = "gcp:serviceaccount/account:Account"

# What the API server refuses by size (preflight/checks/api_limits.py; docs/cloud-facts.md, "API limits"). etcd
# stores an object in one request of at most --max-request-bytes, 1.5 MiB by default; a ConfigMap's data and
# binaryData hold at most 1 MiB (Kubernetes' ConfigMap validation, core.MaxSecretSize).
OBJECT_BYTES_LIMIT = 1_572_864
CONFIG_MAP_BYTES_LIMIT = 1_048_576
# A job's own arguments (MaxText extraArgs, FSDP args) at most: the rest of its object (pod templates, Ray's
# runtime env) stays well under the other half MiB.
ARGUMENT_BYTES_LIMIT = 1_048_576
# ClusterIP Services GKE's own add-ons may take from the Service range (kube-dns, metrics-server, the default HTTP
# backend, managed Prometheus, the Ray operator and GCS FUSE webhooks...): GKE publishes no count; an assumption
# with room, stated in docs/cloud-facts.md.
GKE_SYSTEM_SERVICES = 16


def gke_version_key(version: str) -> tuple[int, ...]:
    """`1.34.0-gke.2201000` -> (1, 34, 0, 2201000); a minor such as `1.35` -> (1, 35)."""
    return tuple(int(part) for part in re.findall(r"[0-9]+", version))


def gke_version_below(version: str, floor: str) -> bool:
    """Whether a cluster version is older than a floor; a minor (`1.34`) is compared with the floor's minor, since
    GKE gives it a current patch of that minor (docs/cloud-facts.md: accelerators' GKE versions)."""
    key = gke_version_key(version)
    return key < gke_version_key(floor)[: len(key)]
