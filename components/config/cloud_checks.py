"""The config checks that hold the stack to GCP's, GKE's and Kueue's own rules (components/facts/cloud_rules.py):
ranges, node counts, slices, flex-start, authorized networks, Kueue's release, buckets and reservations."""

from __future__ import annotations

from collections.abc import Iterator
from ipaddress import IPv4Network
from itertools import combinations

from components.config.models import StackConfig
from components.config.problem import ConfigProblem
from components.facts import cloud_rules, topology, zones
from components.facts.kueue_release import vendored_versions

PODS_PER_NODE_RANGE = cloud_rules.POD_RANGE_PER_NODE.limit


def _ranges_in_use(config: StackConfig) -> list[tuple[str, IPv4Network]]:
    net = config.network
    ranges = [
        ("trainyard:network.nodeRange", net.node_range),
        ("trainyard:network.podRange", net.pod_range),
        ("trainyard:network.serviceRange", net.service_range),
    ]
    if config.multislice:
        ranges += [(f"trainyard:network.dcnRanges[{i}]", r) for i, r in enumerate(net.dcn_ranges)]
    if config.rdma_vpcs:
        ranges.append(("trainyard:network.gvnicRange", net.gvnic_range))
        ranges += [(f"trainyard:network.rdmaRanges[{i}]", r) for i, r in enumerate(net.rdma_ranges)]
    return ranges


def overlap_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    for (path_a, range_a), (path_b, range_b) in combinations(_ranges_in_use(config), 2):
        if range_a.overlaps(range_b):
            yield ConfigProblem(path_b, str(range_b), f"overlaps {path_a} {range_a} (allowed: disjoint ranges)")


def max_nodes(config: StackConfig) -> int:
    """The most nodes the stack's pools can reach together."""
    tpu_nodes = sum(g.count * g.slice.vms for g in config.tpu_slices)
    return config.cluster.system_pool.max_nodes + tpu_nodes + sum(p.max_nodes for p in config.gpu_pools)


def pod_range_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    pod_range = config.network.pod_range
    capacity = pod_range.num_addresses // PODS_PER_NODE_RANGE
    try:
        needed = max_nodes(config)
    except topology.TopologyError:
        return  # already reported against the slice that cannot be formed
    if needed > capacity:
        prefix = max(0, 32 - (needed * PODS_PER_NODE_RANGE - 1).bit_length())
        yield ConfigProblem(
            "trainyard:network.podRange",
            str(pod_range),
            f"holds {capacity} nodes but the pools can reach {needed} (allowed: /{prefix} or larger)",
        )


def cloud_rule_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """The rules of components/facts/cloud_rules.py that GCP, GKE or Kueue would apply at `pulumi up` or later."""
    yield from _node_range_problems(config)
    yield from _prohibited_range_problems(config)
    yield from _nodes_per_pool_problems(config)
    yield from _multislice_problems(config)
    yield from _flex_start_run_problems(config)
    yield from _authorized_network_count_problems(config)
    yield from _kueue_release_problems(config)
    yield from _bucket_problems(config)
    yield from _reservation_name_problems(config)
    yield from _zone_offer_problems(config)


def cluster_size_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    limit = cloud_rules.NODES_PER_CLUSTER.limit
    try:
        needed = max_nodes(config)
    except topology.TopologyError:
        return  # reported against the slice that cannot be formed
    if needed > limit:
        path, value, _ = max(_node_sources(config), key=lambda source: source[2])
        yield ConfigProblem(
            path,
            value,
            f"makes a cluster of {needed:,} nodes, over GKE's limit of {limit:,} "
            f"(allowed: {cloud_rules.NODES_PER_CLUSTER.allowed})",
        )


def _node_sources(config: StackConfig) -> Iterator[tuple[str, int, int]]:
    """(key, its value, the nodes it brings) for every key that adds nodes to the cluster."""
    yield (
        "trainyard:cluster.systemPool.maxNodes",
        config.cluster.system_pool.max_nodes,
        config.cluster.system_pool.max_nodes,
    )
    for index, group in enumerate(config.tpu_slices):
        yield f"trainyard:tpuSlices[{index}].count", group.count, group.count * group.slice.vms
    for index, pool in enumerate(config.gpu_pools):
        yield f"trainyard:gpuPools[{index}].maxNodes", pool.max_nodes, pool.max_nodes


