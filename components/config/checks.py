"""Checks and messages for the stack config: what pydantic says, reworded, and the cross-field rules."""

from __future__ import annotations

import difflib
import re
import typing
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ValidationError

from components.config.base import PATTERN_WORDS
from components.config.cloud_checks import (
    cloud_rule_problems,
    cluster_size_problems,
    overlap_problems,
    pod_range_problems,
)
from components.config.gpu_checks import gpu_machine_problems
from components.config.job_checks import job_problems
from components.config.models import NOT_A_CONFIG_KEY, GpuPoolConfig, StackConfig, TpuSliceConfig
from components.config.problem import UNSET, ConfigProblem, reason
from components.facts import cloud_rules, gcp_names, gpu_machines, topology
from components.facts.capacity import Capacity
from components.facts.gke import FLEX_START_COMPACT_MACHINES, gke_version_below

MIN_KUBERNETES = (1, 34)  # resource.k8s.io/v1 (DRANET claims) and GKE managed DRANET

# Extra words for values people are known to try.
HINTS = {
    ("capacity", Capacity.DWS_QUEUED, "tpuSlices"): (
        "GKE rejects TPU flex-start pools with queued provisioning (AI-Hypercomputer/xpk PR #900); "
        "use flexStart, which still queues for capacity"
    ),
}


