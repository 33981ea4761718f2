"""The stack config's models: what each key of `Pulumi.<stack>.yaml` may hold, typed.

Parsed once by `components.config.load.load_stack_config`; cross-field rules live in `checks`.
"""

from __future__ import annotations

import hashlib
import re
from ipaddress import IPv4Network
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from components.config.base import (
    DNS_LABEL,
    DRIVER_VERSION,
    GKE_VERSION,
    KMS_KEY,
    PROJECT_ID,
    REGION,
    REPOSITORY,
    STACK_NAME,
    ZONE,
    ConfigModel,
    Float,
    Int,
    PinnedImage,
)
from components.config.jobs import JobsConfig, KueueConfig
from components.facts import cloud_rules, gke, gpu_machines, topology
from components.facts.capacity import GPU_CAPACITIES, TPU_CAPACITIES, Capacity
from components.facts.gcp_names import CLUSTER_NAME_MAX, NODE_POOL_NAME_MAX


def _with_prefix(value: Any) -> Any:
    # ipaddress reads a bare address as a /32: a range of one address, never what a subnet key means.
    if isinstance(value, str) and cloud_rules.CIDR_NEEDS_PREFIX.limit not in value:
        raise ValueError(f"has no prefix length; allowed: {cloud_rules.CIDR_NEEDS_PREFIX.allowed}")
    return value


Cidr = Annotated[IPv4Network, BeforeValidator(_with_prefix)]
TpuCapacity = Literal[TPU_CAPACITIES]
GpuCapacity = Literal[GPU_CAPACITIES]
ReleaseChannel = Literal["RAPID", "REGULAR", "STABLE", "EXTENDED", "UNSPECIFIED"]
GpuDriverVersion = Literal["DEFAULT", "LATEST", "INSTALLATION_DISABLED"]
SecurityPosture = Literal["DISABLED", "BASIC", "ENTERPRISE"]
NatLogs = Literal["ERRORS_ONLY", "TRANSLATIONS_ONLY", "ALL"]
Platform = Literal["linux/amd64", "linux/arm64"]


class SystemPoolConfig(ConfigModel):
    """The CPU pool for system pods, Kueue, KubeRay heads."""

    machine_type: str = "e2-standard-8"
    """Machine type of the CPU pool that runs system pods, Kueue and the Ray heads."""
    min_nodes: Int = Field(3, ge=0)
    """Fewest nodes of the system pool (autoscaling)."""
    max_nodes: Int = Field(5, ge=1)
    """Most nodes of the system pool; at least minNodes."""


class AuthorizedNetwork(ConfigModel):
    """A range outside Google Cloud that may reach the control plane's public IP endpoint."""

    name: str = Field(min_length=1, max_length=63)
    """What the range is (an office, a VPN); GKE shows it as the block's display name."""
    cidr: Cidr
    """The range, such as 203.0.113.0/24."""


def key_location(key: str | None) -> str | None:
    """The location of a Cloud KMS key's name (projects/P/locations/LOCATION/keyRings/R/cryptoKeys/K)."""
    return key.split("/")[3] if key else None