def _node_range_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """Every subnet holds one address per node attached to it, plus the 4 GCP keeps: the node range every node, the
    DCN subnets every TPU VM of a multislice stack, the gVNIC and each RDMA subnet every GPU node."""
    reserved = cloud_rules.SUBNET_RESERVED_ADDRESSES.limit
    try:
        subnets = _subnet_loads(config)
    except topology.TopologyError:
        return  # already reported against the slice that cannot be formed
    for path, cidr, needed, what in subnets:
        usable = max(0, cidr.num_addresses - reserved)
        if needed > usable:
            prefix = max(0, 32 - (needed + reserved - 1).bit_length())
            yield ConfigProblem(
                path,
                str(cidr),
                f"holds {usable} nodes (GCP keeps {reserved} addresses of every subnet) but {what} can reach "
                f"{needed} (allowed: /{prefix} or larger)",
            )


def _subnet_loads(config: StackConfig) -> list[tuple[str, IPv4Network, int, str]]:
    """(key, range, nodes attached to that subnet at most, which nodes) for each subnet the stack creates."""
    net = config.network
    loads = [("trainyard:network.nodeRange", net.node_range, max_nodes(config), "the pools")]
    if config.multislice:  # every TPU pool attaches to both DCN networks
        tpu_vms = sum(group.count * group.slice.vms for group in config.tpu_slices)
        loads += [
            (f"trainyard:network.dcnRanges[{i}]", r, tpu_vms, "the TPU VMs") for i, r in enumerate(net.dcn_ranges)
        ]
    if config.rdma_vpcs:  # every GPU node has a gVNIC NIC and one NIC on each RDMA subnet
        gpu_nodes = sum(pool.max_nodes for pool in config.gpu_pools)
        loads.append(("trainyard:network.gvnicRange", net.gvnic_range, gpu_nodes, "the GPU nodes"))
        loads += [
            (f"trainyard:network.rdmaRanges[{i}]", r, gpu_nodes, "the GPU nodes") for i, r in enumerate(net.rdma_ranges)
        ]
    return loads


def _prohibited_range_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    for path, cidr in _ranges_in_use(config):
        if (bad := cloud_rules.prohibited_range(cidr)) is not None:
            yield ConfigProblem(
                path,
                str(cidr),
                f"overlaps {bad}, which GCP refuses in a subnet "
                f"(allowed: {cloud_rules.PROHIBITED_SUBNET_RANGES.allowed})",
            )


def _pool_sizes(config: StackConfig) -> Iterator[tuple[str, int]]:
    """Each pool's most nodes, by the key that sets it (all in the stack's one zone)."""
    yield "trainyard:cluster.systemPool.maxNodes", config.cluster.system_pool.max_nodes
    yield from ((f"trainyard:gpuPools[{i}].maxNodes", pool.max_nodes) for i, pool in enumerate(config.gpu_pools))


def _nodes_per_pool_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    limit = cloud_rules.NODES_PER_POOL_ZONE.limit
    for path, nodes in _pool_sizes(config):
        if nodes > limit:
            yield ConfigProblem(
                path, nodes, f"is over GKE's limit of {limit:,} nodes per pool in a zone (allowed: 1 to {limit})"
            )


def _multislice_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    for index, group in enumerate(config.tpu_slices):
        try:
            single_host = group.count > 1 and not group.slice.multi_host
        except topology.TopologyError:
            continue  # already reported
        if single_host:
            yield ConfigProblem(
                f"trainyard:tpuSlices[{index}].count",
                group.count,
                f"makes a multislice of single-host {group.topology} slices, which GKE does not support "
                f"(allowed: {cloud_rules.MULTISLICE_MULTI_HOST.allowed})",
            )