def _path(loc: tuple[int | str, ...]) -> str:
    text = str(loc[0])
    for part in loc[1:]:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _model_at(root: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model class that holds the last key of `loc` (to list its allowed keys)."""
    model: Any = root
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = next((f for name, f in model.model_fields.items() if part in (name, f.alias)), None)
        if field is None:
            return None
        model = _unwrap(field.annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _unwrap(annotation: Any) -> Any:
    for arg in typing.get_args(annotation) or (annotation,):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return annotation


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return [
        field.alias or name for name, field in model.model_fields.items() if field.json_schema_extra != NOT_A_CONFIG_KEY
    ]


def _problem_from(error: Any, root: type[BaseModel]) -> ConfigProblem:
    loc, kind, value = tuple(error["loc"]), error["type"], error.get("input", UNSET)
    path = _path(loc)
    if kind == "missing":
        return ConfigProblem(path, UNSET, "is required but not set")
    if kind == "extra_forbidden":
        model = _model_at(root, loc)
        keys = _allowed_keys(model) if model else []
        allowed = ", ".join(keys) or "see docs/configuration.md"
        return ConfigProblem(path, UNSET, f"is not a known key ({did_you_mean(str(loc[-1]), keys)}allowed: {allowed})")
    if kind == "literal_error":
        choices = re.findall(r"'([^']*)'", error["ctx"]["expected"])
        hint = next(
            (text for (key, bad, where), text in HINTS.items() if loc[-1] == key and value == bad and where in path),
            None,
        )
        message = f"is not allowed ({did_you_mean(str(value), choices)}allowed: {', '.join(choices)})"
        return ConfigProblem(path, value, f"{message}: {hint}" if hint else message)
    if kind == "string_pattern_mismatch":
        pattern = error["ctx"]["pattern"]
        return ConfigProblem(path, value, f"is not allowed (allowed: {PATTERN_WORDS.get(pattern, pattern)})")
    if kind in ("less_than_equal", "greater_than_equal"):
        return ConfigProblem(path, value, f"is out of range (allowed: {_bounds(root, loc)})")
    reason = error["msg"].removeprefix("Value error, ")
    reason = reason.replace("valid tuple", "list").replace("valid dictionary", "mapping")  # the YAML words
    return ConfigProblem(path, value, f"is not allowed ({reason[:1].lower() + reason[1:]})")


def did_you_mean(word: str, choices: list[str]) -> str:
    """`did you mean X? ` for the closest choice (the same word in another case first), or nothing."""
    same = [choice for choice in choices if choice.lower() == word.lower()]
    close = same or difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"did you mean {close[0]}? " if close else ""


def _bounds(root: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    model = _model_at(root, loc)
    field = next(f for name, f in model.model_fields.items() if loc[-1] in (name, f.alias))
    low = next((m.ge for m in field.metadata if hasattr(m, "ge")), None)
    high = next((m.le for m in field.metadata if hasattr(m, "le")), None)
    if low is not None and high is not None:
        return f"{low} to {high}"
    return f">= {low}" if low is not None else f"<= {high}"


def format_validation_error(error: ValidationError, root: type[BaseModel]) -> list[ConfigProblem]:
    return [_problem_from(item, root) for item in error.errors(include_url=False)]


def domain_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """Rules that span fields or need accelerator facts; each yields the exact key at fault."""
    too_big = list(cluster_size_problems(config))
    if too_big:
        yield from too_big  # the checks below walk every node pool: a billion slices would never finish
        return
    yield from _zone_problems(config)
    yield from _version_problems(config)
    yield from _control_plane_problems(config)
    yield from _key_problems(config)
    yield from _tpu_problems(config)
    yield from _gpu_problems(config)
    yield from gpu_machine_problems(config)
    yield from _pool_name_problems(config)
    yield from _gcp_name_problems(config)
    yield from _node_count_problems(config)
    yield from _namespace_problems(config)
    yield from overlap_problems(config)
    yield from pod_range_problems(config)
    yield from cloud_rule_problems(config)
    yield from job_problems(config)


def _zone_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    if not config.zone.startswith(f"{config.region}-"):
        yield ConfigProblem(
            "trainyard:zone", config.zone, f"is not in gcp:region {config.region} (allowed: {config.region}-<letter>)"
        )


def _version_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    if config.cluster.kubernetes_minor < MIN_KUBERNETES:
        yield ConfigProblem(
            "trainyard:cluster.version",
            config.cluster.version,
            "is too old: DRANET and resource.k8s.io/v1 need it (allowed: 1.34 or newer)",
        )


def _capacity_problems(path: str, capacity: str, reservation: str | None) -> Iterator[ConfigProblem]:
    if capacity is Capacity.RESERVATION and not reservation:
        yield ConfigProblem(f"{path}.reservation", UNSET, 'is required when capacity is "reservation"')
    if capacity is not Capacity.RESERVATION and reservation:
        yield ConfigProblem(
            f"{path}.reservation",
            reservation,
            f'is only allowed with capacity "reservation" (capacity is "{capacity}")',
        )


def _control_plane_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    cluster = config.cluster
    if not cluster.public_endpoint and not cluster.private_nodes:
        yield ConfigProblem(
            "trainyard:cluster.publicEndpoint",
            False,
            "needs privateNodes: GKE closes the IP endpoint only on clusters with private nodes "
            "(allowed: true, or privateNodes: true)",
        )
    if cluster.authorized_networks and not cluster.public_endpoint:
        yield ConfigProblem(
            "trainyard:cluster.authorizedNetworks",
            [str(network.cidr) for network in cluster.authorized_networks],
            "would admit nothing: the public IP endpoint is closed (allowed: publicEndpoint: true, or no ranges)",
        )


def _key_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    cluster = config.cluster
    keys = (
        ("secretsEncryptionKey", cluster.secrets_encryption_key, cluster.secrets_key_location),
        ("bootDiskEncryptionKey", cluster.boot_disk_encryption_key, cluster.boot_disk_key_location),
    )
    for key, name, location in keys:
        if location is not None and location != config.region:
            yield ConfigProblem(
                f"trainyard:cluster.{key}",
                name,
                f"is in {location}; GKE needs a key in the cluster's region (allowed: a key in {config.region})",
            )


def _tpu_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    for index, group in enumerate(config.tpu_slices):
        path = f"trainyard:tpuSlices[{index}]"
        yield from _capacity_problems(path, group.capacity, group.reservation)
        try:
            generation = topology.tpu_generation(group.generation)
        except topology.TopologyError as error:
            yield ConfigProblem(f"{path}.generation", group.generation, reason(error, group.generation))
            continue
        if group.topology not in generation.topologies:
            yield ConfigProblem(
                f"{path}.topology",
                group.topology,
                f"is not a {generation.name} topology (allowed: {generation.topologies_allowed})",
            )
            continue
        try:
            topology.tpu_slice(group.generation, group.topology, group.machine_type)
        except topology.TopologyError as error:
            yield ConfigProblem(f"{path}.machineType", group.machine_type, reason(error, group.machine_type))
        yield from _generation_problems(config, path, group, generation)


def _generation_problems(
    config: StackConfig, path: str, group: TpuSliceConfig, generation: topology.TpuGeneration
) -> Iterator[ConfigProblem]:
    """What GKE refuses for this generation: a capacity mode it does not offer, a cluster older than its floor, more
    DCN networks than its VMs have NICs for."""
    if group.capacity not in generation.capacities:
        offered = ", ".join(generation.capacities)
        yield ConfigProblem(
            f"{path}.capacity", group.capacity, f"is not offered for {generation.name} pools (allowed: {offered})"
        )
    if gke_version_below(config.cluster.version, generation.min_gke_version):
        yield ConfigProblem(
            "trainyard:cluster.version",
            config.cluster.version,
            f"is older than {generation.name} needs ({path}): GKE runs {generation.name} from "
            f"{generation.min_gke_version} (allowed: {generation.min_gke_version} or later, or a later minor)",
        )
    dcn_networks = len(config.network.dcn_ranges)
    if config.multislice and dcn_networks > generation.max_attached_networks:
        # With any multislice group every TPU pool attaches every DCN network (components/infra/tpu_slices.py).
        yield ConfigProblem(
            "trainyard:network.dcnRanges",
            [str(cidr) for cidr in config.network.dcn_ranges],
            f"has {dcn_networks} ranges, one network each, which every TPU pool of a multislice stack attaches, but a "
            f"{generation.name} VM ({path}) has {generation.nics_per_vm} NICs, its primary one included (allowed: at "
            f"most {generation.max_attached_networks} ranges)",
        )


def _gpu_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    for index, pool in enumerate(config.gpu_pools):
        path = f"trainyard:gpuPools[{index}]"
        yield from _capacity_problems(path, pool.capacity, pool.reservation)
        try:
            gpu_machines.gpu_machine(pool.machine_type)
        except topology.TopologyError as error:
            yield ConfigProblem(f"{path}.machineType", pool.machine_type, reason(error, pool.machine_type))
        if pool.capacity.flex_start and pool.min_nodes != 0:
            yield ConfigProblem(
                f"{path}.minNodes",
                pool.min_nodes,
                f'is not allowed with capacity "{pool.capacity}": flex-start pools scale from 0 (allowed: 0)',
            )
        if pool.min_nodes > pool.max_nodes:
            yield ConfigProblem(
                f"{path}.minNodes", pool.min_nodes, f"is above maxNodes (allowed: 0 to {pool.max_nodes})"
            )
        yield from _compact_placement_problems(path, pool)
    rdma_needed = {
        pool.machine.rdma_nics for pool in config.gpu_pools if _known_gpu(pool.machine_type) and not pool.machine.dranet
    }
    for needed in rdma_needed:
        if len(config.network.rdma_ranges) != needed:
            yield ConfigProblem(
                "trainyard:network.rdmaRanges",
                [str(r) for r in config.network.rdma_ranges],
                f"has {len(config.network.rdma_ranges)} ranges (allowed: exactly {needed}, one per RDMA NIC)",
            )


def _compact_placement_problems(path: str, pool: GpuPoolConfig) -> Iterator[ConfigProblem]:
    if pool.compact_placement and pool.capacity.queued:
        yield ConfigProblem(
            f"{path}.compactPlacement",
            True,
            f'is refused with capacity "{pool.capacity}": GKE does not place queued-provisioning GPU pools compactly '
            "(allowed: false or unset, or another capacity)",
        )
    flex_start = pool.capacity is Capacity.FLEX_START
    if pool.compact and flex_start and not pool.machine_type.startswith(FLEX_START_COMPACT_MACHINES):
        yield ConfigProblem(
            f"{path}.compactPlacement",
            pool.compact_placement,
            f"is refused for {pool.machine_type} on flex-start: compact placement with flex-start takes only "
            f"{', '.join(m + '*' for m in FLEX_START_COMPACT_MACHINES)} (allowed: false)",
        )


def _known_gpu(machine_type: str) -> bool:
    return machine_type in gpu_machines.GPU_MACHINES


def _pool_name_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    seen: dict[str, str] = {"system": "the system pool"}
    named = [(f"trainyard:tpuSlices[{i}].name", g.name, g.pool_names) for i, g in enumerate(config.tpu_slices)]
    named += [(f"trainyard:gpuPools[{i}].name", p.name, [p.name]) for i, p in enumerate(config.gpu_pools)]
    for path, name, pool_names in named:
        clashes = [pool for pool in pool_names if pool in seen]
        if clashes:
            yield ConfigProblem(
                path,
                name,
                f"gives node pool {clashes[0]!r}, already used by {seen[clashes[0]]} (allowed: unique names)",
            )
        seen.update({pool: path for pool in pool_names})


def _gcp_name_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """The names GCP would refuse at `pulumi up`: the bucket, and the node pools the config names."""
    bucket = config.bucket_name
    if (why := gcp_names.bucket_name_problem(bucket)) is not None:
        derived = "" if config.storage.bucket else " (derived from gcp:project and the stack name; set it)"
        yield ConfigProblem("trainyard:storage.bucket", bucket, f"{why}{derived} (allowed: {gcp_names.BUCKET_RULES})")
    pools = [(f"trainyard:tpuSlices[{i}].name", g.name, g.pool_names) for i, g in enumerate(config.tpu_slices)]
    pools += [(f"trainyard:gpuPools[{i}].name", p.name, [p.name]) for i, p in enumerate(config.gpu_pools)]
    for path, name, pool_names in pools:
        longest = max(pool_names, key=len)
        if (why := gcp_names.rfc1035_problem(longest, gcp_names.NODE_POOL_NAME_MAX)) is not None:
            yield ConfigProblem(
                path,
                name,
                f"gives node pool {longest!r}, which {why} (allowed: node pool names of at most "
                f"{gcp_names.NODE_POOL_NAME_MAX} characters)",
            )


def _node_count_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    pools = [("trainyard:cluster.systemPool", config.cluster.system_pool)]
    pools += [(f"trainyard:gpuPools[{i}]", pool) for i, pool in enumerate(config.gpu_pools)]
    for path, pool in pools:
        if pool.min_nodes > pool.max_nodes:
            yield ConfigProblem(
                f"{path}.minNodes",
                pool.min_nodes,
                f"is above {path}.maxNodes {pool.max_nodes} (allowed: 0 to {pool.max_nodes})",
            )


def _namespace_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """The stack creates its namespaces and `pulumi destroy` deletes them: never one Kubernetes, GKE or Kueue owns."""
    workloads, kueue = config.storage.namespace, config.kueue.namespace
    for path, namespace in (("trainyard:storage.namespace", workloads), ("trainyard:kueue.namespace", kueue)):
        if cloud_rules.managed_namespace(namespace):
            yield ConfigProblem(
                path,
                namespace,
                f"belongs to Kubernetes or GKE (allowed: {cloud_rules.MANAGED_NAMESPACES.allowed})",
            )
    if config.storage.service_account == cloud_rules.DEFAULT_SERVICE_ACCOUNT.limit:
        yield ConfigProblem(
            "trainyard:storage.serviceAccount",
            config.storage.service_account,
            f"is the one Kubernetes creates (allowed: {cloud_rules.DEFAULT_SERVICE_ACCOUNT.allowed})",
        )
    if workloads == kueue:
        yield ConfigProblem(
            "trainyard:storage.namespace",
            workloads,
            "is Kueue's namespace, trainyard:kueue.namespace (allowed: a namespace of the workloads' own)",
        )