class ClusterConfig(ConfigModel):
    name: str = Field("trainyard", pattern=DNS_LABEL, max_length=CLUSTER_NAME_MAX)
    """The GKE cluster's name; also the prefix of its networks and firewall rules."""
    release_channel: ReleaseChannel = "REGULAR"
    """GKE release channel; in one, GKE keeps node auto-upgrade on for every pool, flex-start ones too;
    UNSPECIFIED lets flex-start pools turn it off, as DWS pools want."""
    # A minor ("1.35") or a full GKE version ("1.35.2-gke.1842000"); DRANET needs >= 1.34.
    version: str = Field("1.35", pattern=GKE_VERSION)
    """GKE version: a minor such as 1.35 or a full version; 1.34 or newer (DRANET, resource.k8s.io/v1)."""
    deletion_protection: bool = True
    """Refuse to delete the cluster; turn off before `pulumi destroy`."""
    system_pool: SystemPoolConfig = SystemPoolConfig()
    """The CPU pool: `machineType`, `minNodes`, `maxNodes`."""
    private_nodes: bool = True
    """Nodes get internal addresses only and reach the internet through the stack's Cloud NAT (Google APIs
    through Private Google Access); false gives every node a public address (then disable the policy
    `nodes-private` in the pack config)."""
    public_endpoint: bool = False
    """The control plane's IP endpoint takes connections from outside the VPC, only from authorizedNetworks;
    false: from inside the VPC only. kubectl, Pulumi and CI use the IAM-checked DNS endpoint either way."""
    authorized_networks: tuple[AuthorizedNetwork, ...] = ()
    """Ranges (`name`, `cidr`) the public IP endpoint admits; with publicEndpoint only."""
    secrets_encryption_key: str | None = Field(None, pattern=KMS_KEY)
    """A Cloud KMS key in the cluster's region that encrypts Kubernetes Secrets in etcd (application-layer
    secrets encryption); the stack lets GKE's service agent use it. Unset: Google-managed encryption only."""
    boot_disk_encryption_key: str | None = Field(None, pattern=KMS_KEY)
    """A Cloud KMS key in the cluster's region that encrypts every node's boot disk (CMEK); the stack lets Compute
    Engine's service agent use it. Unset: Google-managed encryption."""
    kubelet_read_only_port: bool | None = None
    """Whether the kubelet serves its unauthenticated read-only port (10255), on every pool's nodes and as the cluster's
    default for pools made later; false closes it. Unset: GKE's default (closed in clusters created at 1.32 or
    later)."""
    binary_authorization: bool = False
    """Pods run only images the project's Binary Authorization policy admits (evaluation mode
    PROJECT_SINGLETON_POLICY_ENFORCE); the policy is the project's, and until one is written it admits every image."""
    security_posture: SecurityPosture | None = None
    """GKE security posture: BASIC audits the workloads' configuration (ENTERPRISE needs GKE Enterprise); its workload
    vulnerability scanning, retired by GKE, stays off. Unset: GKE's default."""
    data_access_logs: bool = False
    """Data Access audit logs of the project's GKE and Kubernetes APIs (admin reads, data reads and writes: who read
    which Secret, who listed pods), billed by volume. The stack then owns the project's audit config for
    container.googleapis.com: one set outside it is replaced."""

    @property
    def secrets_key_location(self) -> str | None:
        return key_location(self.secrets_encryption_key)

    @property
    def boot_disk_key_location(self) -> str | None:
        return key_location(self.boot_disk_encryption_key)

    @property
    def kubernetes_minor(self) -> tuple[int, int]:
        major, minor = self.version.split(".")[:2]
        return int(major), int(minor)

    @property
    def in_release_channel(self) -> bool:
        """Enrolled in a release channel, where GKE keeps every node pool's auto-upgrade on."""
        return self.release_channel != "UNSPECIFIED"


def _seed_rdma_ranges() -> tuple[IPv4Network, ...]:
    return tuple(IPv4Network(f"192.168.{index + 1}.0/24") for index in range(8))


class NetworkConfig(ConfigModel):
    mtu: Int = Field(8896, ge=1300, le=8896)
    """MTU of every VPC the stack creates (8896 for accelerator traffic)."""
    node_range: Cidr = IPv4Network("10.0.0.0/20")
    """Primary subnet range of the nodes."""
    pod_range: Cidr = IPv4Network("10.64.0.0/19")
    """Secondary range for pods; GKE gives each node a /24, so it bounds how many nodes the pools may reach."""
    service_range: Cidr = IPv4Network("10.65.0.0/19")
    """Secondary range for Services."""
    dcn_ranges: tuple[Cidr, ...] = Field((IPv4Network("10.50.0.0/16"), IPv4Network("10.60.0.0/16")), min_length=1)
    """Subnet ranges of the TPU DCN VPCs, one VPC each (created only for multislice groups): each multislice VM
    attaches every one with a NIC of its own (v6e has room for 3, TPU7x for 1)."""
    gvnic_range: Cidr = IPv4Network("192.168.0.0/24")
    """Subnet range of the A4 gVNIC VPC (created only with GPU pools)."""
    rdma_ranges: tuple[Cidr, ...] = Field(default_factory=_seed_rdma_ranges)
    """Subnet ranges of the RDMA VPC, one per RDMA NIC (8 for A4)."""
    flow_log_sampling: Float | None = Field(None, gt=0, le=1)
    """VPC flow logs on every subnet the stack creates but the RDMA ones, keeping this share of the flows (1.0: every
    flow; records every 5 seconds, all metadata; billed by volume). Unset: no flow logs."""
    nat_logs: NatLogs = "ERRORS_ONLY"
    """What Cloud NAT logs (with privateNodes): ERRORS_ONLY (connections it dropped), TRANSLATIONS_ONLY or ALL (also
    every connection it translated: which node or pod reached which address, and when)."""


