"""Kueue: the pinned release, and the queue objects derived from the pools (docs/cloud-facts.md: Kueue for DWS).

One ResourceFlavor per TPU slice group (its shape and capacity labels), per GPU pool (its node pool) and for
the system pool (Ray heads and other CPU pods); one ClusterQueue whose quotas are what those pools hold at
maximum scale; the `dws-prov` AdmissionCheck with its ProvisioningRequestConfig, applied only on the DWS
flavors; a LocalQueue in the workload namespace.

The release is Kueue's own manifests for the pinned tag, vendored and applied object by object
(components/kube/kueue_release.py), with trainyard's manager configuration and feature gates, and the controller
on the system pool. Every object built here is plain typed input, so preflight checks all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.config.jobs import KueueConfig
from components.config.models import StackConfig
from components.facts import cloud_rules, gke, node_shapes, nvidia_dra
from components.facts.gke import (
    DCN_NIC_RESOURCE,
    DRANET_DEVICE_CLASS,
    GPU_RESOURCE,
    NODE_POOL_LABEL,
    QUEUED_LABEL,
    TPU_RESOURCE,
)
from components.infra.cluster import SYSTEM_POOL_NAME
from components.kube.dranet import dcn_nic_count, nics_per_worker
from components.kube.kueue_release import KueueRelease, KueueReleaseArgs
from components.kube.nvidia_dra import nvlink_pools

API_VERSION = cloud_rules.KUEUE_API_VERSION
# The Kinds trainyard queues, as Kueue's integrations name them: FSDP and smoke Jobs, MaxText RayJobs, the
# standalone RayCluster. A Kind left out is not managed (its objects start without quota).
INTEGRATIONS = {"Job": "batch/job", "RayJob": "ray.io/rayjob", "RayCluster": "ray.io/raycluster"}
# Kueue's manager configuration: these top-level settings replace the release's own (its health, metrics, webhook
# and leader-election settings stay), restating its client rate limits and controller concurrency, and saying
# what trainyard relies on (docs/cloud-facts.md: Kueue
# requeues workloads whose pods are not ready): every pod of an admitted workload ready within 30 minutes (image
# pulls on new nodes), a lost pod replaced within 30 minutes (a DWS reclaim leaves replacement pods with no
# nodes), else the workload is evicted and requeued, without a limit (the count never resets, and a long
# fine-tune outlives several DWS windows), at its first place in the queue rather than behind later work.
# Kueue checks every resource a pod requests against the ClusterQueue (BlockUndeclared, its default): local SSD
# scratch (ephemeral-storage, the FSDP model cache) is left to the scheduler, which the placement check plays, and
# DRANET NICs are counted as DCN_NIC_RESOURCE, which the ClusterQueue covers (docs/cloud-facts.md: Kueue admits
# only what its ClusterQueue covers).
MANAGER_CONFIG = {
    "apiVersion": cloud_rules.KUEUE_CONFIG_API_VERSION,
    "kind": "Configuration",
    "clientConnection": {"qps": 300, "burst": 500},
    "controller": {
        "groupKindConcurrency": {
            "Job.batch": 5,
            "Pod": 5,
            "Workload.kueue.x-k8s.io": 10,
            "LocalQueue.kueue.x-k8s.io": 5,
            "ClusterQueue.kueue.x-k8s.io": 5,
            "ResourceFlavor.kueue.x-k8s.io": 1,
        }
    },
    "integrations": {"frameworks": list(INTEGRATIONS.values())},
    "resources": {
        "excludeResourcePrefixes": ["ephemeral-storage"],
        "deviceClassMappings": [{"name": DCN_NIC_RESOURCE, "deviceClassNames": [DRANET_DEVICE_CLASS]}],
    },
    "waitForPodsReady": {
        "timeout": "30m",
        "recoveryTimeout": "30m",
        "requeuingStrategy": {"timestamp": "Creation", "backoffBaseSeconds": 60, "backoffMaxSeconds": 3600},
    },
}


@dataclass(frozen=True)
class Flavor:
    """A ResourceFlavor and its quotas: what the nodes its labels select hold at maximum scale."""

    name: str
    node_labels: dict[str, str]
    nodes: int
    machine: node_shapes.MachineShape
    accelerator: str | None = None
    accelerators_per_node: int = 0
    nics_per_node: int = 0  # DRANET NICs its pods claim per node (DCN_NIC_RESOURCE)
    rdma_nics_per_node: int = 0  # DRANET RDMA NICs of a GPU node (RDMA_NIC_RESOURCE)
    nvlink_channels_per_node: int = 0  # IMEX channels its pods claim per node (nvidia_dra.CHANNEL_RESOURCE)
    dws: bool = False  # the ProvisioningRequest admission check runs for it
    flex_start: bool = False  # its nodes come from flex-start capacity (tried after on-demand when preferred)
    tolerations: list[dict[str, str]] = field(default_factory=list)
    topology: str | None = None  # the Topology Kueue places the flavor's pods by (Topology-Aware Scheduling)

    def quota(self, resource: str) -> int | str:
        if resource == "cpu":
            return str(self.nodes * self.machine.vcpus)
        if resource == "memory":
            return f"{self.nodes * self.machine.memory_gib}Gi"
        if resource == DCN_NIC_RESOURCE:
            return self.nodes * self.nics_per_node
        if resource == gke.RDMA_NIC_RESOURCE:
            return self.nodes * self.rdma_nics_per_node
        if resource == nvidia_dra.CHANNEL_RESOURCE:
            return self.nodes * self.nvlink_channels_per_node
        return self.nodes * self.accelerators_per_node if resource == self.accelerator else 0


def tpu_flavors(config: StackConfig) -> list[Flavor]:
    flavors = []
    for group in config.tpu_slices:
        tpu = group.slice
        labels = dict(group.node_selector)
        if group.capacity.node_label:
            labels[group.capacity.node_label] = "true"
        flavors.append(
            Flavor(
                name=group.name,
                node_labels=labels,
                nodes=group.count * tpu.vms,
                machine=node_shapes.machine_shape(tpu.machine_type),
                accelerator=TPU_RESOURCE,
                accelerators_per_node=tpu.chips_per_vm,
                flex_start=group.capacity.flex_start,
                nics_per_node=nics_per_worker(dcn_nic_count(config), group),
            )
        )
    return flavors


def gpu_flavors(config: StackConfig) -> list[Flavor]:
    flavors = []
    for pool in config.gpu_pools:
        queued = pool.capacity.queued
        taints = ((QUEUED_LABEL, "NoSchedule"),) if queued else ()
        if pool.machine.cpu_arch == "arm64":
            taints += ((gke.ARM64_TAINT[0], gke.ARM64_TAINT[2]),)
        flavors.append(
            Flavor(
                name=pool.name,
                node_labels={NODE_POOL_LABEL: pool.name},
                nodes=pool.max_nodes,
                machine=node_shapes.machine_shape(pool.machine_type),
                accelerator=GPU_RESOURCE,
                accelerators_per_node=pool.machine.gpus_per_vm,
                dws=queued,
                flex_start=pool.capacity.flex_start,
                tolerations=[{"key": key, "operator": "Exists", "effect": effect} for key, effect in taints],
                topology=gke.TAS_TOPOLOGY if pool.places_by_topology else None,
                rdma_nics_per_node=pool.machine.rdma_nics if pool.machine.dranet else 0,
                nvlink_channels_per_node=1 if pool.machine.nvlink_domain_vms else 0,
            )
        )
    return flavors


def system_flavor(config: StackConfig) -> Flavor:
    pool = config.cluster.system_pool
    return Flavor(
        SYSTEM_POOL_NAME,
        {NODE_POOL_LABEL: SYSTEM_POOL_NAME},
        pool.max_nodes,
        node_shapes.machine_shape(pool.machine_type),
    )


def ordered_flavors(config: StackConfig) -> list[Flavor]:
    """The order Kueue tries them in: CPU pods on the system pool; on-demand before flex-start when preferred."""
    accelerated = tpu_flavors(config) + gpu_flavors(config)
    if config.kueue.prefer_on_demand:
        accelerated.sort(key=lambda flavor: flavor.flex_start)  # stable: config order within each kind
    return [system_flavor(config), *accelerated]


def covered_resources(config: StackConfig) -> list[str]:
    """One resource group: a resource may sit in only one, and CPU pods must fit any flavor's cpu/memory."""
    resources = ["cpu", "memory"]
    if config.tpu_slices:
        resources.append(TPU_RESOURCE)
    if config.gpu_pools:
        resources.append(GPU_RESOURCE)
    if config.multislice:
        resources.append(DCN_NIC_RESOURCE)
    if any(pool.machine.dranet for pool in config.gpu_pools):
        resources.append(gke.RDMA_NIC_RESOURCE)
    if nvlink_pools(config.gpu_pools):
        resources.append(nvidia_dra.CHANNEL_RESOURCE)
    return resources


