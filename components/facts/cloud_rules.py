"""The GCP, GKE and Kueue rules a stack config can break, as data: one entry per rule, each with its public source.

`components/config/cloud_checks.py` enforces every rule at config load (one line naming the key, the value and what is
allowed; exit 2), `docs/cloud-facts.md` lists them with the same sources ("Rules a config can break"), and
`tests/components/config/test_cloud_rules.py` holds a config that breaks each one and one that keeps it.
Each rule's `limit` is the number or set the check compares with; `allowed` is what a message says is allowed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import Any


@dataclass(frozen=True)
class CloudRule:
    id: str
    limit: Any
    allowed: str
    source: str


SUBNET_RESERVED_ADDRESSES = CloudRule(
    id="subnet-reserved-addresses",
    limit=4,  # the network and gateway addresses, the second-to-last (reserved) and the broadcast address
    allowed="a node range with room for every node the pools can reach, plus the 4 addresses GCP keeps",
    source="https://cloud.google.com/vpc/docs/subnets#unusable-ip-addresses-in-every-subnet",
)
POD_RANGE_PER_NODE = CloudRule(
    id="pod-range-per-node",
    limit=256,  # GKE gives each node a /24 of the pod range at the default 110 pods per node
    allowed="a pod range of 256 addresses per node the pools can reach",
    source="https://cloud.google.com/kubernetes-engine/docs/concepts/alias-ips#cluster_sizing_secondary_range_pods",
)
CIDR_NEEDS_PREFIX = CloudRule(
    id="cidr-needs-prefix",
    limit="/",
    allowed="a range with its prefix length, such as 10.0.0.0/20 (a bare address would be read as one address, /32)",
    source="https://cloud.google.com/vpc/docs/subnets#valid-ranges (subnet ranges are CIDR blocks)",
)
PROHIBITED_SUBNET_RANGES = CloudRule(
    id="prohibited-subnet-ranges",
    limit=tuple(
        IPv4Network(cidr)
        for cidr in ("0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "255.255.255.255/32")
    ),
    allowed="a private range such as 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16, outside 0.0.0.0/8, "
    "127.0.0.0/8 (loopback), 169.254.0.0/16 (link-local), 224.0.0.0/4 (multicast) and 255.255.255.255/32",
    source="https://cloud.google.com/vpc/docs/subnets#prohibited-ipv4-ranges",
)
NODES_PER_POOL_ZONE = CloudRule(
    id="nodes-per-pool-zone",
    limit=1000,
    allowed="at most 1,000 nodes per node pool in a zone",
    source="https://cloud.google.com/kubernetes-engine/quotas (Limits per cluster: Nodes per node pool zone)",
)
NODES_PER_CLUSTER = CloudRule(
    id="nodes-per-cluster",
    limit=15_000,
    allowed="at most 15,000 nodes in a GKE Standard cluster, every pool at its maximum together",
    source="https://cloud.google.com/kubernetes-engine/quotas (Limits per cluster: Nodes per cluster)",
)
MULTISLICE_MULTI_HOST = CloudRule(
    id="multislice-multi-host",
    limit=2,  # VMs per slice
    allowed="count 1, or a multi-host topology (2 or more VMs per slice)",
    source="https://cloud.google.com/kubernetes-engine/docs/how-to/tpu-multislice (Multislice availability in GKE: "
    "only multi-host TPU slice node pools)",
)
FLEX_START_MAX_RUN_SECONDS = CloudRule(
    id="flex-start-max-run",
    limit=7 * 24 * 3600,
    allowed="at most 604800 seconds (seven days) on a flex-start pool",
    source="https://cloud.google.com/kubernetes-engine/docs/concepts/dws, "
    "https://cloud.google.com/compute/docs/instances/about-flex-start-vms; GoogleCloudPlatform/cluster-toolkit, "
    "community/modules/compute/schedmd-slurm-gcp-v6-nodeset/variables.tf (dws_flex.max_run_duration <= 604800)",
)
AUTHORIZED_NETWORKS_MAX = CloudRule(
    id="authorized-networks-max",
    limit={"public": 50, "private": 100},  # keyed by whether the nodes are private
    allowed="at most 50 ranges on a cluster with public nodes, 100 with private nodes",
    source="https://cloud.google.com/kubernetes-engine/docs/how-to/authorized-networks (Limitations)",
)
KUEUE_V1BETA2_RELEASE = CloudRule(
    id="kueue-v1beta2-release",
    limit=(0, 15, 0),
    allowed="Kueue v0.15.0 or newer, the first release to serve it and config.kueue.x-k8s.io/v1beta2",
    source="https://github.com/kubernetes-sigs/kueue: apis/kueue/v1beta2 and apis/config/v1beta2 first appear at "
    "tag v0.15.0 (absent at v0.14.0)",
)
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
KUEUE_CONFIG_API_VERSION = f"config.{KUEUE_API_VERSION}"
MANAGED_NAMESPACES = CloudRule(
    id="managed-namespaces",
    limit={
        "names": ("default", "kube-system", "kube-public", "kube-node-lease", "gmp-system", "gmp-public"),
        "prefixes": ("kube-", "gke-"),
    },
    allowed="a namespace of the stack's own: not default, kube-*, gke-* (GKE's own, such as gke-gmp-system and "
    "gke-managed-*), gmp-system or gmp-public (Managed Service for Prometheus)",
    source="https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/#initial-namespaces, "
    "https://cloud.google.com/stackdriver/docs/managed-prometheus/setup-managed",
)
DEFAULT_SERVICE_ACCOUNT = CloudRule(
    id="default-service-account",
    limit="default",
    allowed="a service account of the stack's own: Kubernetes makes one named default in every namespace, so "
    "creating default again fails (AlreadyExists)",
    source="https://kubernetes.io/docs/concepts/security/service-accounts/#default-service-accounts",
)
BUCKET_MULTI_REGIONS = {"US": "us-", "EU": "europe-", "ASIA": "asia-"}
BUCKET_DUAL_REGIONS = {
    "ASIA1": ("asia-northeast1", "asia-northeast2"),
    "EUR4": ("europe-north1", "europe-west4"),
    "EUR5": ("europe-west1", "europe-west2"),
    "EUR7": ("europe-west2", "europe-west3"),
    "EUR8": ("europe-west3", "europe-west6"),
    "NAM4": ("us-central1", "us-east1"),
}
BUCKET_LOCATION_HOLDS_REGION = CloudRule(
    id="bucket-location-holds-region",
    limit={"multi-regions": BUCKET_MULTI_REGIONS, "dual-regions": BUCKET_DUAL_REGIONS},
    allowed="the cluster's region, the multi-region of its continent (US, EU, ASIA) or a predefined dual-region "
    "that includes it",
    source="https://cloud.google.com/storage/docs/locations",
)
BUCKET_WITHOUT_DOTS = CloudRule(
    id="bucket-without-dots",
    limit=".",
    allowed="a name without dots (a dotted name needs its domain verified by the bucket's creator)",
    source="https://cloud.google.com/storage/docs/buckets#naming, "
    "https://cloud.google.com/storage/docs/domain-name-verification",
)
RESERVATION_NAME = CloudRule(
    id="reservation-name",
    limit=re.compile(r"^(projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/reservations/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"),
    allowed="a reservation name (1 to 63 lowercase letters, digits and '-', starting with a letter, not ending "
    "with '-'), or projects/PROJECT/reservations/NAME for a shared one",
    source="https://cloud.google.com/compute/docs/naming-resources; GoogleCloudPlatform/cluster-toolkit, "
    "modules/compute/vm-instance/variables.tf (reservation_name)",
)

RULES: tuple[CloudRule, ...] = (
    SUBNET_RESERVED_ADDRESSES,
    POD_RANGE_PER_NODE,
    CIDR_NEEDS_PREFIX,
    PROHIBITED_SUBNET_RANGES,
    NODES_PER_POOL_ZONE,
    NODES_PER_CLUSTER,
    MULTISLICE_MULTI_HOST,
    FLEX_START_MAX_RUN_SECONDS,
    AUTHORIZED_NETWORKS_MAX,
    KUEUE_V1BETA2_RELEASE,
    MANAGED_NAMESPACES,
    DEFAULT_SERVICE_ACCOUNT,
    BUCKET_LOCATION_HOLDS_REGION,
    BUCKET_WITHOUT_DOTS,
    RESERVATION_NAME,
)


def prohibited_range(cidr: IPv4Network) -> IPv4Network | None:
    """The prohibited range `cidr` overlaps, or None."""
    return next((bad for bad in PROHIBITED_SUBNET_RANGES.limit if cidr.overlaps(bad)), None)


def managed_namespace(namespace: str) -> bool:
    names, prefixes = MANAGED_NAMESPACES.limit["names"], MANAGED_NAMESPACES.limit["prefixes"]
    return namespace in names or namespace.startswith(prefixes)


def bucket_location_holds(location: str, region: str) -> bool:
    """The bucket's data lives in `region`: the region itself, its continent's multi-region, or a dual-region."""
    location, region = location.upper(), region.lower()
    if location == region.upper():
        return True
    if location in BUCKET_MULTI_REGIONS:
        return region.startswith(BUCKET_MULTI_REGIONS[location])
    return region in BUCKET_DUAL_REGIONS.get(location, ())


def release_tuple(tag: str) -> tuple[int, int, int]:
    """`v0.19.2` as (0, 19, 2); the config's pattern has made sure of the shape."""
    major, minor, patch = tag.removeprefix("v").split(".")
    return int(major), int(minor), int(patch)
