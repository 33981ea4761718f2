"""What a GPU machine asks of the rest of the stack: capacity modes, GKE version, image platforms, networks.

Each rule reads the machine's record (components/facts/gpu_machines.py); a pool of an unknown machine type is refused
by checks.py already and skipped here.
"""

from __future__ import annotations

from collections.abc import Iterator

from components.config.models import GpuPoolConfig, StackConfig
from components.config.problem import ConfigProblem
from components.facts import gpu_machines
from components.facts.gke import gke_version_below


def _known_pools(config: StackConfig) -> list[tuple[str, GpuPoolConfig]]:
    return [
        (f"trainyard:gpuPools[{index}]", pool)
        for index, pool in enumerate(config.gpu_pools)
        if pool.machine_type in gpu_machines.GPU_MACHINES
    ]


def gpu_machine_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    pools = _known_pools(config)
    if len(pools) != len(config.gpu_pools):
        return
    yield from _capacity_offer_problems(pools)
    yield from _nvlink_domain_problems(pools)
    yield from _gke_floor_problems(config, pools)
    yield from _dranet_network_problems(config, pools)
    yield from _image_platform_problems(config)
    yield from _smoke_image_problems(config)


def _capacity_offer_problems(pools: list[tuple[str, GpuPoolConfig]]) -> Iterator[ConfigProblem]:
    for path, pool in pools:
        offered = pool.machine.capacities
        if pool.capacity not in offered:
            yield ConfigProblem(
                f"{path}.capacity",
                str(pool.capacity),
                f"is not offered for {pool.machine_type} (docs/cloud-facts.md) "
                f"(allowed: {', '.join(str(mode) for mode in offered)})",
            )


def _nvlink_domain_problems(pools: list[tuple[str, GpuPoolConfig]]) -> Iterator[ConfigProblem]:
    """A pool placed by an NVLink domain's workload policy lives in one domain: no more VMs than it holds (A4X: 1x72
    is 72 GPUs, 18 VMs of 4)."""
    for path, pool in pools:
        vms = pool.machine.nvlink_domain_vms
        if vms is not None and pool.max_nodes > vms:
            yield ConfigProblem(
                f"{path}.maxNodes",
                pool.max_nodes,
                f"is more VMs than one {pool.machine.nvlink_domain_topology} NVLink domain of {pool.machine_type} "
                f"holds, and the pool's workload policy keeps it in one domain (allowed: 1 to {vms}; more VMs: "
                "another pool)",
            )


def _gke_floor_problems(config: StackConfig, pools: list[tuple[str, GpuPoolConfig]]) -> Iterator[ConfigProblem]:
    version = config.cluster.version
    floors = {pool.machine.min_gke_version: (path, pool) for path, pool in pools if pool.machine.min_gke_version}
    for floor, (path, pool) in floors.items():
        if gke_version_below(version, floor):
            yield ConfigProblem(
                "trainyard:cluster.version",
                version,
                f"is below {floor}, the oldest GKE that runs {pool.machine_type} ({path}) with managed DRANET "
                f"(allowed: {floor} or later, or a minor from {'.'.join(floor.split('.')[:2])})",
            )


def _dranet_network_problems(config: StackConfig, pools: list[tuple[str, GpuPoolConfig]]) -> Iterator[ConfigProblem]:
    """Ranges set for the RDMA VPCs of a stack whose GPU pools all take their NICs through DRANET: GKE refuses
    additional node networks on a pool with an accelerator network profile, so nothing could use them."""
    if not pools or config.rdma_vpcs:
        return
    network = config.network
    stated = {"rdma_ranges": "rdmaRanges", "gvnic_range": "gvnicRange"}
    machines = ", ".join(sorted({pool.machine_type for _, pool in pools}))
    for field, key in stated.items():
        if field in network.model_fields_set:
            value = getattr(network, field)
            shown = [str(cidr) for cidr in value] if isinstance(value, tuple) else str(value)
            yield ConfigProblem(
                f"trainyard:network.{key}",
                shown,
                f"names RDMA networks beside DRANET: {machines} take their NICs through DRANET, and GKE refuses "
                "additional node networks on a DRANET node pool (allowed: unset while every GPU pool uses DRANET)",
            )


def _image_platform_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """A prebuilt FSDP image on a pool of another CPU architecture would stop at its first exec ("exec format
    error"); an image cannot be inspected offline, so the stack file states its platforms."""
    image = config.images.fsdp
    if image is None or not config.fsdp_pools:
        return
    stated = config.images.fsdp_platforms
    missing = [platform for platform in config.fsdp_platforms if platform not in (stated or ("linux/amd64",))]
    if not missing:
        return
    pool = next(pool for pool in config.fsdp_pools if pool.platform in missing)
    needs = f"pool {pool.name!r} ({pool.machine_type}) runs {', '.join(missing)} images only"
    if stated is None:
        yield ConfigProblem(
            "trainyard:images.fsdp",
            image,
            f"is taken as linux/amd64 only, and {needs}; a prebuilt image cannot be inspected offline "
            f"(allowed: an image built for {', '.join(config.fsdp_platforms)}, listed in "
            "trainyard:images.fsdpPlatforms, or unset to build one)",
        )
        return
    yield ConfigProblem(
        "trainyard:images.fsdpPlatforms",
        list(stated),
        f"has no {', '.join(missing)} build, and {needs} (allowed: a list with {', '.join(config.fsdp_platforms)})",
    )


def _smoke_image_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """The NCCL smoke check's own image has no platforms key: on Arm pools it runs on the FSDP image instead."""
    smoke = config.jobs.smoke
    arm = [pool for pool in config.gpu_pools if pool.platform != "linux/amd64"]
    if smoke.enabled and smoke.nccl_image and arm:
        yield ConfigProblem(
            "trainyard:jobs.smoke.ncclImage",
            smoke.nccl_image,
            f"is taken as linux/amd64 only, and pool {arm[0].name!r} ({arm[0].machine_type}) runs {arm[0].platform} "
            "images only; a prebuilt image cannot be inspected offline (allowed: unset, to run the check on the FSDP "
            "image built for every pool's platform)",
        )
