"""The workload namespace's NetworkPolicies, evaluated flow by flow with the Kubernetes NetworkPolicy rules:
a pod selected by a policy of a direction accepts only what one of those policies' rules allows (union),
a peer matches by pod labels in the policy's namespace, by namespace labels, by both, or by address."""

from __future__ import annotations

from dataclasses import dataclass, field
from ipaddress import ip_address, ip_network
from typing import Any

import pytest

from tests.helpers.plans import manifest

NAMESPACE = "trainyard"


@dataclass(frozen=True)
class Endpoint:
    namespace: str | None  # None: outside the cluster
    ip: str
    labels: dict[str, str] = field(default_factory=dict)


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.get("matchLabels", {}).items())


def peer_matches(peer: dict[str, Any], other: Endpoint) -> bool:
    if "ipBlock" in peer:
        block = peer["ipBlock"]
        address = ip_address(other.ip)
        inside = address in ip_network(block["cidr"])
        return inside and not any(address in ip_network(cidr) for cidr in block.get("except", []))
    if other.namespace is None:
        return False
    namespace_labels = {"kubernetes.io/metadata.name": other.namespace}
    if "namespaceSelector" in peer and not selects(peer["namespaceSelector"], namespace_labels):
        return False
    if "namespaceSelector" not in peer and other.namespace != NAMESPACE:
        return False
    return "podSelector" not in peer or selects(peer["podSelector"], other.labels)


def port_matches(ports: list[dict[str, Any]] | None, port: int, protocol: str) -> bool:
    return not ports or any(p["port"] == port and p.get("protocol", "TCP") == protocol for p in ports)


def allowed(policies: list[dict[str, Any]], direction: str, pod: Endpoint, other: Endpoint, port: int, proto: str):
    """Whether `pod` (in the namespace) may take (Ingress) or send (Egress) this connection from/to `other`."""
    key, peers = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
    selecting = [p for p in policies if direction in p["policyTypes"] and selects(p["podSelector"], pod.labels)]
    if not selecting:
        return True
    return any(
        (peers not in rule or any(peer_matches(peer, other) for peer in rule[peers]))
        and port_matches(rule.get("ports"), port, proto)
        for policy in selecting
        for rule in policy.get(key, [])
    )


def can_connect(policies, source: Endpoint, target: Endpoint, port: int, proto: str = "TCP") -> bool:
    out = source.namespace != NAMESPACE or allowed(policies, "Egress", source, target, port, proto)
    into = target.namespace != NAMESPACE or allowed(policies, "Ingress", target, source, port, proto)
    return out and into


HEAD = Endpoint(NAMESPACE, "10.64.0.10", {"ray.io/node-type": "head", "ray.io/cluster": "llama3-8b"})
WORKER = Endpoint(NAMESPACE, "10.64.1.10", {"ray.io/node-type": "worker", "ray.io/cluster": "llama3-8b"})
SUBMITTER = Endpoint(NAMESPACE, "10.64.2.10", {"ray.io/originated-from-crd": "RayJob"})
TRAINER_0 = Endpoint(NAMESPACE, "10.64.3.10", {"trainyard/workload": "llama31-70b-fsdp"})
TRAINER_1 = Endpoint(NAMESPACE, "10.64.4.10", {"trainyard/workload": "llama31-70b-fsdp"})
OTHER_TEAM = Endpoint("web", "10.64.5.10", {"app": "web"})
KONNECTIVITY = Endpoint("kube-system", "10.64.6.10", {"k8s-app": "konnectivity-agent"})
KUBE_DNS = Endpoint("kube-system", "10.64.7.10", {"k8s-app": "kube-dns"})
COLLECTOR = Endpoint("gmp-system", "10.64.8.10", {"app.kubernetes.io/name": "collector"})
NODE = Endpoint(None, "10.0.0.5")  # the dev stack's node range; not a pod of any namespace
METADATA_SERVER = Endpoint(None, "169.254.169.252")
HUGGING_FACE = Endpoint(None, "18.239.50.10")
GOOGLE_APIS = Endpoint(None, "199.36.153.8")  # private.googleapis.com: Private Google Access's public range
LEGACY_METADATA = Endpoint(None, "169.254.169.254")
OTHER_PRIVATE = {  # a peered VPC, an on-premises range, shared address space: none is a workload's business
    "10.200.0.5": Endpoint(None, "10.200.0.5"),
    "172.20.0.5": Endpoint(None, "172.20.0.5"),
    "192.168.50.5": Endpoint(None, "192.168.50.5"),
    "100.64.0.5": Endpoint(None, "100.64.0.5"),
}
SERVICE_ADDRESS = Endpoint(None, "10.65.0.10")  # the dev stack's Service range

