"""VPCs for accelerators: the primary VPC (with Cloud NAT for private nodes), TPU DCN VPCs, and the A4 gVNIC and
RDMA VPCs (MTU from config)."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

import pulumi
import pulumi_gcp as gcp

from components.config.models import NetworkConfig
from components.facts.hardening import FLOW_LOG_INTERVAL, FLOW_LOG_METADATA
from components.infra.fixed_names import fixed_name_options

POD_RANGE_NAME = "pods"
SERVICE_RANGE_NAME = "services"


@dataclass(frozen=True)
class NodeNetwork:
    """A VPC and subnet a node pool attaches as an additional node network."""

    network: gcp.compute.Network
    subnetwork: gcp.compute.Subnetwork


@dataclass(frozen=True)
class NetworksArgs:
    project: str
    region: str
    zone: str
    prefix: str  # of every network, subnet and firewall rule: the cluster's name
    network: NetworkConfig  # ranges and MTU
    private_nodes: bool  # Cloud NAT for the nodes' egress
    dcn: bool  # multislice TPU groups: a DCN VPC per dcnRange
    gpu: bool  # A4 pools: the gVNIC and RDMA VPCs


class Networks(pulumi.ComponentResource):
    """Every VPC the stack needs; DCN, gVNIC and RDMA VPCs only when the configured pools use them."""

    primary: gcp.compute.Network
    primary_subnet: gcp.compute.Subnetwork
    dcn: list[NodeNetwork]
    gvnic: list[NodeNetwork]
    rdma: list[NodeNetwork]
    nat: gcp.compute.RouterNat | None

    def __init__(self, name: str, args: NetworksArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:infra:Networks", name, None, opts)
        self._args = args
        self._prefix = args.prefix
        self.primary = self._vpc(f"{self._prefix}-primary")
        self.primary_subnet = self._subnet(
            f"{self._prefix}-primary",
            self.primary,
            args.network.node_range,
            # Private nodes reach Google APIs (Artifact Registry, GCS, logging) without NAT; GKE turns this on
            # for private nodes anyway, so stating it keeps previews free of drift.
            private_ip_google_access=True,
            secondary_ip_ranges=[
                gcp.compute.SubnetworkSecondaryIpRangeArgs(
                    range_name=POD_RANGE_NAME, ip_cidr_range=str(args.network.pod_range)
                ),
                gcp.compute.SubnetworkSecondaryIpRangeArgs(
                    range_name=SERVICE_RANGE_NAME, ip_cidr_range=str(args.network.service_range)
                ),
            ],
        )
        self.nat = self._nat() if args.private_nodes else None
        self.dcn = self._dcn_networks() if args.dcn else []
        self.gvnic = self._gvnic_networks() if args.gpu else []
        self.rdma = self._rdma_networks() if args.gpu else []
        self.register_outputs(
            {
                "primary": self.primary.name,
                "dcn": [node_network.network.name for node_network in self.dcn],
                "gvnic": [node_network.network.name for node_network in self.gvnic],
                "rdma": [node_network.network.name for node_network in self.rdma],
            }
        )

    def _vpc(self, name: str, **extra: object) -> gcp.compute.Network:
        return gcp.compute.Network(
            name,
            name=name,
            auto_create_subnetworks=False,
            mtu=self._args.network.mtu,
            opts=fixed_name_options(self),
            **extra,
        )

    def _subnet(
        self, name: str, network: gcp.compute.Network, cidr: IPv4Network, flow_logs: bool = True, **extra: object
    ) -> gcp.compute.Subnetwork:
        return gcp.compute.Subnetwork(
            name,
            name=name,
            network=network.id,
            region=self._args.region,
            ip_cidr_range=str(cidr),
            log_config=self._flow_logs() if flow_logs else None,
            opts=fixed_name_options(self),
            **extra,
        )

    def _flow_logs(self) -> gcp.compute.SubnetworkLogConfigArgs | None:
        sampling = self._args.network.flow_log_sampling
        if sampling is None:
            return None
        return gcp.compute.SubnetworkLogConfigArgs(
            aggregation_interval=FLOW_LOG_INTERVAL, flow_sampling=sampling, metadata=FLOW_LOG_METADATA
        )

    def _nat(self) -> gcp.compute.RouterNat:
        """Egress for nodes without public addresses: images outside Google (registry.k8s.io, Docker Hub),
        Hugging Face, PyPI. Only the primary VPC needs it; the accelerator VPCs carry node-to-node traffic."""
        router = gcp.compute.Router(
            f"{self._prefix}-router",
            name=f"{self._prefix}-router",
            network=self.primary.id,
            region=self._args.region,
            opts=fixed_name_options(self),
        )
        return gcp.compute.RouterNat(
            f"{self._prefix}-nat",
            name=f"{self._prefix}-nat",
            router=router.name,
            region=self._args.region,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
            log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter=self._args.network.nat_logs),
            opts=fixed_name_options(self),
        )

    def _node_network(self, name: str, cidr: IPv4Network, **vpc_extra: object) -> NodeNetwork:
        network = self._vpc(f"{name}-net", **vpc_extra)
        return NodeNetwork(network, self._subnet(f"{name}-sub", network, cidr))

    def _dcn_networks(self) -> list[NodeNetwork]:
        """Cross-slice traffic (MEGASCALE) leaves the TPU VMs on these two extra NICs, attached through DRANET."""
        networks = []
        for index, cidr in enumerate(self._args.network.dcn_ranges):
            name = f"{self._prefix}-dcn-{index + 1}"
            networks.append(self._node_network(name, cidr))
            self._internal_firewall(name, networks[-1], cidr)
        return networks

    def _gvnic_networks(self) -> list[NodeNetwork]:
        name = f"{self._prefix}-gvnic-1"
        node_network = self._node_network(name, self._args.network.gvnic_range)
        self._internal_firewall(name, node_network, self._args.network.gvnic_range)
        return [node_network]

    def _internal_firewall(self, name: str, node_network: NodeNetwork, cidr: IPv4Network) -> gcp.compute.Firewall:
        """Ingress from the network's own subnet. A new VPC denies all ingress (GCP's implied rule) and GKE adds
        no rules for additional node networks, so without this the nodes' extra NICs could not reach each
        other (docs/cloud-facts.md: firewalls). Not for the RDMA VPC: RoCE VPCs refuse VPC firewall rules."""
        return gcp.compute.Firewall(
            f"{name}-internal",
            name=f"{name}-internal",
            network=node_network.network.id,
            source_ranges=[str(cidr)],
            allows=[
                gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["0-65535"]),
                gcp.compute.FirewallAllowArgs(protocol="udp", ports=["0-65535"]),
                gcp.compute.FirewallAllowArgs(protocol="icmp"),
            ],
            opts=fixed_name_options(self),
        )

    def _rdma_networks(self) -> list[NodeNetwork]:
        """One RoCE VPC whose zonal network profile gives RDMA NICs; one subnet per NIC. No flow logs: RDMA goes
        from NIC to NIC past the VPC's virtual network, which is what flow logs sample (docs/cloud-facts.md)."""
        profile = f"projects/{self._args.project}/global/networkProfiles/{self._args.zone}-vpc-roce"
        network = self._vpc(f"{self._prefix}-rdma-net", network_profile=profile)
        return [
            NodeNetwork(network, self._subnet(f"{self._prefix}-rdma-sub-{index}", network, cidr, flow_logs=False))
            for index, cidr in enumerate(self._args.network.rdma_ranges)
        ]