def manager_config(flavors: list[Flavor]) -> dict:
    """MANAGER_CONFIG, with the GPU DRANET NICs mapped to RDMA_NIC_RESOURCE and the IMEX channels to
    CHANNEL_RESOURCE when some flavor's pods claim them."""
    mappings = list(MANAGER_CONFIG["resources"]["deviceClassMappings"])
    if any(flavor.rdma_nics_per_node for flavor in flavors):
        mappings.append({"name": gke.RDMA_NIC_RESOURCE, "deviceClassNames": [gke.GPU_DRANET_DEVICE_CLASS]})
    if any(flavor.nvlink_channels_per_node for flavor in flavors):
        mappings.append({"name": nvidia_dra.CHANNEL_RESOURCE, "deviceClassNames": [nvidia_dra.CHANNEL_DEVICE_CLASS]})
    if mappings == MANAGER_CONFIG["resources"]["deviceClassMappings"]:
        return MANAGER_CONFIG
    return {**MANAGER_CONFIG, "resources": {**MANAGER_CONFIG["resources"], "deviceClassMappings": mappings}}


def managed_resources(flavors: list[Flavor]) -> list[str]:
    return sorted({flavor.accelerator for flavor in flavors if flavor.dws and flavor.accelerator})


def cluster_queue_spec(kueue: KueueConfig, flavors: list[Flavor], resources: list[str]) -> dict:
    spec: dict = {
        "namespaceSelector": {},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [
            {
                "coveredResources": resources,
                "flavors": [
                    {"name": f.name, "resources": [{"name": r, "nominalQuota": f.quota(r)} for r in resources]}
                    for f in flavors
                ],
            }
        ],
    }
    dws = [flavor.name for flavor in flavors if flavor.dws]
    if dws:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": kueue.admission_check, "onFlavors": dws}]}
    if kueue.cohort:
        spec["cohortName"] = kueue.cohort
    return spec


