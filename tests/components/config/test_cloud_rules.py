"""Every rule of components/facts/cloud_rules.py: a config that breaks it is refused with the key, the value and
what is allowed; a config next to it that keeps it loads; and docs/cloud-facts.md lists it with its source."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from components.config.load import ConfigError, load_stack_config
from components.facts import cloud_rules
from tests.helpers.plans import as_engine_config, dev_config_values

DOCS = Path(__file__).resolve().parents[3] / "docs" / "cloud-facts.md"


def load(values):
    return load_stack_config(as_engine_config(values), "dev")


def _set(*path_and_value):
    *path, value = path_and_value

    def edit(values):
        target = values
        for key in path[:-1]:
            target = target.setdefault(key, {}) if isinstance(key, str) else target[key]
        target[path[-1]] = value

    return edit


def _edits(*edits):
    def edit(values):
        for one in edits:
            one(values)

    return edit


def _networks(count):
    return [{"name": f"office-{i}", "cidr": f"203.0.{i}.0/24"} for i in range(count)]


def _public_endpoint(count, private_nodes=True):
    return _edits(
        _set("trainyard:cluster", "publicEndpoint", True),
        _set("trainyard:cluster", "privateNodes", private_nodes),
        _set("trainyard:cluster", "authorizedNetworks", _networks(count)),
    )


def _reservation(name):
    return _edits(
        _set("trainyard:tpuSlices", 0, "capacity", "reservation"), _set("trainyard:tpuSlices", 0, "reservation", name)
    )


BIG_POD_RANGE = _set("trainyard:network", "podRange", "10.128.0.0/10")  # room for 16,384 nodes, overlapping nothing
BIG_GPU_SUBNETS = _edits(  # a gVNIC and 8 RDMA subnets of 1,020 nodes each
    _set("trainyard:network", "gvnicRange", "172.16.0.0/22"),
    _set("trainyard:network", "rdmaRanges", [f"172.16.{4 * (i + 1)}.0/22" for i in range(8)]),
)
BIG_RANGES = _edits(BIG_POD_RANGE, _set("trainyard:network", "nodeRange", "10.0.0.0/18"))  # and 16,380 node addresses

# (rule id, edit that breaks it, key in the message, value as shown, words of the message)
FIRES = [
    (
        "subnet-reserved-addresses",
        _set("trainyard:network", "nodeRange", "10.0.0.0/28"),
        "trainyard:network.nodeRange",
        '"10.0.0.0/28"',
        "holds 12 nodes (GCP keeps 4 addresses of every subnet) but the pools can reach 23 (allowed: /27 or larger)",
    ),
    (
        "subnet-reserved-addresses",
        _set("trainyard:network", "dcnRanges", ["10.50.0.0/29", "10.60.0.0/16"]),
        "trainyard:network.dcnRanges[0]",
        '"10.50.0.0/29"',
        "holds 4 nodes (GCP keeps 4 addresses of every subnet) but the TPU VMs can reach 8 (allowed: /28 or larger)",
    ),
    (
        "subnet-reserved-addresses",
        _edits(
            _set("trainyard:network", "gvnicRange", "192.168.0.0/28"), _set("trainyard:gpuPools", 0, "maxNodes", 13)
        ),
        "trainyard:network.gvnicRange",
        '"192.168.0.0/28"',
        "holds 12 nodes (GCP keeps 4 addresses of every subnet) but the GPU nodes can reach 13 (allowed: /27 or",
    ),
    (
        "subnet-reserved-addresses",
        _set("trainyard:network", "rdmaRanges", [f"192.168.{i}.0/29" for i in range(1, 9)]),
        "trainyard:network.rdmaRanges[7]",
        '"192.168.8.0/29"',
        "holds 4 nodes (GCP keeps 4 addresses of every subnet) but the GPU nodes can reach 10 (allowed: /28 or larger)",
    ),
    (
        "pod-range-per-node",
        _set("trainyard:network", "podRange", "10.64.0.0/24"),
        "trainyard:network.podRange",
        '"10.64.0.0/24"',
        "holds 1 nodes but the pools can reach 23 (allowed: /19 or larger)",
    ),
    (
        "cidr-needs-prefix",
        _set("trainyard:network", "nodeRange", "10.0.0.0"),
        "trainyard:network.nodeRange",
        '"10.0.0.0"',
        "has no prefix length; allowed: a range with its prefix length, such as 10.0.0.0/20",
    ),
    (
        "cidr-needs-prefix",
        _edits(
            _public_endpoint(1), _set("trainyard:cluster", "authorizedNetworks", [{"name": "vpn", "cidr": "1.2.3.4"}])
        ),
        "trainyard:cluster.authorizedNetworks[0].cidr",
        '"1.2.3.4"',
        "has no prefix length",
    ),
    (
        "prohibited-subnet-ranges",
        _set("trainyard:network", "gvnicRange", "169.254.10.0/24"),
        "trainyard:network.gvnicRange",
        '"169.254.10.0/24"',
        "overlaps 169.254.0.0/16, which GCP refuses in a subnet (allowed: a private range",
    ),
    (
        "prohibited-subnet-ranges",
        _set("trainyard:network", "serviceRange", "224.1.0.0/19"),
        "trainyard:network.serviceRange",
        '"224.1.0.0/19"',
        "overlaps 224.0.0.0/4, which GCP refuses in a subnet",
    ),
    (
        "prohibited-subnet-ranges",
        _set("trainyard:network", "dcnRanges", ["127.1.0.0/16", "10.60.0.0/16"]),
        "trainyard:network.dcnRanges[0]",
        '"127.1.0.0/16"',
        "overlaps 127.0.0.0/8",
    ),
    (
        "prohibited-subnet-ranges",
        _set("trainyard:network", "rdmaRanges", [f"0.0.{i}.0/24" for i in range(8)]),
        "trainyard:network.rdmaRanges[0]",
        '"0.0.0.0/24"',
        "overlaps 0.0.0.0/8",
    ),
    (
        "nodes-per-pool-zone",
        _edits(BIG_POD_RANGE, _set("trainyard:gpuPools", 0, "maxNodes", 1001)),
        "trainyard:gpuPools[0].maxNodes",
        "1001",
        "is over GKE's limit of 1,000 nodes per pool in a zone (allowed: 1 to 1000)",
    ),
    (
        "nodes-per-pool-zone",
        _edits(BIG_POD_RANGE, _set("trainyard:cluster", "systemPool", "maxNodes", 1500)),
        "trainyard:cluster.systemPool.maxNodes",
        "1500",
        "is over GKE's limit of 1,000 nodes per pool",
    ),
    (
        "nodes-per-cluster",
        _edits(BIG_RANGES, _set("trainyard:tpuSlices", 0, "count", 3747)),
        "trainyard:tpuSlices[0].count",
        "3747",
        "makes a cluster of 15,003 nodes, over GKE's limit of 15,000 (allowed: at most 15,000 nodes in a GKE Standard",
    ),
    (
        "nodes-per-cluster",
        _set("trainyard:tpuSlices", 0, "count", 10**9),
        "trainyard:tpuSlices[0].count",
        "1000000000",
        "makes a cluster of 4,000,000,015 nodes, over GKE's limit of 15,000",
    ),
    (
        "multislice-multi-host",
        _set("trainyard:tpuSlices", 0, "topology", "2x2"),
        "trainyard:tpuSlices[0].count",
        "2",
        "makes a multislice of single-host 2x2 slices, which GKE does not support (allowed: count 1, or a multi-host",
    ),
    (
        "flex-start-max-run",
        _set("trainyard:jobs", "fsdp", 0, "maxRunDurationSeconds", 604801),
        "trainyard:jobs.fsdp[0].maxRunDurationSeconds",
        "604801",
        "is longer than flex-start VMs run (pool gpu-nodepool-dws is dwsQueued) (allowed: at most 604800 seconds",
    ),
    (
        "authorized-networks-max",
        _public_endpoint(101),
        "trainyard:cluster.authorizedNetworks",
        '"101 ranges"',
        "is more than GKE takes on a cluster with private nodes (allowed: at most 50 ranges",
    ),
    (
        "authorized-networks-max",
        _public_endpoint(51, private_nodes=False),
        "trainyard:cluster.authorizedNetworks",
        '"51 ranges"',
        "is more than GKE takes on a cluster with public nodes",
    ),
    (
        "kueue-v1beta2-release",
        _set("trainyard:kueue", "version", "v0.14.9"),
        "trainyard:kueue.version",
        '"v0.14.9"',
        "cannot serve kueue.x-k8s.io/v1beta2, which the stack applies (allowed: Kueue v0.15.0 or newer",
    ),
    (
        "managed-namespaces",
        _set("trainyard:storage", "namespace", "gmp-system"),
        "trainyard:storage.namespace",
        '"gmp-system"',
        "belongs to Kubernetes or GKE (allowed: a namespace of the stack's own",
    ),
    (
        "managed-namespaces",
        _set("trainyard:storage", "namespace", "gke-managed-system"),
        "trainyard:storage.namespace",
        '"gke-managed-system"',
        "belongs to Kubernetes or GKE",
    ),
    (
        "managed-namespaces",
        _set("trainyard:kueue", "namespace", "kube-queues"),
        "trainyard:kueue.namespace",
        '"kube-queues"',
        "belongs to Kubernetes or GKE",
    ),
    (
        "default-service-account",
        _set("trainyard:storage", "serviceAccount", "default"),
        "trainyard:storage.serviceAccount",
        '"default"',
        "is the one Kubernetes creates (allowed: a service account of the stack's own: Kubernetes makes one named",
    ),
    (
        "bucket-location-holds-region",
        _set("trainyard:storage", "location", "EU"),
        "trainyard:storage.location",
        '"EU"',
        "does not hold gcp:region us-east5, so every read and checkpoint would cross regions (allowed: the cluster's",
    ),
    (
        "bucket-location-holds-region",
        _set("trainyard:storage", "location", "US-CENTRAL1"),
        "trainyard:storage.location",
        '"US-CENTRAL1"',
        "does not hold gcp:region us-east5",
    ),
    (
        "bucket-location-holds-region",
        _set("trainyard:storage", "location", "NAM4"),
        "trainyard:storage.location",
        '"NAM4"',
        "does not hold gcp:region us-east5",
    ),
    (
        "bucket-without-dots",
        _set("trainyard:storage", "bucket", "data.trainyard.example.com"),
        "trainyard:storage.bucket",
        '"data.trainyard.example.com"',
        "has dots, which GCS takes only from a verified domain's owner (allowed: a name without dots",
    ),
    (
        "reservation-name",
        _reservation("My_Reservation"),
        "trainyard:tpuSlices[0].reservation",
        '"My_Reservation"',
        "is not a name GCE accepts (allowed: a reservation name (1 to 63 lowercase letters",
    ),
    (
        "reservation-name",
        _reservation("r" * 64),
        "trainyard:tpuSlices[0].reservation",
        f'"{"r" * 64}"',
        "is not a name GCE accepts",
    ),
]

# (rule id, edit next to the breaking one that keeps the rule): each loads without a problem.
PASSES = [
    ("subnet-reserved-addresses", _set("trainyard:network", "nodeRange", "10.0.0.0/27")),
    ("subnet-reserved-addresses", _set("trainyard:network", "dcnRanges", ["10.50.0.0/28", "10.60.0.0/28"])),
    ("subnet-reserved-addresses", _set("trainyard:network", "gvnicRange", "192.168.0.0/28")),
    ("pod-range-per-node", _set("trainyard:network", "podRange", "10.64.0.0/19")),
    ("cidr-needs-prefix", _set("trainyard:network", "nodeRange", "10.0.0.0/20")),
    ("prohibited-subnet-ranges", _set("trainyard:network", "serviceRange", "100.64.0.0/19")),
    ("prohibited-subnet-ranges", _set("trainyard:network", "gvnicRange", "240.0.0.0/24")),
    ("nodes-per-pool-zone", _edits(BIG_POD_RANGE, BIG_GPU_SUBNETS, _set("trainyard:gpuPools", 0, "maxNodes", 1000))),
    ("nodes-per-cluster", _edits(BIG_RANGES, _set("trainyard:tpuSlices", 0, "count", 3746))),
    ("multislice-multi-host", _set("trainyard:tpuSlices", 0, "topology", "4x4")),
    ("flex-start-max-run", _set("trainyard:jobs", "fsdp", 0, "maxRunDurationSeconds", 604800)),
    ("authorized-networks-max", _public_endpoint(100)),
    ("authorized-networks-max", _public_endpoint(50, private_nodes=False)),
    ("kueue-v1beta2-release", _set("trainyard:kueue", "version", "v0.19.2")),
    ("managed-namespaces", _set("trainyard:storage", "namespace", "training")),
    ("default-service-account", _set("trainyard:storage", "serviceAccount", "default-runner")),
    ("bucket-location-holds-region", _set("trainyard:storage", "location", "US")),
    ("bucket-location-holds-region", _set("trainyard:storage", "location", "us-east5")),
    ("bucket-without-dots", _set("trainyard:storage", "bucket", "data-trainyard-example-com")),
    ("reservation-name", _reservation("a4-block-7")),
    ("reservation-name", _reservation("projects/shared-capacity/reservations/v6e-pod")),
]


@pytest.mark.parametrize(("rule", "edit", "path", "value", "words"), FIRES, ids=[f"{c[0]}:{c[2]}" for c in FIRES])
def test_a_config_that_breaks_a_rule_is_refused_with_key_value_and_what_is_allowed(rule, edit, path, value, words):
    values = dev_config_values()
    edit(values)
    with pytest.raises(ConfigError) as error:
        load(values)
    lines = [line for line in str(error.value).splitlines() if line.startswith(f"{path}: {value} ")]
    assert any(words in line for line in lines), f"{rule}: no line '{path}: {value} ...{words}' in:\n{error.value}"


@pytest.mark.parametrize(("rule", "edit"), PASSES, ids=[case[0] for case in PASSES])
def test_a_config_that_keeps_the_rule_loads(rule, edit):
    values = dev_config_values()
    edit(values)
    load(values)


def test_a_billion_slices_are_refused_at_once_not_enumerated():
    values = dev_config_values()
    _set("trainyard:tpuSlices", 0, "count", 10**30)(values)
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=r"^trainyard:tpuSlices\[0\]\.count: 10{30} makes a cluster of "):
        load(values)
    assert time.perf_counter() - start < 1.0


def test_every_rule_has_a_case_that_fires_and_one_that_passes():
    ids = {rule.id for rule in cloud_rules.RULES}
    assert ids == {case[0] for case in FIRES}
    assert ids == {case[0] for case in PASSES}


def test_every_rule_is_documented_with_its_source():
    docs = DOCS.read_text(encoding="utf-8")
    for rule in cloud_rules.RULES:
        assert f"`{rule.id}`" in docs, rule.id
        first_url = rule.source.split()[0].rstrip(",;:")
        assert first_url in docs, f"{rule.id}: {first_url} not in docs/cloud-facts.md"


@pytest.mark.parametrize(
    ("location", "region", "holds"),
    [
        ("US-EAST5", "us-east5", True),
        ("us-east5", "us-east5", True),
        ("US", "us-east5", True),
        ("EU", "europe-west4", True),
        ("ASIA", "asia-northeast1", True),
        ("NAM4", "us-central1", True),
        ("EUR4", "europe-west4", True),
        ("ASIA1", "asia-northeast2", True),
        ("US", "europe-west4", False),
        ("NAM4", "us-east5", False),
        ("EUR4", "europe-west1", False),
        ("US-EAST1", "us-east5", False),
    ],
)
def test_a_bucket_location_holds_its_region_or_not(location, region, holds):
    assert cloud_rules.bucket_location_holds(location, region) is holds