class TpuSliceConfig(ConfigModel):
    """`count` slices of one shape; each slice is one node pool named `<name>-<index>`."""

    name: str = Field(pattern=DNS_LABEL, max_length=NODE_POOL_NAME_MAX)  # and its pools <name>-<i> too (checks)
    """Name of the slice group; its node pools are `<name>-0`, `<name>-1`, ..."""
    generation: str = "v6e"
    """TPU generation: v6e or tpu7x (one record each in components/facts/topology.py; `trainyard catalog` lists
    them)."""
    topology: str
    """Slice topology such as 4x4 (v6e) or 2x2x4 (tpu7x); chips, VMs and the machine type follow from it."""
    count: Int = Field(1, ge=1)
    """How many slices of this shape (one node pool each); more than one makes the group multislice."""
    machine_type: str | None = None
    """VM machine type; derived from the topology when unset (2x4 also allows ct6e-standard-4t)."""
    capacity: TpuCapacity = Capacity.ON_DEMAND
    """How the VMs are obtained: onDemand, spot, flexStart (DWS) or reservation."""
    reservation: str | None = None
    """The reservation's name, with capacity reservation only."""

    @property
    def slice(self) -> topology.TpuSlice:
        return topology.tpu_slice(self.generation, self.topology, self.machine_type)

    @property
    def pool_names(self) -> list[str]:
        return [f"{self.name}-{index}" for index in range(self.count)]

    @property
    def node_selector(self) -> dict[str, str]:
        """The group's nodes and no other's: its shape and its own label. Kueue's flavor for the group carries
        these labels, and a pod that names them is admitted on that flavor only, never on another group of one
        shape with other capacity (docs/cloud-facts.md: a job runs on the capacity it names)."""
        return {**self.slice.node_selector, gke.SLICE_GROUP_LABEL: self.name}


class GpuPoolConfig(ConfigModel):
    name: str = Field(pattern=DNS_LABEL, max_length=NODE_POOL_NAME_MAX)
    """Node pool name."""
    machine_type: str = gpu_machines.A4_MACHINE_TYPE
    """GPU machine type."""
    min_nodes: Int = Field(0, ge=0)
    """Fewest nodes; 0 for flex-start pools."""
    max_nodes: Int = Field(ge=1)
    """Most nodes the pool may reach."""
    capacity: GpuCapacity = Capacity.DWS_QUEUED
    """dwsQueued (flex-start with queued provisioning), flexStart, spot, onDemand or reservation."""
    reservation: str | None = None
    """The reservation's name, with capacity reservation only."""
    gpu_driver_version: GpuDriverVersion = "DEFAULT"
    """The GPU driver GKE installs."""
    driver_version: str | None = Field(None, pattern=DRIVER_VERSION)
    """The NVIDIA driver gpuDriverVersion gives the nodes at the cluster's GKE version, as nvidia-smi prints it;
    preflight refuses one older than the images and the gIB plugin need. Unset: each GPU pod checks at start."""
    compact_placement: bool | None = None
    """Place the pool's VMs close together (a compact placement policy); unset: wherever the capacity mode
    allows it, which is every mode but dwsQueued (queued provisioning refuses it)."""

    @property
    def compact(self) -> bool:
        return not self.capacity.queued if self.compact_placement is None else self.compact_placement

    @property
    def topology_labels(self) -> bool:
        """GKE labels the nodes with their block, sub-block and host (what Kueue's TAS places by), except Spot
        VMs outside a compact placement."""
        return self.capacity is not Capacity.SPOT or self.compact

    @property
    def places_by_topology(self) -> bool:
        """Kueue places the pool's jobs by block (Topology-Aware Scheduling). TAS assigns a topology only on nodes
        that exist, or after a ProvisioningRequest brings them: a pool scaled from zero by the autoscaler would
        never be admitted (its pods are not created, so nothing scales it up). So: queued provisioning, or a pool
        held at its full size (docs/cloud-facts.md: TAS needs its nodes first)."""
        held_full = self.min_nodes == self.max_nodes > 0
        return self.topology_labels and (self.capacity.queued or held_full)

    @property
    def machine(self) -> gpu_machines.GpuMachine:
        return gpu_machines.gpu_machine(self.machine_type)

    @property
    def platform(self) -> str:
        """The platform every image on the pool's nodes must be built for."""
        return f"linux/{self.machine.cpu_arch}"

    @property
    def node_selector(self) -> dict[str, str]:
        """The pool's nodes and no other's (its Kueue flavor's label): the GPU shape and the pool."""
        return {gke.GPU_ACCELERATOR_LABEL: self.machine.accelerator, gke.NODE_POOL_LABEL: self.name}