@dataclass(frozen=True)
class KueueArgs:
    kueue: KueueConfig  # the release, its queues and admission check
    flavors: list[Flavor]  # in the order Kueue tries them
    covered_resources: list[str]
    elastic_jobs: bool  # some MaxText job is elastic: the release's workload-slices gate is stated
    provider: k8s.Provider
    workload_namespace: k8s.core.v1.Namespace


class Kueue(pulumi.ComponentResource):
    """`queue_name` is the LocalQueue workloads label themselves with; `ready` what they depend on."""

    queue_name: str
    ready: list[pulumi.Resource]

    def __init__(self, name: str, args: KueueArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:k8s:Kueue", name, None, opts)
        self._args = args
        kueue, provider, workload_namespace, flavors = args.kueue, args.provider, args.workload_namespace, args.flavors
        release = self._release() if kueue.install else []
        crs = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=release)
        topologies = self._topologies(flavors, crs)
        flavor_opts = pulumi.ResourceOptions.merge(crs, pulumi.ResourceOptions(depends_on=topologies))
        objects = [*topologies, *(self._flavor(flavor, flavor_opts) for flavor in flavors)]
        objects += self._admission_check(flavors, crs)
        spec = cluster_queue_spec(kueue, flavors, args.covered_resources)
        cluster_queue = self._custom("ClusterQueue", kueue.cluster_queue, spec, crs)
        local_queue = self._custom(
            "LocalQueue",
            kueue.local_queue,
            {"clusterQueue": kueue.cluster_queue},
            pulumi.ResourceOptions.merge(crs, pulumi.ResourceOptions(depends_on=[workload_namespace, cluster_queue])),
            namespace=workload_namespace.metadata.name,
        )
        self.queue_name = kueue.local_queue
        self.ready = [*objects, cluster_queue, local_queue]
        self.register_outputs({"clusterQueue": kueue.cluster_queue, "localQueue": kueue.local_queue})

    def _release(self) -> list[pulumi.Resource]:
        kueue = self._args.kueue
        gates = {"ElasticJobsViaWorkloadSlices": True} if self._args.elastic_jobs else {}
        release = KueueRelease(
            "kueue",
            KueueReleaseArgs(
                version=kueue.version,
                namespace=kueue.namespace,
                manager_config=manager_config(self._args.flavors),
                feature_gates=gates,
                node_selector={NODE_POOL_LABEL: SYSTEM_POOL_NAME},
                provider=self._args.provider,
            ),
            pulumi.ResourceOptions(parent=self),
        )
        return release.resources

    def _topologies(self, flavors: list[Flavor], opts: pulumi.ResourceOptions) -> list[pulumi.Resource]:
        """GKE's block / sub-block / host / node levels, when a flavor places by them. A ClusterQueue whose TAS
        flavor names a missing Topology admits nothing, so the flavors wait for it."""
        names = sorted({flavor.topology for flavor in flavors if flavor.topology})
        return [
            self._custom("Topology", name, {"levels": [{"nodeLabel": label} for label in gke.TAS_LEVELS]}, opts)
            for name in names
        ]

    def _flavor(self, flavor: Flavor, opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
        spec: dict = {"nodeLabels": flavor.node_labels}
        if flavor.topology:
            spec["topologyName"] = flavor.topology
        if flavor.tolerations:
            spec["tolerations"] = flavor.tolerations
        return self._custom("ResourceFlavor", flavor.name, spec, opts)

    def _admission_check(self, flavors: list[Flavor], opts: pulumi.ResourceOptions) -> list[pulumi.Resource]:
        managed = managed_resources(flavors)
        if not managed:
            return []
        name = self._args.kueue.admission_check
        request_config = self._custom(
            "ProvisioningRequestConfig",
            name,
            {"provisioningClassName": gke.QUEUED_PROVISIONING_CLASS, "managedResources": managed},
            opts,
        )
        check = self._custom(
            "AdmissionCheck",
            name,
            {
                "controllerName": gke.PROVISIONING_REQUEST_CONTROLLER,
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": name},
            },
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[request_config])),
        )
        return [request_config, check]

    def _custom(
        self, kind: str, name: str, spec: dict, opts: pulumi.ResourceOptions, namespace: pulumi.Input[str] | None = None
    ) -> k8s.apiextensions.CustomResource:
        return k8s.apiextensions.CustomResource(
            f"{kind.lower()}-{name}",
            api_version=API_VERSION,
            kind=kind,
            metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace=namespace),
            spec=spec,
            opts=opts,
        )
