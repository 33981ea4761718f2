"""Engine-shaped resources for policy, cost and diff tests.

Inputs are written as the Pulumi engine sends them to providers and policies (checked against what a mock
monitor receives from pulumi_gcp 10.2.0 / pulumi_kubernetes 4.34.2 Args): camelCase keys, every number a
float. ``good_stack()`` is a small stack shaped like the dev stack that passes every rule; tests mutate one
property with ``changed`` and expect exactly the rule that guards it to fire.
"""

from __future__ import annotations

import copy
from typing import Any

from pulumi_policy.proxy import UNKNOWN_NUMBER_VALUE, UNKNOWN_STRING_VALUE

from components.facts.gke import WORKLOAD_LABEL

PREFIX = "urn:pulumi:dev::trainyard::"
STACK_URN = f"{PREFIX}pulumi:pulumi:Stack::trainyard-dev"
UNKNOWN_NUMBER = UNKNOWN_NUMBER_VALUE
UNKNOWN_STRING = UNKNOWN_STRING_VALUE
ZONE = "us-east5-b"
QUEUE = "dws-local-queue"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
BLOCK = "cloud.google.com/gce-topology-block"
# The dev stack's image repository (components/infra/images.py): pods pull the trainers from it.
REGISTRY = "us-east5-docker.pkg.dev/trainyard-dev/trainyard"
# How the stack's Ray containers state Ray's token authentication (components/jobs/ray_workloads.py).
RAY_AUTH_ENV = [{"name": "RAY_AUTH_MODE", "value": "token"}]


def resource(type_: str, name: str, inputs: dict[str, Any], custom: bool = True) -> dict[str, Any]:
    return {
        "urn": f"{PREFIX}{type_}::{name}",
        "type": type_,
        "name": name,
        "parent": STACK_URN,
        "custom": custom,
        "provider": "",
        "dependencies": [],
        "inputs": inputs,
    }


def plan(resources: list[dict[str, Any]], stack: str = "dev") -> dict[str, Any]:
    return {"project": "trainyard", "stack": stack, "config": {}, "resources": resources, "manifests": []}


