"""GPU node pools: A4 (8 x B200) on DWS flex-start with queued provisioning or another capacity mode, and A4X
(4 x GB200, arm64) on a reservation, one NVL72 domain by a workload policy, its RDMA NICs through managed DRANET.
What differs is read from the machine's record (components/facts/gpu_machines.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.config.models import GpuPoolConfig
from components.facts import gke, gpu_machines
from components.infra import node_pools


@dataclass(frozen=True)
class GpuPoolsArgs:
    pools: tuple[GpuPoolConfig, ...]
    placement: node_pools.PoolPlacement  # the gVNIC network, then the RDMA networks


class GpuPools(pulumi.ComponentResource):
    pools: dict[str, gcp.container.NodePool]

    def __init__(self, name: str, args: GpuPoolsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:infra:GpuPools", name, None, opts)
        self._placement = args.placement
        self.pools = {pool.name: self._pool(pool) for pool in args.pools}
        self.register_outputs({"pools": [pool.name for pool in self.pools.values()]})

    def _placement_policy(self, pool: GpuPoolConfig) -> gcp.container.NodePoolPlacementPolicyArgs | None:
        """Close VMs: fewer hops for NCCL, and on Spot the block labels Kueue's TAS places by; on a machine with an
        NVLink domain across VMs, that domain's workload policy."""
        domain = pool.machine.nvlink_domain_topology
        if domain:
            policy = node_pools.workload_policy(self, f"{pool.name}-nvlink", self._placement, pool.name, domain)
            return gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT", policy_name=policy.name)
        return gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT") if pool.compact else None

    def _network_config(self, machine: gpu_machines.GpuMachine) -> gcp.container.NodePoolNetworkConfigArgs | None:
        """The RDMA VPCs as additional node networks, or with DRANET none: GKE attaches the NICs itself."""
        if machine.dranet:
            return gcp.container.NodePoolNetworkConfigArgs(accelerator_network_profile=gke.ACCELERATOR_NETWORK_PROFILE)
        return node_pools.additional_networks(self._placement.node_networks)

    def _pool(self, pool: GpuPoolConfig) -> gcp.container.NodePool:
        placement, machine = self._placement, pool.machine
        flex_start = pool.capacity.flex_start
        queued = pool.capacity.queued
        return gcp.container.NodePool(
            pool.name,
            name=pool.name,
            cluster=placement.cluster.name,
            location=placement.zone,
            node_locations=[placement.zone],
            initial_node_count=pool.min_nodes,
            autoscaling=gcp.container.NodePoolAutoscalingArgs(
                total_min_node_count=pool.min_nodes,
                total_max_node_count=pool.max_nodes,
                location_policy="ANY" if flex_start else None,
            ),
            queued_provisioning=gcp.container.NodePoolQueuedProvisioningArgs(enabled=True) if queued else None,
            placement_policy=self._placement_policy(pool),
            management=node_pools.management(pool.capacity, placement.release_channel),
            network_config=self._network_config(machine),
            node_config=node_pools.node_config(
                machine.machine_type,
                placement.service_account,
                placement.hardening,
                pool.capacity,
                pool.reservation,
                # The machine's local SSDs hold ephemeral storage (emptyDirs: the model download, HF_HOME).
                ephemeral_storage_local_ssd_config=gcp.container.NodePoolNodeConfigEphemeralStorageLocalSsdConfigArgs(
                    local_ssd_count=machine.local_ssds
                )
                if machine.local_ssds
                else None,
                labels={gke.DRANET_LABEL: "true"} if machine.dranet else None,
                guest_accelerators=[
                    gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(
                        type=machine.accelerator,
                        count=machine.gpus_per_vm,
                        gpu_driver_installation_config=gcp.container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                            gpu_driver_version=pool.gpu_driver_version
                        ),
                    )
                ],
            ),
            opts=node_pools.pool_options(
                self,
                pool.capacity,
                [placement.identity_ready],
                workload_policy=machine.nvlink_domain_topology is not None,
            ),
        )
