"""A4 (8 x B200) node pools: DWS flex-start with queued provisioning, or another capacity mode."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.config.models import GpuPoolConfig
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
            # Close VMs: fewer hops for NCCL, and on Spot the block labels Kueue's TAS places by.
            placement_policy=gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT") if pool.compact else None,
            management=node_pools.management(pool.capacity, placement.release_channel),
            network_config=node_pools.additional_networks(placement.node_networks),
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
            opts=node_pools.pool_options(self, pool.capacity, [placement.identity_ready]),
        )