FLOWS = [
    ("Ray worker to the head's GCS", WORKER, HEAD, 6379, "TCP", True),
    ("head to a worker's object manager", HEAD, WORKER, 12345, "TCP", True),
    ("RayJob submitter to the job API", SUBMITTER, HEAD, 8265, "TCP", True),
    ("the hosted operator's path to the job API", KONNECTIVITY, HEAD, 8265, "TCP", True),
    ("torchrun rendezvous", TRAINER_1, TRAINER_0, 29400, "TCP", True),
    ("NCCL socket bootstrap", TRAINER_0, TRAINER_1, 43210, "TCP", True),
    ("metrics scraping", COLLECTOR, WORKER, 8080, "TCP", True),
    ("DNS", TRAINER_0, KUBE_DNS, 53, "UDP", True),
    ("Workload Identity", TRAINER_0, METADATA_SERVER, 988, "TCP", True),
    ("a Hugging Face download", TRAINER_0, HUGGING_FACE, 443, "TCP", True),
    ("GCS through Private Google Access", TRAINER_0, GOOGLE_APIS, 443, "TCP", True),
    ("the metadata server's legacy port", WORKER, LEGACY_METADATA, 80, "TCP", True),
    ("a trainer to a node's kubelet", TRAINER_0, NODE, 10250, "TCP", False),
    ("a trainer to the control plane's private endpoint (node subnet)", TRAINER_0, NODE, 443, "TCP", False),
    ("a trainer to a Service address no pod selector covers", TRAINER_0, SERVICE_ADDRESS, 443, "TCP", False),
    ("a trainer to the link-local range beyond the metadata ports", TRAINER_0, LEGACY_METADATA, 8080, "TCP", False),
    *(
        (f"a trainer to a private address ({address})", TRAINER_0, endpoint, 443, "TCP", False)
        for address, endpoint in OTHER_PRIVATE.items()
    ),
    ("another namespace to the job API", OTHER_TEAM, HEAD, 8265, "TCP", False),
    ("a node (or a host-network pod) to the job API", NODE, HEAD, 8265, "TCP", False),
    ("another namespace to the Ray client port", OTHER_TEAM, HEAD, 10001, "TCP", False),
    ("another namespace to the head's GCS", OTHER_TEAM, HEAD, 6379, "TCP", False),
    ("another namespace to the rendezvous", OTHER_TEAM, TRAINER_0, 29400, "TCP", False),
    ("another namespace to a worker", OTHER_TEAM, WORKER, 8080, "TCP", False),
    ("a trainer to another namespace's pod", TRAINER_0, OTHER_TEAM, 8080, "TCP", False),
    ("a trainer to a kube-system pod other than DNS", TRAINER_0, KONNECTIVITY, 8132, "TCP", False),
]


@pytest.fixture(scope="module")
def policies(dev_plan):
    names = ("default-deny", "allow-within-namespace", "allow-ray-dashboard", "allow-metrics-scraping")
    found = [manifest(dev_plan, "NetworkPolicy", name) for name in (*names, "allow-egress-dns-metadata-outside")]
    assert all(policy["metadata"]["namespace"] == NAMESPACE for policy in found)
    return [policy["spec"] for policy in found]


@pytest.mark.parametrize(("label", "source", "target", "port", "proto", "expected"), FLOWS, ids=[f[0] for f in FLOWS])
def test_flow(policies, label, source, target, port, proto, expected):
    assert can_connect(policies, source, target, port, proto) is expected


def test_without_the_policies_every_flow_is_open():
    assert all(can_connect([], source, target, port, proto) for _, source, target, port, proto, _ in FLOWS)


def test_cluster_ranges_outside_private_space_are_refused_too():
    from ipaddress import IPv4Network

    from components.kube.network_policies import policy_specs

    public_pods = IPv4Network("34.118.0.0/20")  # a cluster on privately used public addresses
    specs = policy_specs(public_pods, (IPv4Network("34.118.16.0/20"),))
    pod = Endpoint(None, "34.118.3.4")
    assert not can_connect([specs["default-deny"], specs["allow-egress-dns-metadata-outside"]], TRAINER_0, pod, 443)
    assert can_connect(
        [specs["default-deny"], specs["allow-egress-dns-metadata-outside"]], TRAINER_0, HUGGING_FACE, 443
    )
