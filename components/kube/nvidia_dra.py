"""Multi-node NVLink (components/facts/nvidia_dra.py): NVIDIA's DRA driver, object by object, and a job's
ComputeDomain with the claims its pods make on the domain's IMEX channel."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.config.models import GpuPoolConfig
from components.facts import gke, nvidia_dra
from components.kube import rdma
from components.kube.manifests import apply_in_stages


def nvlink_pools(pools: tuple[GpuPoolConfig, ...]) -> tuple[GpuPoolConfig, ...]:
    """The pools whose VMs share an NVLink domain (A4X), where a job spanning VMs needs a ComputeDomain."""
    return tuple(pool for pool in pools if pool.machine.nvlink_domain_vms)


def spans_nvlink_domain(pool: GpuPoolConfig, nodes: int) -> bool:
    return bool(pool.machine.nvlink_domain_vms) and nodes > 1


def pod_claims(pool: GpuPoolConfig, job: str, nodes: int) -> list[k8s.core.v1.PodResourceClaimArgs] | None:
    """What a GPU job's pod claims: its VM's DRANET RDMA NICs, and its domain's IMEX channel when it spans VMs of
    an NVLink domain."""
    claims = list(rdma.pod_claims(pool.machine) or [])
    if spans_nvlink_domain(pool, nodes):
        template = nvidia_dra.channel_template_name(job)
        claims.append(
            k8s.core.v1.PodResourceClaimArgs(name=nvidia_dra.CHANNEL_CLAIM, resource_claim_template_name=template)
        )
    return claims or None


def container_claims(pool: GpuPoolConfig, nodes: int) -> list[k8s.core.v1.ResourceClaimArgs] | None:
    claims = list(rdma.container_claims(pool.machine) or [])
    if spans_nvlink_domain(pool, nodes):
        claims.append(k8s.core.v1.ResourceClaimArgs(name=nvidia_dra.CHANNEL_CLAIM))
    return claims or None


def compute_domains(
    pool: GpuPoolConfig, job: str, nodes: int, namespace: pulumi.Input[str], opts: pulumi.ResourceOptions
) -> list[k8s.apiextensions.CustomResource]:
    """The job's ComputeDomain where it spans VMs of an NVLink domain (none otherwise): one per job across its
    revisions (its spec never changes, see `nvidia_dra.compute_domain_spec`); should it ever change, the API refuses
    an update, so it is replaced."""
    if not spans_nvlink_domain(pool, nodes):
        return []
    domain = k8s.apiextensions.CustomResource(
        f"compute-domain-{job}",
        api_version=nvidia_dra.COMPUTE_DOMAIN_API_VERSION,
        kind=nvidia_dra.COMPUTE_DOMAIN_KIND,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=nvidia_dra.compute_domain_name(job), namespace=namespace),
        spec=nvidia_dra.compute_domain_spec(job),
        opts=pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(replace_on_changes=["spec"], delete_before_replace=True)
        ),
    )
    return [domain]


@dataclass(frozen=True)
class NvidiaDraDriverArgs:
    pools: tuple[GpuPoolConfig, ...]  # the NVL72 pools the kubelet plugin runs on
    controller_node_selector: dict[str, str]  # the system pool
    provider: k8s.Provider


class NvidiaDraDriver(pulumi.ComponentResource):
    """`resources`: every object of the driver, for what must wait for it (a ComputeDomain needs its CRD)."""

    resources: list[pulumi.Resource]

    def __init__(self, name: str, args: NvidiaDraDriverArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:k8s:NvidiaDraDriver", name, None, opts)
        machines = {pool.machine.accelerator: pool.machine for pool in args.pools}
        arm = any(machine.cpu_arch == "arm64" for machine in machines.values())
        tolerations = gke.gpu_node_tolerations(arm)
        objects = nvidia_dra.configured_driver(args.controller_node_selector, list(machines), tolerations)

        def options(_: dict[str, Any], earlier: list[pulumi.Resource]) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=earlier)

        self.resources = apply_in_stages(objects, options)
        self.register_outputs({"version": nvidia_dra.VERSION, "objects": len(self.resources)})
