"""The whole stack: networks, cluster, accelerator pools and storage, wired from one StackConfig."""

from __future__ import annotations

import pulumi

from components.config.models import StackConfig
from components.facts.gke import NODE_POOL_LABEL
from components.infra.cluster import SYSTEM_POOL_NAME, Cluster, ClusterArgs
from components.infra.gpu_pools import GpuPools, GpuPoolsArgs
from components.infra.images import TrainerImages, TrainerImagesArgs
from components.infra.network import Networks, NetworksArgs, NodeNetwork
from components.infra.node_identity import NodeIdentities, NodeIdentitiesArgs
from components.infra.node_pools import NodeHardening, PoolPlacement
from components.infra.storage import Storage, StorageArgs
from components.infra.tpu_slices import TpuSlices, TpuSlicesArgs
from components.jobs.ray_workloads import RayWorkloads, RayWorkloadsArgs
from components.jobs.smoke_workloads import SmokeWorkloads, SmokeWorkloadsArgs
from components.jobs.torch_workloads import TorchWorkloads, TorchWorkloadsArgs
from components.kube.dranet import Dranet, DranetArgs, dcn_nic_count
from components.kube.kueue import Kueue, KueueArgs, covered_resources, ordered_flavors
from components.kube.network_policies import WorkloadNetworkPolicies, WorkloadNetworkPoliciesArgs
from components.kube.nvidia_dra import NvidiaDraDriver, NvidiaDraDriverArgs, nvlink_pools
from components.kube.pod_admission import WorkloadPodAdmission, WorkloadPodAdmissionArgs
from components.kube.rdma import Rdma, RdmaArgs
from components.kube.workload_code import WorkloadCode, WorkloadCodeArgs
from components.kube.workload_namespace import WorkloadNamespace, WorkloadNamespaceArgs
from components.kube.workload_target import WorkloadTarget


