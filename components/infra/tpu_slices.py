"""TPU slices: one node pool per slice, sized and placed from the slice's topology facts.

A multi-host slice is placed as one unit: by a compact placement policy naming its topology (v6e), or, for a
generation GKE places by workload policy (TPU7x), by a HIGH_THROUGHPUT workload policy whose accelerator topology is
the slice's, one per group (docs/cloud-facts.md: TPU7x workload policies).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.config.models import TpuSliceConfig
from components.facts import gke
from components.infra import node_pools


@dataclass(frozen=True)
class TpuSlicesArgs:
    groups: tuple[TpuSliceConfig, ...]
    placement: node_pools.PoolPlacement  # the DCN networks attached


class TpuSlices(pulumi.ComponentResource):
    pools: dict[str, gcp.container.NodePool]

    def __init__(self, name: str, args: TpuSlicesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:infra:TpuSlices", name, None, opts)
        self._placement = args.placement
        self.workload_policies = {
            group.name: node_pools.workload_policy(
                self, f"{group.name}-workload-policy", args.placement, group.name, group.topology
            )
            for group in args.groups
            if group.slice.workload_policy
        }
        self.pools = {
            pool_name: self._slice_pool(pool_name, group) for group in args.groups for pool_name in group.pool_names
        }
        self.register_outputs({"pools": [pool.name for pool in self.pools.values()]})

    def _placement_policy(self, group: TpuSliceConfig) -> gcp.container.NodePoolPlacementPolicyArgs | None:
        tpu = group.slice
        if not tpu.multi_host:
            return None  # GKE refuses a topology or policy on a single-host pool (AI-Hypercomputer/xpk PR #825)
        policy = self.workload_policies.get(group.name)
        return gcp.container.NodePoolPlacementPolicyArgs(
            type="COMPACT", tpu_topology=tpu.topology, policy_name=policy.name if policy else None
        )

    def _slice_pool(self, pool_name: str, group: TpuSliceConfig) -> gcp.container.NodePool:
        placement, tpu = self._placement, group.slice
        flex_start = group.capacity.flex_start
        return gcp.container.NodePool(
            pool_name,
            name=pool_name,
            cluster=placement.cluster.name,
            location=placement.zone,
            node_locations=[placement.zone],
            # A slice is all of its VMs or nothing: fixed size, or (flex-start) 0 until a workload asks.
            node_count=None if flex_start else tpu.vms,
            initial_node_count=0 if flex_start else None,
            autoscaling=gcp.container.NodePoolAutoscalingArgs(min_node_count=0, max_node_count=tpu.vms)
            if flex_start
            else None,
            placement_policy=self._placement_policy(group),
            management=node_pools.management(group.capacity, placement.release_channel),
            network_config=node_pools.additional_networks(placement.node_networks),
            node_config=node_pools.node_config(
                tpu.machine_type,
                placement.service_account,
                placement.hardening,
                group.capacity,
                group.reservation,
                labels={gke.DRANET_LABEL: "true", gke.SLICE_GROUP_LABEL: group.name},
                advanced_machine_features=gcp.container.NodePoolNodeConfigAdvancedMachineFeaturesArgs(
                    threads_per_core=1
                ),
            ),
            opts=node_pools.pool_options(
                self, group.capacity, [placement.identity_ready], workload_policy=tpu.workload_policy
            ),
        )
