"""The stack config, parsed once into typed objects.

Keys live in the `trainyard` namespace (plus `gcp:project` and `gcp:region`). `load_stack_config` turns the
raw key/value map Pulumi holds into a `StackConfig`, or raises `ConfigError` listing every problem as
`<key path>: <value> <what is wrong> (allowed: ...)` before any resource is registered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from ipaddress import IPv4Network
from typing import Any, Literal

import pulumi
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from components import topology
from components.config_checks import ConfigProblem, domain_problems, format_validation_error
from components.jobs_config import JobsConfig, KueueConfig

NAMESPACE = "trainyard"
DNS_LABEL = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"

TpuCapacity = Literal["onDemand", "spot", "flexStart", "reservation"]
GpuCapacity = Literal["dwsQueued", "flexStart", "spot", "onDemand", "reservation"]
ReleaseChannel = Literal["RAPID", "REGULAR", "STABLE", "EXTENDED", "UNSPECIFIED"]
GpuDriverVersion = Literal["DEFAULT", "LATEST", "INSTALLATION_DISABLED"]


class ConfigError(pulumi.RunError):
    """The stack config cannot be planned; `problems` says where and why (the engine prints it without a trace)."""

    def __init__(self, problems: list[ConfigProblem]):
        self.problems = problems
        super().__init__("\n".join(str(problem) for problem in problems))


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class SystemPoolConfig(_Model):
    """The CPU pool for system pods, Kueue, KubeRay heads."""

    machine_type: str = "e2-standard-8"
    min_nodes: int = Field(3, ge=0)
    max_nodes: int = Field(5, ge=1)


class ClusterConfig(_Model):
    name: str = Field("trainyard", pattern=DNS_LABEL, max_length=40)
    release_channel: ReleaseChannel = "REGULAR"
    # A minor ("1.35") or a full GKE version ("1.35.2-gke.1842000"); DRANET needs >= 1.34.
    version: str = Field("1.35", pattern=r"^1\.\d+(\.\d+(-gke\.\d+)?)?$")
    deletion_protection: bool = True
    system_pool: SystemPoolConfig = SystemPoolConfig()

    @property
    def kubernetes_minor(self) -> tuple[int, int]:
        major, minor = self.version.split(".")[:2]
        return int(major), int(minor)


def _seed_rdma_ranges() -> tuple[IPv4Network, ...]:
    return tuple(IPv4Network(f"192.168.{index + 1}.0/24") for index in range(8))


class NetworkConfig(_Model):
    mtu: int = Field(8896, ge=1300, le=8896)
    node_range: IPv4Network = IPv4Network("10.0.0.0/20")
    pod_range: IPv4Network = IPv4Network("10.64.0.0/19")
    service_range: IPv4Network = IPv4Network("10.65.0.0/19")
    dcn_ranges: tuple[IPv4Network, IPv4Network] = (
        IPv4Network("10.50.0.0/16"),
        IPv4Network("10.60.0.0/16"),
    )
    gvnic_range: IPv4Network = IPv4Network("192.168.0.0/24")
    rdma_ranges: tuple[IPv4Network, ...] = Field(default_factory=_seed_rdma_ranges)


class TpuSliceConfig(_Model):
    """`count` slices of one shape; each slice is one node pool named `<name>-<index>`."""

    name: str = Field(pattern=DNS_LABEL, max_length=36)
    generation: str = "v6e"
    topology: str
    count: int = Field(1, ge=1)
    machine_type: str | None = None
    capacity: TpuCapacity = "onDemand"
    reservation: str | None = None

    @property
    def slice(self) -> topology.TpuSlice:
        return topology.tpu_slice(self.generation, self.topology, self.machine_type)

    @property
    def pool_names(self) -> list[str]:
        return [f"{self.name}-{index}" for index in range(self.count)]


class GpuPoolConfig(_Model):
    name: str = Field(pattern=DNS_LABEL, max_length=40)
    machine_type: str = topology.A4_MACHINE_TYPE
    min_nodes: int = Field(0, ge=0)
    max_nodes: int = Field(ge=1)
    capacity: GpuCapacity = "dwsQueued"
    reservation: str | None = None
    gpu_driver_version: GpuDriverVersion = "DEFAULT"

    @property
    def machine(self) -> topology.GpuMachine:
        return topology.gpu_machine(self.machine_type)


class StorageConfig(_Model):
    bucket: str = Field(pattern=r"^[a-z0-9][-_.a-z0-9]{1,61}[a-z0-9]$")
    location: str | None = None
    namespace: str = Field("trainyard", pattern=DNS_LABEL, max_length=63)
    service_account: str = Field("trainyard-runner", pattern=DNS_LABEL, max_length=63)
    # Datasets and checkpoints outlive the stack unless the config says otherwise.
    delete_with_stack: bool = False


class StackConfig(BaseModel):
    """Everything one stack says, typed; the single input of every component."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    project: str = Field(alias="gcp:project", pattern=r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")
    region: str = Field(alias="gcp:region", pattern=r"^[a-z]+-[a-z]+\d+$")
    zone: str = Field(alias="trainyard:zone", pattern=r"^[a-z]+-[a-z]+\d+-[a-z]$")
    cluster: ClusterConfig = Field(ClusterConfig(), alias="trainyard:cluster")
    network: NetworkConfig = Field(NetworkConfig(), alias="trainyard:network")
    tpu_slices: tuple[TpuSliceConfig, ...] = Field((), alias="trainyard:tpuSlices")
    gpu_pools: tuple[GpuPoolConfig, ...] = Field((), alias="trainyard:gpuPools")
    storage: StorageConfig = Field(alias="trainyard:storage")
    kueue: KueueConfig = Field(KueueConfig(), alias="trainyard:kueue")
    jobs: JobsConfig = Field(JobsConfig(), alias="trainyard:jobs")

    @property
    def bucket_location(self) -> str:
        return self.storage.location or self.region.upper()

    @property
    def multislice(self) -> bool:
        """Any slice group with more than one slice talks over the data-center network."""
        return any(group.count > 1 for group in self.tpu_slices)


def _decode(value: Any) -> Any:
    """Pulumi hands structured config to programs as JSON text."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _relevant_keys(raw: Mapping[str, Any]) -> dict[str, Any]:
    wanted = {"gcp:project", "gcp:region"}
    return {
        key: _decode(value)
        for key, value in raw.items()
        if key in wanted or key.startswith(f"{NAMESPACE}:")
    }


def load_stack_config(raw: Mapping[str, Any]) -> StackConfig:
    """Parse and check the raw stack config; raise ConfigError naming every problem."""
    try:
        config = StackConfig.model_validate(_relevant_keys(raw))
    except ValidationError as error:
        raise ConfigError(format_validation_error(error, StackConfig)) from None
    problems = list(domain_problems(config))
    if problems:
        raise ConfigError(problems)
    return config


def raw_stack_config() -> dict[str, Any]:
    """Every config key Pulumi handed this program (the engine sets them all before it runs)."""
    # pulumi.Config reads one key at a time; listing them all is how unknown keys get caught.
    from pulumi.runtime import config as runtime_config

    return {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