class TrainyardStack(pulumi.ComponentResource):
    def __init__(self, name: str, config: StackConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:infra:Stack", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        networks = NetworksArgs(
            config.project,
            config.region,
            config.zone,
            prefix=config.cluster.name,
            network=config.network,
            private_nodes=config.cluster.private_nodes,
            dcn=config.multislice,
            gpu=config.rdma_vpcs,
        )
        self.networks = Networks("networks", networks, child)
        identities = NodeIdentitiesArgs(
            config.project, config.cluster.name, tpu=bool(config.tpu_slices), gpu=bool(config.gpu_pools)
        )
        self.node_identities = NodeIdentities("node-identities", identities, child)
        cluster = ClusterArgs(config.project, config.zone, config.cluster, self.networks, self.node_identities)
        self.cluster = Cluster("cluster", cluster, child)
        tpu_slices = TpuSlicesArgs(config.tpu_slices, self._placement(config, "tpu", self.networks.dcn))
        self.tpu_slices = TpuSlices("tpu-slices", tpu_slices, child)
        # The gVNIC NIC first (eth1), then the RDMA NICs (eth2..): the order pods' interfaces follow.
        gpu_networks = self.networks.gvnic + self.networks.rdma
        self.gpu_pools = GpuPools(
            "gpu-pools", GpuPoolsArgs(config.gpu_pools, self._placement(config, "gpu", gpu_networks)), child
        )
        storage = config.storage
        self.storage = Storage(
            "storage",
            StorageArgs(
                config.project,
                config.bucket_name,
                config.bucket_location,
                delete_with_stack=storage.delete_with_stack,
                adopt=storage.adopt,
                namespace=storage.namespace,
                service_account=storage.service_account,
                soft_delete_days=storage.soft_delete_days,
                data_access_logs=storage.data_access_logs,
            ),
            child,
        )
        namespace = WorkloadNamespaceArgs(
            storage.namespace, storage.service_account, self.cluster.provider, former_parent=self.storage
        )
        self.workload_namespace = WorkloadNamespace("workload-namespace", namespace, child)
        policies = WorkloadNetworkPoliciesArgs(
            config.network.pod_range,
            self.workload_namespace.namespace,
            self.cluster.provider,
            cluster_ranges=(config.network.node_range, config.network.service_range),
        )
        self.network_policies = WorkloadNetworkPolicies("network-policies", policies, child)
        pod_admission = WorkloadPodAdmissionArgs(storage.namespace, self.cluster.provider)
        self.pod_admission = WorkloadPodAdmission("pod-admission", pod_admission, child)
        kueue = KueueArgs(
            config.kueue,
            ordered_flavors(config),
            covered_resources(config),
            elastic_jobs=any(job.elastic for job in config.jobs.enabled_maxtext),
            provider=self.cluster.provider,
            workload_namespace=self.workload_namespace.namespace,
        )
        self.kueue = Kueue("kueue", kueue, child)
        rdma = RdmaArgs(config.gpu_pools, self.networks, self.cluster.provider, self.workload_namespace.namespace)
        self.rdma = Rdma("rdma", rdma, child) if config.gpu_pools else None
        driver = NvidiaDraDriverArgs(
            nvlink_pools(config.gpu_pools), {NODE_POOL_LABEL: SYSTEM_POOL_NAME}, self.cluster.provider
        )
        self.nvidia_dra = NvidiaDraDriver("nvidia-dra-driver", driver, child) if driver.pools else None
        self._workloads(config, child)
        self.credentials_command = pulumi.Output.concat(
            "gcloud container clusters get-credentials ",
            self.cluster.cluster.name,
            f" --location {config.zone} --project {config.project} --dns-endpoint",
        )
        self.register_outputs(self.outputs())

    def _placement(self, config: StackConfig, role: str, node_networks: list[NodeNetwork]) -> PoolPlacement:
        identities = self.node_identities
        return PoolPlacement(
            config.zone,
            config.region,
            config.cluster.name,
            self.cluster.cluster,
            node_networks,
            identities.email.get(role),
            identities.ready.get(role),
            release_channel=config.cluster.in_release_channel,
            hardening=NodeHardening.of(config.cluster),
        )

    def _workloads(self, config: StackConfig, child: pulumi.ResourceOptions) -> None:
        jobs, provider, namespace = config.jobs, self.cluster.provider, self.workload_namespace.namespace
        runs_ray = bool(jobs.enabled_maxtext or (jobs.ray.enabled and config.tpu_slices))
        runs_fsdp_image = bool(jobs.enabled_fsdp) or config.nccl_smoke_on_trainer_image
        trainers = (("maxtext",) if runs_ray else ()) + (("fsdp",) if runs_fsdp_image else ())
        readers = self.node_identities.members
        images = TrainerImagesArgs(
            config.project,
            config.region,
            config.stack,
            config.images,
            trainers,
            readers,
            platforms={"fsdp": config.fsdp_platforms},
        )
        self.images = TrainerImages("images", images, child) if trainers else None
        # Each trainer's own code, so a change to one touches only its jobs; the standalone RayCluster has none.
        with_code = (("maxtext",) if jobs.enabled_maxtext else ()) + (("fsdp",) if jobs.enabled_fsdp else ())
        self.code = {
            trainer: WorkloadCode(f"workload-code-{trainer}", WorkloadCodeArgs(trainer, namespace, provider), child)
            for trainer in with_code
        }
        dranet = DranetArgs(dcn_nic_count(config), namespace, provider)
        self.dranet = Dranet("dranet", dranet, child) if config.multislice else None
        # Every workload pod is created after the admission policy that holds it to the pack's pod rules.
        admitted = (*self.kueue.ready, self.pod_admission.binding)
        queued = WorkloadTarget(provider, namespace, self.kueue.queue_name, admitted)
        with_rdma = queued.after(*self.rdma.ready) if self.rdma else queued
        if self.nvidia_dra:  # a ComputeDomain needs the driver's CRD, and its controller to make the claim template
            with_rdma = with_rdma.after(*self.nvidia_dra.resources)
        self.ray = None
        # Jobs wait for the pools they run on (and go before them on a destroy or a pool's replacement).
        if runs_ray:
            target = queued.after(self.workload_namespace.service_account, *self.tpu_slices.pools.values())
            ray = RayWorkloadsArgs(
                jobs.ray,
                cluster_groups=config.tpu_slices if jobs.ray.enabled else (),
                jobs=tuple((job, config.slice_group(job.slices)) for job in jobs.enabled_maxtext),
                bucket_name=config.bucket_name,
                service_account=config.storage.service_account,
                dcn_nics=dcn_nic_count(config),
                target=target,
                image=self.images.refs["maxtext"],
                code=self.code.get("maxtext"),
                dranet=self.dranet,
            )
            self.ray = RayWorkloads("ray", ray, child)
        self.torch = None
        if jobs.enabled_fsdp:
            target = with_rdma.after(self.workload_namespace.service_account, *self.gpu_pools.pools.values())
            torch = TorchWorkloadsArgs(
                tuple((job, config.gpu_pool(job.pool)) for job in jobs.enabled_fsdp),
                bucket_name=config.bucket_name,
                service_account=config.storage.service_account,
                target=target,
                image=self.images.refs["fsdp"],
                code=self.code["fsdp"],
            )
            self.torch = TorchWorkloads("torch", torch, child)
        self.smoke = None
        if jobs.smoke.enabled:
            on_trainer_image = config.nccl_smoke_on_trainer_image
            smoke = SmokeWorkloadsArgs(
                jobs.smoke,
                config.tpu_slices,
                config.gpu_pools,
                nccl_image=self.images.refs["fsdp"] if on_trainer_image else jobs.smoke.nccl_image,
                on_trainer_image=on_trainer_image,
                target=with_rdma,
            )
            self.smoke = SmokeWorkloads("smoke", smoke, child)

    def outputs(self) -> dict[str, object]:
        return {
            "clusterName": self.cluster.cluster.name,
            "clusterEndpoint": self.cluster.cluster.endpoint,
            "clusterDnsEndpoint": self.cluster.dns_endpoint,
            "kubeconfig": self.cluster.kubeconfig,
            "bucket": self.storage.bucket.name,
            "tpuPools": [pool.name for pool in self.tpu_slices.pools.values()],
            "gpuPools": [pool.name for pool in self.gpu_pools.pools.values()],
            "getCredentials": self.credentials_command,
        }