def changed(item: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of a resource with ``inputs.<path>`` set (``value=DELETE`` removes the key)."""
    result = copy.deepcopy(item)
    *parents, last = path.split(".")
    target = result["inputs"]
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target.setdefault(key, {})
    if value is DELETE:
        del target[last]
    elif isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return result


DELETE = object()


def replace(stack: list[dict[str, Any]], new: dict[str, Any]) -> list[dict[str, Any]]:
    """The stack with the resource of the same URN swapped for ``new``."""
    return [new if item["urn"] == new["urn"] else item for item in stack]


# ---- Google Cloud --------------------------------------------------------------------------------


def network(name: str = "trainyard-dev-dcn-1", mtu: float = 8896.0) -> dict[str, Any]:
    return resource("gcp:compute/network:Network", name, {"autoCreateSubnetworks": False, "mtu": mtu, "name": name})


def cluster(name: str = "trainyard-dev") -> dict[str, Any]:
    return resource(
        "gcp:container/cluster:Cluster",
        name,
        {
            "name": name,
            "location": ZONE,
            "initialNodeCount": 1.0,
            "removeDefaultNodePool": True,
            "deletionProtection": True,
            "enableLegacyAbac": False,
            "enableShieldedNodes": True,
            "privateClusterConfig": {"enablePrivateNodes": True, "enablePrivateEndpoint": True},
            "controlPlaneEndpointsConfig": {"dnsEndpointConfig": {"allowExternalTraffic": True}},
            "masterAuth": {"clientCertificateConfig": {"issueClientCertificate": False}},
            "workloadIdentityConfig": {"workloadPool": "trainyard-dev.svc.id.goog"},
            "nodeConfig": {"workloadMetadataConfig": {"mode": "GKE_METADATA"}},
        },
    )


def _node_config(machine_type: str, **extra: Any) -> dict[str, Any]:
    return {
        "machineType": machine_type,
        "serviceAccount": "trainyard-dev-nodes@trainyard-dev.iam.gserviceaccount.com",
        "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"],
        "gvnic": {"enabled": True},
        "workloadMetadataConfig": {"mode": "GKE_METADATA"},
        "shieldedInstanceConfig": {"enableSecureBoot": True, "enableIntegrityMonitoring": True},
        **extra,
    }


def _node_pool(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A node pool of the dev cluster in the dev zone, with the given further inputs."""
    base = {"name": name, "cluster": "trainyard-dev", "location": ZONE, "nodeLocations": [ZONE]}
    return resource("gcp:container/nodePool:NodePool", name, {**base, **inputs})


def system_pool() -> dict[str, Any]:
    return _node_pool(
        "system",
        {
            "autoscaling": {"totalMinNodeCount": 3.0, "totalMaxNodeCount": 5.0},
            "management": {"autoRepair": True, "autoUpgrade": True},
            "nodeConfig": _node_config("e2-standard-8"),
        },
    )


def tpu_slice_pool(name: str = "v6e-16-0", topology: str = "4x4", vms: float = 4.0) -> dict[str, Any]:
    """An on-demand multi-host v6e slice: fixed size, COMPACT placement."""
    return _node_pool(
        name,
        {
            "nodeCount": vms,
            "placementPolicy": {"type": "COMPACT", "tpuTopology": topology},
            "management": {"autoRepair": True, "autoUpgrade": True},
            "nodeConfig": _node_config(
                "ct6e-standard-4t", labels={"cloud.google.com/gke-networking-dra-driver": "true"}
            ),
        },
    )


def flex_tpu_slice_pool(name: str = "v6e-16-flex") -> dict[str, Any]:
    """A flex-start v6e-16 slice: autoscaled 0..4, no reservation, repair/upgrade off."""
    return _node_pool(
        name,
        {
            "initialNodeCount": 0.0,
            "autoscaling": {"minNodeCount": 0.0, "maxNodeCount": 4.0},
            "placementPolicy": {"type": "COMPACT", "tpuTopology": "4x4"},
            "management": {"autoRepair": False, "autoUpgrade": False},
            "nodeConfig": _node_config(
                "ct6e-standard-4t", flexStart=True, reservationAffinity={"consumeReservationType": "NO_RESERVATION"}
            ),
        },
    )


def dws_gpu_pool(name: str = "gpu-nodepool-dws", max_nodes: float = 10.0) -> dict[str, Any]:
    """The A4 seed's pool: flex-start with queued provisioning, 0..max nodes."""
    return _node_pool(
        name,
        {
            "initialNodeCount": 0.0,
            "autoscaling": {"totalMinNodeCount": 0.0, "totalMaxNodeCount": max_nodes, "locationPolicy": "ANY"},
            "queuedProvisioning": {"enabled": True},
            "management": {"autoRepair": False, "autoUpgrade": False},
            "nodeConfig": _node_config(
                "a4-highgpu-8g",
                flexStart=True,
                reservationAffinity={"consumeReservationType": "NO_RESERVATION"},
                guestAccelerators=[
                    {
                        "type": "nvidia-b200",
                        "count": 8.0,
                        "gpuDriverInstallationConfig": {"gpuDriverVersion": "DEFAULT"},
                    }
                ],
            ),
        },
    )


def bucket(name: str = "trainyard-dev-data") -> dict[str, Any]:
    return resource(
        "gcp:storage/bucket:Bucket",
        name,
        {
            "name": name,
            "location": "US-EAST5",
            "uniformBucketLevelAccess": True,
            "publicAccessPrevention": "enforced",
            "hierarchicalNamespace": {"enabled": True},
            "softDeletePolicy": {"retentionDurationSeconds": 604800.0},
        },
    )


def image(name: str) -> str:
    """An image of the stack's own repository, where a test's pods pull from (images-from-allowed-registries)."""
    return f"{REGISTRY}/{name}"


def image_repository() -> dict[str, Any]:
    """The stack's Artifact Registry repository for its trainers' images."""
    return resource(
        "gcp:artifactregistry/repository:Repository",
        "registry",
        {
            "repositoryId": "trainyard",
            "format": "DOCKER",
            "location": "us-east5",
            "project": "trainyard-dev",
            "dockerConfig": {"immutableTags": True},
        },
    )


def bucket_member(
    name: str = "runner-object-user", role: str = "roles/storage.objectUser", member: str | None = None
) -> dict[str, Any]:
    member = member or (
        "principal://iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/"
        "trainyard-dev.svc.id.goog/subject/ns/trainyard/sa/trainyard-runner"
    )
    return resource(
        "gcp:storage/bucketIAMMember:BucketIAMMember",
        name,
        {"bucket": "trainyard-dev-data", "role": role, "member": member},
    )


# ---- Kubernetes ----------------------------------------------------------------------------------

# How the stack's pods run (components/jobs/pod_security.py): the restricted profile, no API token.
CONTAINER_SECURITY = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
POD_SECURITY = {"runAsNonRoot": True, "runAsUser": 1000.0, "seccompProfile": {"type": "RuntimeDefault"}}


def contained(pod_spec: dict[str, Any]) -> dict[str, Any]:
    """A pod spec as the stack writes one: restricted security contexts and automountServiceAccountToken false."""
    spec = copy.deepcopy(pod_spec)
    spec.setdefault("securityContext", copy.deepcopy(POD_SECURITY))
    spec.setdefault("automountServiceAccountToken", False)
    for container in spec.get("containers", []) + spec.get("initContainers", []):
        container.setdefault("securityContext", copy.deepcopy(CONTAINER_SECURITY))
    return spec


def _kube(
    api_version: str, kind: str, name: str, spec: dict[str, Any], namespace: str | None = "trainyard", **metadata: Any
) -> dict[str, Any]:
    group_version = api_version if "/" in api_version else f"core/{api_version}"
    metadata = {"name": name, **({"namespace": namespace} if namespace else {}), **metadata}
    return resource(
        f"kubernetes:{group_version}:{kind}",
        name,
        {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec},
    )


def fsdp_job(name: str = "fsdp-finetune", nodes: float = 2.0) -> dict[str, Any]:
    """The torchrun Indexed Job on the DWS pool: queued by Kueue, suspended, skipAwait, GPU pods."""
    container = {
        "name": "trainer",
        "image": f"{REGISTRY}/fsdp:0123456789abcdef",
        "resources": {"limits": {"nvidia.com/gpu": "8"}, "requests": {"nvidia.com/gpu": "8"}},
    }
    return _kube(
        "batch/v1",
        "Job",
        name,
        {
            "completionMode": "Indexed",
            "parallelism": nodes,
            "completions": nodes,
            "suspend": True,
            "backoffLimit": 0.0,
            "template": {
                "metadata": {"annotations": {"kueue.x-k8s.io/podset-preferred-topology": BLOCK}},
                "spec": contained(
                    {
                        "restartPolicy": "Never",
                        "subdomain": name,
                        "nodeSelector": {"cloud.google.com/gke-nodepool": "gpu-nodepool-dws"},
                        "containers": [container],
                    }
                ),
            },
        },
        labels={QUEUE_LABEL: QUEUE, WORKLOAD_LABEL: name},
        annotations={"pulumi.com/skipAwait": "true", "provreq.kueue.x-k8s.io/maxRunDurationSeconds": "7200"},
    )


def _tpu_worker_group(replicas: float = 2.0, hosts: float = 4.0, chips: str = "4") -> dict[str, Any]:
    return {
        "groupName": "tpu-group",
        "replicas": replicas,
        "minReplicas": 1.0,
        "maxReplicas": replicas,
        "numOfHosts": hosts,
        "template": {
            "spec": contained(
                {
                    "nodeSelector": {
                        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                        "cloud.google.com/gke-tpu-topology": "4x4",
                    },
                    "containers": [
                        {
                            "name": "ray-worker",
                            "image": f"{REGISTRY}/maxtext:0123456789abcdef",
                            "env": copy.deepcopy(RAY_AUTH_ENV),
                            "resources": {"limits": {"google.com/tpu": chips}, "requests": {"google.com/tpu": chips}},
                        }
                    ],
                }
            )
        },
    }


def maxtext_rayjob(
    name: str = "maxtext", workers: int = 8, replicas: float = 2.0, hosts: float = 4.0
) -> dict[str, Any]:
    head = {
        "rayStartParams": {},
        "template": {
            "spec": contained(
                {
                    "containers": [
                        {
                            "name": "ray-head",
                            "image": f"{REGISTRY}/maxtext:0123456789abcdef",
                            "env": copy.deepcopy(RAY_AUTH_ENV),
                        }
                    ]
                }
            )
        },
    }
    return _kube(
        "ray.io/v1",
        "RayJob",
        name,
        {
            "entrypoint": f"python -m workloads.maxtext.train --num-workers={workers} --min-workers=4",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": {
                "authOptions": {"mode": "token"},
                "headGroupSpec": head,
                "workerGroupSpecs": [_tpu_worker_group(replicas, hosts)],
            },
        },
        labels={WORKLOAD_LABEL: name},
        annotations={"pulumi.com/skipAwait": "true"},
    )


