"""Stack rules: checks that need several resources at once (workloads against pools, networks, cost).

Each rule reads ``args.resources`` (every resource of the stack, engine-shaped) and reports with the URN of
the offending resource. The Kueue rules live in ``kueue_rules``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs

from components.facts import cost
from components.facts.gke import (
    FIREWALL_TYPE,
    GPU_RESOURCE,
    NETWORK_TYPE,
    NODE_POOL_TYPE,
    SUBNETWORK_TYPE,
    TPU_RESOURCE,
    WORKLOAD_LABEL,
)
from policies.derived_once import once_per_stack
from policies.pools import PoolFacts
from policies.props import as_number, is_unknown, items, lookup, plain
from policies.workloads import (
    RAY_KINDS,
    accelerator_requests,
    kind_of,
    known_pools,
    landing_pools,
    pod_templates,
    stack_objects,
    uncertain,
)

_FLAG = r"--?{name}[= ]+(\d+)"


def ray_worker_groups_match_pools(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Ray TPU worker groups match the slices they land on: hosts, chips per host, slice count.

    KubeRay creates numOfHosts pods per replica, one per VM of a slice; a group whose numOfHosts or
    google.com/tpu request differs from the slice, or with more replicas than slices, never schedules.
    """
    pools = known_pools(args)
    if pools is None:
        return
    for resource in args.resources:
        kind = kind_of(resource.resource_type)
        if kind not in RAY_KINDS or uncertain(kind, resource.props):
            continue
        for template in pod_templates(kind, resource.props):
            if template.is_ray_worker:
                for problem in _worker_group_problems(template, pools):
                    report_violation(f"{kind} '{resource.name}' {template.where}: {problem}", resource.urn)


def _worker_group_problems(template: Any, pools: list[PoolFacts]) -> list[str]:
    requested = accelerator_requests(template.spec)
    if not requested:
        return []
    targets = landing_pools(template.spec, pools)
    if not targets:
        return [f"requests {requested} but no node pool in the stack fits its selectors"]
    replicas = max(_number(template.group, "replicas"), _number(template.group, "maxReplicas"))
    hosts = _number(template.group, "numOfHosts") or 1
    if TPU_RESOURCE in requested:
        return _tpu_group_problems(requested[TPU_RESOURCE], int(hosts), int(replicas), targets)
    per_node = min(pool.accelerators_per_node for pool in targets)
    capacity = sum((pool.size.max_nodes or 0) * pool.accelerators_per_node for pool in targets)
    problems = []
    if requested.get(GPU_RESOURCE, 0) > per_node:
        problems.append(f"requests {requested[GPU_RESOURCE]:g} GPUs per pod, its nodes have {per_node}")
    if replicas * hosts * requested.get(GPU_RESOURCE, 0) > capacity:
        problems.append(f"needs {replicas * hosts * requested[GPU_RESOURCE]:g} GPUs, its pools hold {capacity} at most")
    return problems


def _tpu_group_problems(chips: float, hosts: int, replicas: int, targets: list[PoolFacts]) -> list[str]:
    slices = [pool for pool in targets if pool.tpu_slice is not None]
    problems = []
    for shape in {(pool.tpu_slice.pod_type, pool.tpu_slice.vms, pool.tpu_slice.chips_per_vm) for pool in slices}:  # type: ignore[union-attr]
        pod_type, vms, chips_per_vm = shape
        if hosts != vms:
            problems.append(f"numOfHosts is {hosts}, a {pod_type} slice is {vms} VMs")
        if chips != chips_per_vm:
            problems.append(f"requests {chips:g} google.com/tpu per pod, a {pod_type} VM has {chips_per_vm} chips")
    if slices and replicas > len(slices):
        problems.append(f"asks for {replicas} slices (replicas), the stack has {len(slices)} matching slice pools")
    return problems