class StorageConfig(ConfigModel):
    # Unset: `<project>-<stack>-data` (project IDs are globally unique, so the name is free unless taken).
    bucket: str | None = None  # GCS's naming rules are checked in checks.py (facts.gcp_names)
    """The data and checkpoint bucket; unset: `<project>-<stack>-data` (lowercased, other characters as `-`,
    cut to 63 with a hash)."""
    location: str | None = None
    """Bucket location; unset: the region."""
    namespace: str = Field("trainyard", pattern=DNS_LABEL, max_length=63)
    """Kubernetes namespace of the workloads (not default, kube-* or Kueue's)."""
    service_account: str = Field("trainyard-runner", pattern=DNS_LABEL, max_length=63)
    """Kubernetes service account the workloads run as; Workload Identity grants it the bucket."""
    # Datasets and checkpoints outlive the stack unless the config says otherwise.
    delete_with_stack: bool = False
    """Delete the bucket and its objects with the stack; by default it is retained."""
    adopt: bool = False
    """The bucket exists already (kept by an earlier `pulumi destroy`, or made by hand): import it instead of
    creating it."""
    # GCS keeps a soft-deleted object between 7 and 90 days (docs/cloud-facts.md: soft delete); 0, off, is not
    # offered: it would let a compromised job destroy every checkpoint for good.
    soft_delete_days: int = Field(7, ge=7, le=90)
    """Days a deleted or overwritten object (a checkpoint) stays restorable, 7 to 90: what a compromised or buggy
    job destroys can be restored within them."""
    data_access_logs: bool = False
    """Data Access audit logs of Cloud Storage in the project (admin reads, data reads and writes: who read, wrote or
    deleted which object, in every bucket of the project), billed by volume. The stack then owns the project's audit
    config for storage.googleapis.com: one set outside it is replaced."""


class ImagesConfig(ConfigModel):
    """The trainers' images: built by the stack into its Artifact Registry repository, unless named here."""

    repository: str = Field("trainyard", pattern=REPOSITORY)
    """Artifact Registry repository (in the stack's project and region) the stack builds the trainers into."""
    fsdp: PinnedImage | None = None
    """A prebuilt FSDP trainer image, pinned by digest or version tag, from a registry the policy pack allows
    (`allowedRegistries`); unset: built from workloads/fsdp/."""
    fsdp_platforms: tuple[Platform, ...] | None = None
    """The platforms the prebuilt `fsdp` image was built for (linux/amd64, linux/arm64), as its manifest lists
    them; an image cannot be inspected offline, so a stack that runs it on an arm64 pool (A4X) must state them.
    Unset: linux/amd64. The image the stack builds is built for the platforms of the pools that run it."""
    maxtext: PinnedImage | None = None
    """A prebuilt MaxText Ray image, pinned by digest or version tag; unset: built from workloads/maxtext/."""

    def prebuilt(self, trainer: str) -> str | None:
        return getattr(self, trainer)


NOT_A_CONFIG_KEY = {"configKey": False}  # given by the program, never written in a stack file
MAX_BUCKET_NAME = 63  # GCS: 3 to 63 characters in a name without dots


