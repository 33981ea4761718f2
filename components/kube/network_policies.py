"""NetworkPolicies of the workloads' namespace: deny by default, then the flows the trainers need.

Dataplane V2 enforces them (docs/cloud-facts.md: network policies). What stays open, and why:
- every flow between the namespace's own pods: Ray's head and workers (GCS, object manager, worker ports are
  dynamic), the RayJob submitter reaching the head, JAX's multislice coordinator, torchrun's rendezvous (29400)
  and NCCL's socket bootstrap. The accelerator NICs (DCN, RDMA) are extra networks no NetworkPolicy governs.
- the Ray head's dashboard port (8265, the job API, token-authenticated: components/jobs/ray_workloads.py) from
  the namespace's own pods (the RayJob submitter) and from kube-system's: GKE hosts the KubeRay operator outside
  the nodes, and a hosted control plane reaches pods through the Konnectivity agents in kube-system (KubeRay's
  dashboard client can go through the API server's proxy: ray-operator v1.6.2, `--use-kubernetes-proxy`).
- scraping from Managed Service for Prometheus (`gmp-system`), which collects the Ray metrics.
- egress to kube-dns, to the GKE metadata server (Workload Identity) and to public addresses: Hugging Face, PyPI
  and Google APIs (GCS FUSE, also through Private Google Access, whose ranges are public) have no fixed addresses.
  Egress to private and cluster addresses is refused: RFC 1918, shared (100.64/10) and link-local space, and the
  cluster's node, pod and Service ranges (the nodes' kubelets, the control plane's private endpoint in the node
  subnet, other namespaces' pods); the namespace's own pods stay reachable through allow-within-namespace (Service
  addresses are translated to pods before the policy applies).
Everything else from other namespaces (Ray's client port 10001 and GCS 6379, the rendezvous) is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network, collapse_addresses
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.facts.gke import KUBE_SYSTEM_NAMESPACE, NAMESPACE_NAME_LABEL, RAY_HEAD_PORTS, RAY_NODE_TYPE_LABEL

GMP_NAMESPACE = "gmp-system"
CONTROL_PLANE_PROXY_NAMESPACE = KUBE_SYSTEM_NAMESPACE  # GKE's Konnectivity agents: the hosted control plane's way in
KUBE_DNS = {
    "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: KUBE_SYSTEM_NAMESPACE}},
    "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
}
# The GKE metadata server, which Workload Identity goes through: GKE's network policy page lists both.
METADATA_SERVER = (("169.254.169.252/32", 988), ("169.254.169.254/32", 80))
# Addresses no workload needs beyond its own namespace, DNS and the metadata server: RFC 1918, shared address
# space (RFC 6598, which GKE may use for pods) and link-local (the metadata server, allowed above by port).
PRIVATE_RANGES = tuple(IPv4Network(cidr) for cidr in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"))
LINK_LOCAL = IPv4Network("169.254.0.0/16")


def tcp(port: int) -> dict[str, Any]:
    return {"protocol": "TCP", "port": port}


def refused_ranges(cluster_ranges: Sequence[IPv4Network]) -> list[str]:
    """The private and cluster ranges egress may not reach, merged where one holds another."""
    return [str(cidr) for cidr in collapse_addresses([*PRIVATE_RANGES, LINK_LOCAL, *cluster_ranges])]


def policy_specs(pod_range: IPv4Network, cluster_ranges: Sequence[IPv4Network] = ()) -> dict[str, dict[str, Any]]:
    """NetworkPolicy name -> spec, as Kubernetes JSON; `cluster_ranges`: the node and Service ranges."""
    everyone_here = {"podSelector": {}}
    dns_ports = [{"protocol": "UDP", "port": 53}, tcp(53)]
    outside_pods = {"ipBlock": {"cidr": "0.0.0.0/0", "except": refused_ranges([pod_range, *cluster_ranges])}}
    return {
        "default-deny": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
        "allow-within-namespace": {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [everyone_here]}],
            "egress": [{"to": [everyone_here]}],
        },
        "allow-ray-dashboard": {
            "podSelector": {"matchLabels": {RAY_NODE_TYPE_LABEL: "head"}},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [
                        everyone_here,
                        {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: CONTROL_PLANE_PROXY_NAMESPACE}}},
                    ],
                    "ports": [tcp(RAY_HEAD_PORTS["dashboard"])],
                }
            ],
        },
        "allow-metrics-scraping": {
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: GMP_NAMESPACE}}}]}],
        },
        "allow-egress-dns-metadata-outside": {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [
                {"to": [KUBE_DNS], "ports": dns_ports},
                *({"to": [{"ipBlock": {"cidr": cidr}}], "ports": [tcp(port)]} for cidr, port in METADATA_SERVER),
                {"to": [outside_pods]},
            ],
        },
    }


@dataclass(frozen=True)
class WorkloadNetworkPoliciesArgs:
    pod_range: IPv4Network  # the cluster's pods
    namespace: k8s.core.v1.Namespace
    provider: k8s.Provider
    cluster_ranges: tuple[IPv4Network, ...] = ()  # the node and Service ranges: refused to egress, as the pods'


class WorkloadNetworkPolicies(pulumi.ComponentResource):
    def __init__(self, name: str, args: WorkloadNetworkPoliciesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:k8s:WorkloadNetworkPolicies", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        specs = policy_specs(args.pod_range, args.cluster_ranges)
        self.policies = [
            k8s.networking.v1.NetworkPolicy(
                f"networkpolicy-{policy}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=policy, namespace=args.namespace.metadata.name),
                spec=spec,
                opts=child,
            )
            for policy, spec in specs.items()
        ]
        self.register_outputs({"policies": list(specs)})