def kueue_objects(gpu_quota: float = 80.0) -> list[dict[str, Any]]:
    """Kueue wiring for the DWS pool: Topology, flavor, ProvisioningRequestConfig, AdmissionCheck, queues."""
    levels = ["cloud.google.com/gce-topology-block", "cloud.google.com/gce-topology-host", "kubernetes.io/hostname"]
    return [
        _kube(
            "kueue.x-k8s.io/v1beta2",
            "Topology",
            "gke-default",
            {"levels": [{"nodeLabel": label} for label in levels]},
            namespace=None,
        ),
        _kube(
            "kueue.x-k8s.io/v1beta2",
            "ResourceFlavor",
            "dws-flavor",
            {"nodeLabels": {"cloud.google.com/gke-nodepool": "gpu-nodepool-dws"}, "topologyName": "gke-default"},
            namespace=None,
        ),
        _kube(
            "kueue.x-k8s.io/v1beta2",
            "ProvisioningRequestConfig",
            "dws-config",
            {"provisioningClassName": "queued-provisioning.gke.io", "managedResources": ["nvidia.com/gpu"]},
            namespace=None,
        ),
        _kube(
            "kueue.x-k8s.io/v1beta2",
            "AdmissionCheck",
            "dws-prov",
            {
                "controllerName": "kueue.x-k8s.io/provisioning-request",
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "dws-config"},
            },
            namespace=None,
        ),
        _kube(
            "kueue.x-k8s.io/v1beta2",
            "ClusterQueue",
            "dws-cluster-queue",
            {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu", "google.com/tpu"],
                        "flavors": [
                            {
                                "name": "dws-flavor",
                                "resources": [
                                    {"name": "nvidia.com/gpu", "nominalQuota": gpu_quota},
                                    {"name": "google.com/tpu", "nominalQuota": 0.0},
                                ],
                            }
                        ],
                    }
                ],
                "admissionChecksStrategy": {"admissionChecks": [{"name": "dws-prov", "onFlavors": ["dws-flavor"]}]},
            },
            namespace=None,
        ),
        _kube("kueue.x-k8s.io/v1beta2", "LocalQueue", QUEUE, {"clusterQueue": "dws-cluster-queue"}),
    ]