def _flex_start_run_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    limit = cloud_rules.FLEX_START_MAX_RUN_SECONDS.limit
    pools = {pool.name: pool for pool in config.gpu_pools}
    for index, job in enumerate(config.jobs.fsdp):
        pool = pools.get(job.pool)
        if pool is not None and pool.capacity.flex_start and job.max_run_duration_seconds > limit:
            yield ConfigProblem(
                f"trainyard:jobs.fsdp[{index}].maxRunDurationSeconds",
                job.max_run_duration_seconds,
                f"is longer than flex-start VMs run (pool {pool.name} is {pool.capacity}) "
                f"(allowed: {cloud_rules.FLEX_START_MAX_RUN_SECONDS.allowed})",
            )


def _authorized_network_count_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    cluster = config.cluster
    kind = "private" if cluster.private_nodes else "public"
    limit = cloud_rules.AUTHORIZED_NETWORKS_MAX.limit[kind]
    if len(cluster.authorized_networks) > limit:
        yield ConfigProblem(
            "trainyard:cluster.authorizedNetworks",
            f"{len(cluster.authorized_networks)} ranges",
            f"is more than GKE takes on a cluster with {kind} nodes "
            f"(allowed: {cloud_rules.AUTHORIZED_NETWORKS_MAX.allowed})",
        )


def _kueue_release_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    rule = cloud_rules.KUEUE_V1BETA2_RELEASE
    if cloud_rules.release_tuple(config.kueue.version) < rule.limit:
        yield ConfigProblem(
            "trainyard:kueue.version",
            config.kueue.version,
            f"cannot serve {cloud_rules.KUEUE_API_VERSION}, which the stack applies (allowed: {rule.allowed})",
        )
    elif config.kueue.install and config.kueue.version not in vendored_versions():
        yield ConfigProblem(
            "trainyard:kueue.version",
            config.kueue.version,
            f"has no vendored release manifests (allowed: {', '.join(vendored_versions())}; vendor another with "
            "`python -m components.facts.releases.gen_kueue`)",
        )


def _bucket_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    if "." in config.bucket_name:
        yield ConfigProblem(
            "trainyard:storage.bucket",
            config.bucket_name,
            f"has dots, which GCS takes only from a verified domain's owner "
            f"(allowed: {cloud_rules.BUCKET_WITHOUT_DOTS.allowed})",
        )
    location = config.storage.location
    if location is not None and not cloud_rules.bucket_location_holds(location, config.region):
        yield ConfigProblem(
            "trainyard:storage.location",
            location,
            f"does not hold gcp:region {config.region}, so every read and checkpoint would cross regions "
            f"(allowed: {cloud_rules.BUCKET_LOCATION_HOLDS_REGION.allowed})",
        )


def _reservation_name_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    named = [(f"trainyard:tpuSlices[{i}].reservation", g.reservation) for i, g in enumerate(config.tpu_slices)]
    named += [(f"trainyard:gpuPools[{i}].reservation", p.reservation) for i, p in enumerate(config.gpu_pools)]
    for path, reservation in named:
        if reservation and not cloud_rules.RESERVATION_NAME.limit.match(reservation):
            yield ConfigProblem(
                path, reservation, f"is not a name GCE accepts (allowed: {cloud_rules.RESERVATION_NAME.allowed})"
            )


def _zone_offer_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """A zone without the slices' accelerator (or no zone at all, `us-east5-z`) is refused with the zones that
    offer it, from components/facts/zones.py's sourced table; GPUs have no table yet (zones.py says why)."""
    for group in config.tpu_slices:
        try:
            table = zones.table_for(group.slice.machine_type)
        except topology.TopologyError:  # the group's own shape is refused, naming its key
            continue
        if table is None or config.zone in table.zones:
            continue
        yield ConfigProblem(
            "trainyard:zone",
            config.zone,
            f"does not offer {table.accelerator}, which trainyard:tpuSlices '{group.name}' needs (allowed: "
            f"{', '.join(sorted(table.zones))}; read {table.read_on} from {table.source.split(' ')[0]})",
        )
        return
