"""GPUDirect RDMA for A4 pools: a GKENetworkParamSet and Network per extra NIC, and the NCCL gIB installer.

Pods name these Networks in their `networking.gke.io/interfaces` annotation (eth1 the gVNIC, eth2.. the RDMA
NICs, in `GpuMachine.additional_network_names` order); the installer DaemonSet copies the gIB plugin (not NCCL:
each job brings its own, `gpu_software.GIB.min_app_nccl` or newer) onto every A4 node, where jobs mount it from the
host (docs/cloud-facts.md: the A4 GPU software stack).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.config.models import GpuPoolConfig
from components.facts import gke, topology
from components.facts.host_workloads import NCCL_INSTALLER, PAUSE_USER
from components.infra.network import Networks, NodeNetwork

API_VERSION = f"{gke.NETWORKING_GROUP}/v1"


def gpu_machines(pools: tuple[GpuPoolConfig, ...]) -> list[topology.GpuMachine]:
    """The distinct GPU machine types of the stack's pools, in config order."""
    return list({pool.machine_type: pool.machine for pool in pools}.values())


def pod_interfaces(machine: topology.GpuMachine) -> str:
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


class Rdma(pulumi.ComponentResource):
    """Created only when the stack has GPU pools; `ready` lists what RDMA pods depend on."""

    ready: list[pulumi.Resource]

    def __init__(self, name: str, args: RdmaArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:k8s:Rdma", name, None, opts)
        self._opts = pulumi.ResourceOptions(parent=self, provider=args.provider)
        networks, machines = args.networks, gpu_machines(args.gpu_pools)
        machine = machines[0]
        attached = list(zip(machine.gvnic_network_names, networks.gvnic, strict=True))
        attached += list(zip(machine.rdma_network_names, networks.rdma, strict=True))
        self.ready = [
            resource
            for network_name, node_network in attached
            for resource in self._network(
                network_name, node_network, "RDMA" if network_name.startswith("rdma") else "NetDevice"
            )
        ]
        self.ready.append(self._installer(sorted({m.accelerator for m in machines})))
        self.register_outputs({"networks": [network_name for network_name, _ in attached]})

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

    def _installer(self, accelerators: list[str]) -> k8s.apps.v1.DaemonSet:
        shape = NCCL_INSTALLER
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
            # Only the taints A4 pools carry (GPU, and queued provisioning on DWS pools), not every taint there is.
            tolerations=[
                k8s.core.v1.TolerationArgs(key=key, operator="Exists", effect=effect)
                for key, _, effect in (gke.GPU_TAINT, gke.QUEUED_TAINT)
            ],
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
                    name=shape.privileged_container,
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
