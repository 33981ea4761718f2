"""GPUDirect RDMA for GPU pools: how the NICs reach pods, and the NCCL gIB installer.

A4 (`rdma: vpc`): a GKENetworkParamSet and Network per extra NIC; pods name these Networks in their
`networking.gke.io/interfaces` annotation (eth1 the gVNIC, eth2.. the RDMA NICs, in
`GpuMachine.additional_network_names` order). A4X (`rdma: dranet`): GKE's managed DRANET hands each pod the
machine's RDMA NICs through a ResourceClaimTemplate of the `mrdma.google.com` device class. The installer DaemonSet
(one per CPU architecture) copies the gIB plugin (not NCCL: each job brings its own,
`gpu_software.GIB.min_app_nccl` or newer) onto every GPU node, where jobs mount it from the host
(docs/cloud-facts.md: the A4 GPU software stack).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.config.models import GpuPoolConfig
from components.facts import gke
from components.facts.gpu_machines import GpuMachine
from components.facts.host_workloads import NCCL_INSTALLERS, PAUSE_USER, HostWorkload
from components.infra.network import Networks, NodeNetwork
from components.kube.dranet import claim_template

API_VERSION = f"{gke.NETWORKING_GROUP}/v1"


def gpu_machines(pools: tuple[GpuPoolConfig, ...]) -> list[GpuMachine]:
    """The distinct GPU machine types of the stack's pools, in config order."""
    return list({pool.machine_type: pool.machine for pool in pools}.values())


RDMA_CLAIM = "rdma"  # the pod's name for its DRANET NICs' claim


def claim_template_name(machine: GpuMachine) -> str:
    return f"rdma-{machine.accelerator}"


def pod_annotations(machine: GpuMachine) -> dict[str, str]:
    """eth0 stays the pod's default interface; the RDMA VPCs' NICs are named here, DRANET's come through claims."""
    annotations = {gke.DEFAULT_INTERFACE_ANNOTATION: "eth0"}
    if machine.additional_network_names:
        annotations[gke.INTERFACES_ANNOTATION] = pod_interfaces(machine)
    return annotations


def pod_claims(machine: GpuMachine) -> list[k8s.core.v1.PodResourceClaimArgs] | None:
    if not machine.dranet:
        return None
    return [
        k8s.core.v1.PodResourceClaimArgs(name=RDMA_CLAIM, resource_claim_template_name=claim_template_name(machine))
    ]


def container_claims(machine: GpuMachine) -> list[k8s.core.v1.ResourceClaimArgs] | None:
    return [k8s.core.v1.ResourceClaimArgs(name=RDMA_CLAIM)] if machine.dranet else None


def pod_interfaces(machine: GpuMachine) -> str:
    """The `networking.gke.io/interfaces` annotation: eth0 stays the pod network, then eth1.. in NIC order."""
    interfaces = [{"interfaceName": "eth0", "network": "default"}]
    interfaces += [
        {"interfaceName": f"eth{index + 1}", "network": network}
        for index, network in enumerate(machine.additional_network_names)
    ]
    return json.dumps(interfaces)


@dataclass(frozen=True)
class RdmaArgs:
    gpu_pools: tuple[GpuPoolConfig, ...]  # their machines' NICs, in attach order
    networks: Networks  # the gVNIC and RDMA VPCs the NICs sit on
    provider: k8s.Provider
    namespace: k8s.core.v1.Namespace  # where DRANET machines' claim templates live (the workloads')