def derived_bucket_name(project: str, stack: str) -> str:
    """`<project>-<stack>-data`, in the characters GCS allows; a long one keeps a hash of the whole name."""
    name = re.sub(r"[^a-z0-9-]+", "-", f"{project}-{stack}-data".lower())
    if len(name) <= MAX_BUCKET_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_BUCKET_NAME - len(digest) - 1].rstrip('-')}-{digest}"


class StackConfig(BaseModel):
    """Everything one stack says, typed; the single input of every component."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    stack: str = Field(pattern=STACK_NAME, json_schema_extra=NOT_A_CONFIG_KEY)  # the Pulumi stack's name
    project: str = Field(alias="gcp:project", pattern=PROJECT_ID)
    """The Google Cloud project."""
    region: str = Field(alias="gcp:region", pattern=REGION)
    """The region of the cluster, networks and bucket."""
    zone: str = Field(alias="trainyard:zone", pattern=ZONE)
    """The zone of the cluster and its pools, in the region."""
    cluster: ClusterConfig = Field(ClusterConfig(), alias="trainyard:cluster")
    """The GKE cluster."""
    network: NetworkConfig = Field(NetworkConfig(), alias="trainyard:network")
    """The VPCs and their ranges."""
    tpu_slices: tuple[TpuSliceConfig, ...] = Field((), alias="trainyard:tpuSlices")
    """TPU slice groups."""
    gpu_pools: tuple[GpuPoolConfig, ...] = Field((), alias="trainyard:gpuPools")
    """GPU node pools."""
    storage: StorageConfig = Field(StorageConfig(), alias="trainyard:storage")
    """The bucket and the workloads' namespace and service account."""
    kueue: KueueConfig = Field(KueueConfig(), alias="trainyard:kueue")
    """Kueue's release and queues."""
    jobs: JobsConfig = Field(JobsConfig(), alias="trainyard:jobs")
    """The workloads the stack starts."""
    images: ImagesConfig = Field(ImagesConfig(), alias="trainyard:images")
    """The trainers' images."""

    @property
    def bucket_name(self) -> str:
        """`trainyard:storage.bucket`, or a name derived from the project and the stack."""
        return self.storage.bucket or derived_bucket_name(self.project, self.stack)

    @property
    def bucket_location(self) -> str:
        return self.storage.location or self.region.upper()

    def slice_group(self, name: str) -> TpuSliceConfig:
        """The `trainyard:tpuSlices` group named `name` (a job's `slices`; checks has made sure it exists)."""
        return next(group for group in self.tpu_slices if group.name == name)

    def gpu_pool(self, name: str) -> GpuPoolConfig:
        """The `trainyard:gpuPools` pool named `name` (a job's `pool`; checks has made sure it exists)."""
        return next(pool for pool in self.gpu_pools if pool.name == name)

    @property
    def rdma_vpcs(self) -> bool:
        """The stack creates the gVNIC and RDMA VPCs: some GPU pool attaches them (not a DRANET one)."""
        machines = (gpu_machines.GPU_MACHINES.get(pool.machine_type) for pool in self.gpu_pools)
        return any(machine is None or not machine.dranet for machine in machines)

    @property
    def fsdp_pools(self) -> list[GpuPoolConfig]:
        """The pools that run the FSDP trainer's image: its jobs' pools, and every pool its NCCL smoke check runs on."""
        if self.nccl_smoke_on_trainer_image:
            return list(self.gpu_pools)
        named = {job.pool for job in self.jobs.enabled_fsdp}
        return [pool for pool in self.gpu_pools if pool.name in named]

    @property
    def fsdp_platforms(self) -> tuple[str, ...]:
        """What the FSDP image must be built for: the platforms of the pools that run it (amd64 when none do)."""
        return tuple(sorted({pool.platform for pool in self.fsdp_pools})) or ("linux/amd64",)

    @property
    def nccl_smoke_on_trainer_image(self) -> bool:
        """The NCCL smoke check runs (per GPU pool) on the FSDP trainer's image: no image of its own is named."""
        smoke = self.jobs.smoke
        return smoke.enabled and bool(self.gpu_pools) and smoke.nccl_image is None

    @property
    def multislice(self) -> bool:
        """Any slice group with more than one slice talks over the data-center network."""
        return any(group.count > 1 for group in self.tpu_slices)