def jax_trainer_workers_match_slices(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """A RayJob's JaxTrainer worker counts equal its TPU worker groups' hosts, in whole slices.

    The trainer is told its shape on the entrypoint (--slices/--hosts-per-slice/--chips-per-host, or
    --num-workers with elastic --min-workers/--max-workers); Ray Train reserves one worker per TPU host and
    scales elastic jobs by whole slices (ray PRs #61299, #64284), so any other number hangs waiting for
    hosts that never come.
    """
    pools = known_pools(args)
    if pools is None:
        return
    for resource in stack_objects(args, "RayJob"):
        if uncertain("RayJob", resource.props):
            continue
        entrypoint = lookup(resource.props, "spec.entrypoint")
        if not isinstance(entrypoint, str):
            continue
        counts = {flag: _flag(entrypoint, flag) for flag in TRAINER_FLAGS}
        shape = _tpu_shape(resource.props)
        if shape is None or not any(value is not None for value in counts.values()):
            continue
        for problem in _worker_count_problems(counts, *shape):
            report_violation(f"RayJob '{resource.name}': {problem}", resource.urn)


TRAINER_FLAGS = ("num-workers", "min-workers", "max-workers", "slices", "hosts-per-slice", "chips-per-host")


def _worker_count_problems(
    counts: Mapping[str, int | None], hosts_per_slice: int, total_hosts: int, chips: float
) -> list[str]:
    problems = []
    if counts["hosts-per-slice"] is not None and counts["hosts-per-slice"] != hosts_per_slice:
        problems.append(
            f"--hosts-per-slice {counts['hosts-per-slice']}, the worker group has numOfHosts {hosts_per_slice}"
        )
    if counts["chips-per-host"] is not None and counts["chips-per-host"] != chips:
        problems.append(f"--chips-per-host {counts['chips-per-host']}, the workers request {chips:g} google.com/tpu")
    if counts["slices"] is not None and counts["slices"] * hosts_per_slice != total_hosts:
        problems.append(
            f"--slices {counts['slices']} x {hosts_per_slice} hosts, the TPU worker groups have {total_hosts} hosts"
        )
    top = counts["max-workers"] if counts["max-workers"] is not None else counts["num-workers"]
    if top is not None and top != total_hosts:
        problems.append(f"the trainer asks for {top} workers, the TPU worker groups have {total_hosts} hosts")
    for flag in ("num-workers", "min-workers", "max-workers"):
        value = counts[flag]
        if value is not None and value % hosts_per_slice:
            problems.append(f"--{flag} {value} is not a whole number of {hosts_per_slice}-host slices")
    return problems


def _tpu_shape(props: Any) -> tuple[int, int, float] | None:
    """(hosts per slice, hosts at maximum scale, chips per host) over the RayJob's TPU worker groups."""
    hosts_per_slice, total, chips = 0, 0, 0.0
    for template in pod_templates("RayJob", props):
        requested = accelerator_requests(template.spec)
        if template.is_ray_worker and TPU_RESOURCE in requested:
            hosts = int(_number(template.group, "numOfHosts") or 1)
            replicas = int(max(_number(template.group, "replicas"), _number(template.group, "maxReplicas")))
            hosts_per_slice, chips = hosts_per_slice or hosts, chips or requested[TPU_RESOURCE]
            total += hosts * replicas
    return (hosts_per_slice, total, chips) if total else None


def node_networks_allow_internal_ingress(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Every additional node network (but RDMA) has an ingress rule from its own subnet.

    GCP's implied rules deny all ingress on a new VPC, and GKE adds no firewall rules for additional node
    networks: without a rule, TPU DCN (cross-slice) or gVNIC traffic between nodes is dropped. RoCE VPCs
    are the exception: they refuse VPC firewall rules and let their own traffic through.
    """
    networks = {lookup(r.props, "name"): r for r in args.resources if r.resource_type == NETWORK_TYPE}
    subnets = {lookup(r.props, "name"): r for r in args.resources if r.resource_type == SUBNETWORK_TYPE}
    firewalls = [r for r in args.resources if r.resource_type == FIREWALL_TYPE]
    used = {
        (lookup(extra, "network"), lookup(extra, "subnetwork"))
        for pool in args.resources
        if pool.resource_type == NODE_POOL_TYPE
        for extra in items(pool.props, "networkConfig.additionalNodeNetworkConfigs")
    }
    for network_name, subnet_name in sorted(used, key=str):
        network, subnet = networks.get(network_name), subnets.get(subnet_name)
        if network is None or subnet is None or lookup(network.props, "networkProfile"):
            continue  # not this stack's, unknown during preview, or RDMA (RoCE takes no VPC firewall rules)
        cidr = lookup(subnet.props, "ipCidrRange")
        if is_unknown(cidr) or any(_allows_ingress_from(rule, network, cidr) for rule in firewalls):
            continue
        report_violation(
            f"network '{network_name}' is a node network with no ingress rule from its subnet {cidr}: "
            "GCP denies ingress by default, so traffic between the nodes' extra NICs would be dropped.",
            network.urn,
        )


def _allows_ingress_from(rule: Any, network: Any, cidr: str) -> bool:
    attached = network.urn in {dependency.urn for dependency in rule.dependencies}
    ingress = lookup(rule.props, "direction") in (None, "INGRESS")
    return attached and ingress and bool(items(rule.props, "allows")) and cidr in items(rule.props, "sourceRanges")


# The pack's default budgets: what a small ML team's stack would not reach by accident. The dev stack tops out
# at ~$615/h (10 A4 nodes, 2 v6e-16 slices) and its FSDP window at ~$211; a 2,000-node GPU pool (~$105,000/h)
# or 500 v6e slices (~$21,600/h) is a typo or a decision, and either way someone should say so. A bigger team
# raises them in the pack config (cost-within-budget.maxUsdPerHour, runs-within-budget.maxUsdPerRun).
DEFAULT_MAX_USD_PER_HOUR = 1000.0
DEFAULT_MAX_USD_PER_RUN = 2000.0
# How far above its idle cost a stack may grow unannounced: the dev stack spans $87/h to $615/h (7x, its A4 pool
# scaling from zero to 10 nodes); 15 A4 nodes make it 10x.
DEFAULT_MAX_COST_SPREAD = 10.0
# How many of the costliest pool groups (pools of one machine type and capacity) an over-budget message names.
_GROUPS_NAMED = 3


def cost_within_budget(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """The stack's cost at maximum scale stays within the budget (mandatory unless configured advisory).

    Accelerator pools cost hundreds of dollars an hour at full scale; the budget (maxUsdPerHour, by default
    DEFAULT_MAX_USD_PER_HOUR) makes an overrun visible before `pulumi up`, and mandatory if the config says so.
    The message names the pools that drive the maximum, costliest first.
    """
    budget = float(args.get_config().get("maxUsdPerHour", DEFAULT_MAX_USD_PER_HOUR))
    estimate = _estimate(args)
    if estimate.max_usd_per_hour <= budget:
        return
    drivers = _cost_drivers(estimate.pools)
    report_violation(
        f"at maximum scale the stack costs ${estimate.max_usd_per_hour:,.2f}/h "
        f"(${estimate.min_usd_per_hour:,.2f}/h at minimum), over the budget of ${budget:,.2f}/h "
        f"(cost-within-budget.maxUsdPerHour): {', '.join(drivers)}. Lower the pools' maximum sizes, or raise "
        "the budget in the pack config if this scale is meant.",
        None,
    )


def _estimate(args: StackValidationArgs) -> cost.StackCost:
    return _stack_cost(args.resources)


@once_per_stack(cost.PRICED_TYPES)
def _stack_cost(priced: list[Any]) -> cost.StackCost:
    """The cost estimate of the resources it prices (clusters and node pools), once per stack evaluation."""
    return cost.estimate(
        {"type": r.resource_type, "name": r.name, "urn": r.urn, "inputs": plain(r.props)} for r in priced
    )


def max_cost_within_spread(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """The stack's maximum cost per hour stays within maxSpread times its minimum (advisory).

    Pools that scale (the autoscaler, queued jobs) reach their maximum without a config change or a `pulumi up`:
    a stack that costs $90/h idle and $2,000/h grown should say so before it happens, naming the pools that grow.
    The spread is maxSpread, by default DEFAULT_MAX_COST_SPREAD; fixed-size pools count in both ends. A stack
    with an unpriced pool is not judged.
    """
    spread = float(args.get_config().get("maxSpread", DEFAULT_MAX_COST_SPREAD))
    estimate = _estimate(args)
    low, high = estimate.min_usd_per_hour, estimate.max_usd_per_hour
    if estimate.unpriced or high <= spread * low:
        return  # a pool of unknown size or price leaves both ends unknown: the cost table says which
    times = f"{high / low:,.1f} times" if low > 0 else "infinitely more than"
    report_violation(
        f"at maximum scale the stack costs ${high:,.2f}/h, {times} its ${low:,.2f}/h at minimum (more than "
        f"{spread:g} times: max-cost-within-spread.maxSpread), grown by {', '.join(_growing_pools(estimate.pools))}. "
        "They reach it on demand, without a config change: lower their maxNodes if that scale is not meant, or "
        "raise maxSpread in the pack config.",
        None,
    )


def _growing_pools(pools: tuple[cost.PoolCost, ...]) -> list[str]:
    """The pools that scale, widest spread first: ``gpu-nodepool-dws ($0.00 to $790.50/h: 0 to 15 nodes of
    a4-highgpu-8g)``; past _GROUPS_NAMED, the rest in one sum."""
    growing = sorted(
        (pool for pool in pools if pool.max_nodes > pool.min_nodes),
        key=lambda pool: pool.max_usd_per_hour - pool.min_usd_per_hour,
        reverse=True,
    )
    named = [
        f"{pool.name} (${pool.min_usd_per_hour:,.2f} to ${pool.max_usd_per_hour:,.2f}/h: {pool.min_nodes:,} to "
        f"{pool.max_nodes:,} nodes of {pool.machine_type})"
        for pool in growing[:_GROUPS_NAMED]
    ]
    rest = growing[_GROUPS_NAMED:]
    if rest:
        usd = sum(pool.max_usd_per_hour - pool.min_usd_per_hour for pool in rest)
        named.append(f"{len(rest):,} more pools (${usd:,.2f}/h more at maximum)")
    return named


def _cost_drivers(pools: tuple[cost.PoolCost, ...]) -> list[str]:
    """The pools behind the maximum, costliest first, grouped by machine type and capacity so that 500 slices
    read as one driver: ``v6e-256 ($19,440.00/h at 60 nodes of ct6e-standard-4t)`` or ``500 ct6e-standard-4t
    on-demand pools ($21,600.00/h at 2,000 nodes: v6e-16-0, v6e-16-1, ...)``."""
    groups: dict[tuple[str, str], list[cost.PoolCost]] = {}
    for pool in pools:
        groups.setdefault((pool.machine_type, pool.capacity), []).append(pool)
    ranked = sorted(groups.values(), key=lambda group: sum(p.max_usd_per_hour for p in group), reverse=True)
    drivers = []
    for group in ranked[:_GROUPS_NAMED]:
        usd, nodes = sum(p.max_usd_per_hour for p in group), sum(p.max_nodes for p in group)
        if len(group) == 1:
            drivers.append(f"{group[0].name} (${usd:,.2f}/h at {nodes:,} nodes of {group[0].machine_type})")
        else:
            names = ", ".join(p.name for p in group[:2]) + (", ..." if len(group) > 2 else "")
            drivers.append(
                f"{len(group):,} {group[0].machine_type} {group[0].capacity} pools (${usd:,.2f}/h at {nodes:,} "
                f"nodes: {names})"
            )
    rest = [p for group in ranked[_GROUPS_NAMED:] for p in group]
    if rest:
        drivers.append(f"{len(rest):,} more pools (${sum(p.max_usd_per_hour for p in rest):,.2f}/h)")
    return drivers


def runs_within_budget(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Each job's forecast run stays within the budget (advisory unless configured).

    A run is a MaxText job's configured steps or an FSDP job's DWS window, at its forecast step time and its
    pools' price (`python -m preflight forecast`). The forecast is not a resource: it comes with the pack config
    (`forecast`, which preflight adds itself and `python -m preflight forecast --pack-config` writes for the CLI).
    The budget is maxUsdPerRun, by default DEFAULT_MAX_USD_PER_RUN. With maxUsdPerRun set in the config, a job
    the stack runs without a forecast is reported too: its cost is unknown. The default judges only the
    forecast runs, so a stack whose jobs are not fit-checked yet (or the CLI without a forecast) stays quiet.
    """
    config = args.get_config()
    configured = config.get("maxUsdPerRun")
    budget = float(DEFAULT_MAX_USD_PER_RUN if configured is None else configured)
    forecasts = {forecast.get("job"): forecast for forecast in config.get("forecast", [])}
    for job, urn in _jobs(args).items():
        forecast = forecasts.get(job, {})
        usd = forecast.get("usdPerRun", forecast.get("usdPerWindow"))
        limit = f"the budget of ${budget:,.2f} per run (runs-within-budget.maxUsdPerRun)"
        if usd is None:
            if configured is not None:
                reason = forecast.get("none", "the pack config's forecast does not name it")
                report_violation(f"job {job} has no forecast to hold to {limit}: {reason}.", urn)
        elif usd > budget:
            per = "run" if "usdPerRun" in forecast else "DWS window"
            step = forecast.get("stepSeconds")
            report_violation(f"job {job} is forecast at ${usd:,.2f} per {per} ({step} s per step), over {limit}.", urn)


def _jobs(args: StackValidationArgs) -> dict[str, str]:
    """The stack's jobs by the name their config gives them (the workload label), with a URN of each."""
    jobs = {}
    for resource in [*stack_objects(args, "RayJob"), *stack_objects(args, "Job")]:
        job = lookup(resource.props, ("metadata", "labels", WORKLOAD_LABEL))
        if isinstance(job, str):
            jobs.setdefault(job, resource.urn)
    return jobs


def _number(props: Any, key: str) -> float:
    return as_number(lookup(props, key)) or 0.0


def _flag(entrypoint: str, name: str) -> int | None:
    match = re.search(_FLAG.format(name=re.escape(name).replace("\\-", "[-_]")), entrypoint)
    return int(match.group(1)) if match else None