class Rdma(pulumi.ComponentResource):
    """Created only when the stack has GPU pools; `ready` lists what RDMA pods depend on."""

    ready: list[pulumi.Resource]

    def __init__(self, name: str, args: RdmaArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:k8s:Rdma", name, None, opts)
        self._opts = pulumi.ResourceOptions(parent=self, provider=args.provider)
        networks, machines = args.networks, gpu_machines(args.gpu_pools)
        vpc_machines = [machine for machine in machines if not machine.dranet]
        attached = []
        if vpc_machines:
            machine = vpc_machines[0]
            attached = list(zip(machine.gvnic_network_names, networks.gvnic, strict=True))
            attached += list(zip(machine.rdma_network_names, networks.rdma, strict=True))
        self.ready = [
            resource
            for network_name, node_network in attached
            for resource in self._network(
                network_name, node_network, "RDMA" if network_name.startswith("rdma") else "NetDevice"
            )
        ]
        self.ready += [self._claim_template(machine, args.namespace) for machine in machines if machine.dranet]
        for arch in dict.fromkeys(machine.cpu_arch for machine in machines):
            accelerators = sorted({m.accelerator for m in machines if m.cpu_arch == arch})
            self.ready.append(self._installer(NCCL_INSTALLERS[arch], accelerators, arm=arch == "arm64"))
        self.register_outputs({"networks": [network_name for network_name, _ in attached]})

    def _claim_template(self, machine: GpuMachine, namespace: k8s.core.v1.Namespace) -> pulumi.Resource:
        """Every RDMA NIC of the VM for the one pod on it."""
        name = claim_template_name(machine)
        return claim_template(name, gke.GPU_DRANET_DEVICE_CLASS, machine.rdma_nics, namespace, self._opts)

    def _network(self, network_name: str, node_network: NodeNetwork, device_mode: str) -> list[pulumi.Resource]:
        params = k8s.apiextensions.CustomResource(
            f"gkenetworkparamset-{network_name}",
            api_version=API_VERSION,
            kind="GKENetworkParamSet",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=network_name),
            spec={
                "vpc": node_network.network.name,
                "vpcSubnet": node_network.subnetwork.name,
                "deviceMode": device_mode,
            },
            opts=self._opts,
        )
        network = k8s.apiextensions.CustomResource(
            f"network-{network_name}",
            api_version=API_VERSION,
            kind="Network",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=network_name),
            spec={
                "type": "Device",
                "parametersRef": {"group": gke.NETWORKING_GROUP, "kind": "GKENetworkParamSet", "name": network_name},
            },
            opts=pulumi.ResourceOptions.merge(self._opts, pulumi.ResourceOptions(depends_on=[params])),
        )
        return [params, network]

    def _installer(self, shape: HostWorkload, accelerators: list[str], arm: bool) -> k8s.apps.v1.DaemonSet:
        labels = {"k8s-app": shape.name}
        account = k8s.core.v1.ServiceAccount(
            shape.service_account,
            metadata=k8s.meta.v1.ObjectMetaArgs(name=shape.service_account, namespace=shape.namespace, labels=labels),
            automount_service_account_token=False,
            opts=self._opts,
        )
        install = (
            "set -ex\n/scripts/container_entry.sh install\n"
            "cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64\n"
            "cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib\n"
        )
        gib_image, pause_image = shape.images
        pod = k8s.core.v1.PodSpecArgs(
            priority_class_name="system-node-critical",
            # Its own account, bound to nothing, and no token: copying files calls no API.
            service_account_name=shape.service_account,
            automount_service_account_token=False,
            affinity=k8s.core.v1.AffinityArgs(
                node_affinity=k8s.core.v1.NodeAffinityArgs(
                    required_during_scheduling_ignored_during_execution=k8s.core.v1.NodeSelectorArgs(
                        node_selector_terms=[
                            k8s.core.v1.NodeSelectorTermArgs(
                                match_expressions=[
                                    k8s.core.v1.NodeSelectorRequirementArgs(
                                        key=gke.GPU_ACCELERATOR_LABEL, operator="In", values=accelerators
                                    )
                                ]
                            )
                        ]
                    )
                )
            ),
            tolerations=[k8s.core.v1.TolerationArgs(**toleration) for toleration in gke.gpu_node_tolerations(arm)],
            host_network="hostNetwork" in shape.host_namespaces,
            host_pid="hostPID" in shape.host_namespaces,
            volumes=[
                k8s.core.v1.VolumeArgs(
                    name=volume, host_path=k8s.core.v1.HostPathVolumeSourceArgs(path=path, type="DirectoryOrCreate")
                )
                for volume, path in shape.host_paths.items()
            ],
            init_containers=[
                k8s.core.v1.ContainerArgs(
                    name=shape.privileged_containers[0],
                    image=gib_image,
                    command=["/bin/sh", "-c"],
                    args=[install],
                    resources=k8s.core.v1.ResourceRequirementsArgs(requests={"cpu": "150m"}),
                    security_context=k8s.core.v1.SecurityContextArgs(privileged=True),
                    volume_mounts=[
                        k8s.core.v1.VolumeMountArgs(name=volume, mount_path=f"/usr/local{path}")
                        for volume, path in shape.host_paths.items()
                    ],
                )
            ],
            containers=[_pause_container(pause_image)],
        )
        return k8s.apps.v1.DaemonSet(
            shape.name,
            metadata=k8s.meta.v1.ObjectMetaArgs(name=shape.name, namespace=shape.namespace, labels=labels),
            spec=k8s.apps.v1.DaemonSetSpecArgs(
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=labels),
                update_strategy=k8s.apps.v1.DaemonSetUpdateStrategyArgs(type="RollingUpdate"),
                template=k8s.core.v1.PodTemplateSpecArgs(metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels), spec=pod),
            ),
            opts=pulumi.ResourceOptions.merge(self._opts, pulumi.ResourceOptions(depends_on=[account])),
        )


def _pause_container(image: str) -> k8s.core.v1.ContainerArgs:
    """The container that keeps the installer's pod running once its init container has copied the files: the
    restricted profile's settings, none of the host."""
    return k8s.core.v1.ContainerArgs(
        name="pause",
        image=image,
        resources=k8s.core.v1.ResourceRequirementsArgs(requests={"cpu": "10m", "memory": "16Mi"}),
        security_context=k8s.core.v1.SecurityContextArgs(
            run_as_user=PAUSE_USER,
            run_as_non_root=True,
            allow_privilege_escalation=False,
            read_only_root_filesystem=True,
            capabilities=k8s.core.v1.CapabilitiesArgs(drop=["ALL"]),
            seccomp_profile=k8s.core.v1.SeccompProfileArgs(type="RuntimeDefault"),
        ),
    )