def default_deny(namespace: str = "trainyard") -> dict[str, Any]:
    """The workload namespace's default-deny NetworkPolicy (components/kube/network_policies.py)."""
    return _kube(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        "default-deny",
        {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
        namespace=namespace,
    )


def pod_admission(namespace: str = "trainyard") -> list[dict[str, Any]]:
    """The pods' ValidatingAdmissionPolicy and its Deny binding to the namespace (components/kube/pod_admission.py)."""
    api = "admissionregistration.k8s.io/v1"
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}]
    policy = {
        "matchConstraints": {"resourceRules": rules},
        "validations": [{"expression": "true", "message": "trainyard workloads"}],
    }
    binding = {
        "policyName": "trainyard-workload-pods",
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}},
    }
    return [
        _kube(api, "ValidatingAdmissionPolicy", "trainyard-workload-pods", policy, namespace=None),
        _kube(api, "ValidatingAdmissionPolicyBinding", "trainyard-workload-pods-binding", binding, namespace=None),
    ]


def good_stack() -> list[dict[str, Any]]:
    """A dev-like stack (2 x v6e-16, one A4 DWS pool, Kueue, MaxText RayJob, FSDP Job, the images' repository) that
    passes every rule."""
    return [
        network("trainyard-dev-dcn-1"),
        network("trainyard-dev-gvnic"),
        cluster(),
        system_pool(),
        tpu_slice_pool("v6e-16-0"),
        tpu_slice_pool("v6e-16-1"),
        dws_gpu_pool(),
        bucket(),
        bucket_member(),
        image_repository(),
        *kueue_objects(),
        default_deny(),
        *pod_admission(),
        fsdp_job(),
        maxtext_rayjob(),
    ]


def by_name(stack: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(item for item in stack if item["name"] == name)
