"""DRANET for TPU multislice: the ResourceClaimTemplate that hands each Ray TPU worker its DCN NICs.

GKE managed DRANET exposes the node's extra NICs through the `netdev.google.com` device class; a worker
claiming one NIC per DCN network gets them as eth1, eth2.. in its pod, which is where MEGASCALE traffic
must go (`--megascale_grpc_interface_prefixes`, from `megascale_interface_prefixes`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.config.models import StackConfig, TpuSliceConfig
from components.facts import gke

CLAIM_NAME = "netdev"  # the pod's name for the claim


def dcn_nic_count(config: StackConfig) -> int:
    """One NIC per DCN VPC the slices attach (network.dcnRanges)."""
    return len(config.network.dcn_ranges)


def nics_per_worker(dcn_nics: int, group: TpuSliceConfig) -> int:
    """The DCN NICs each TPU worker of `group` claims: one per DCN VPC (`dcn_nics`) when the group spans slices."""
    return dcn_nics if group.count > 1 else 0


def megascale_interface_prefixes(dcn_nics: int) -> list[str]:
    """The claimed NICs (eth1..ethN) and loopback: where libtpu may open its cross-slice gRPC channels."""
    return [f"eth{index + 1}" for index in range(dcn_nics)] + ["lo"]


def claim_template(
    name: str, device_class: str, count: int, namespace: k8s.core.v1.Namespace, opts: pulumi.ResourceOptions
) -> k8s.resource.v1.ResourceClaimTemplate:
    """`count` devices of `device_class` for each pod that names the template."""
    return k8s.resource.v1.ResourceClaimTemplate(
        name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace=namespace.metadata.name),
        spec=k8s.resource.v1.ResourceClaimTemplateSpecArgs(
            spec=k8s.resource.v1.ResourceClaimSpecArgs(
                devices=k8s.resource.v1.DeviceClaimArgs(
                    requests=[
                        k8s.resource.v1.DeviceRequestArgs(
                            name="req-netdev",
                            exactly=k8s.resource.v1.ExactDeviceRequestArgs(
                                device_class_name=device_class, allocation_mode="ExactCount", count=count
                            ),
                        )
                    ]
                )
            )
        ),
        opts=opts,
    )


@dataclass(frozen=True)
class DranetArgs:
    nics_per_worker: int  # one per DCN VPC
    namespace: k8s.core.v1.Namespace
    provider: k8s.Provider


class Dranet(pulumi.ComponentResource):
    """`template_name` is what pods put in `resourceClaims[].resourceClaimTemplateName`."""

    template: k8s.resource.v1.ResourceClaimTemplate
    template_name: str

    def __init__(self, name: str, args: DranetArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:k8s:Dranet", name, None, opts)
        count = args.nics_per_worker
        self.template_name = f"dcn-netdev-{count}"
        self.template = claim_template(
            self.template_name,
            gke.DRANET_DEVICE_CLASS,
            count,
            args.namespace,
            pulumi.ResourceOptions(parent=self, provider=args.provider),
        )
        self.register_outputs({"template": self.template_name})
