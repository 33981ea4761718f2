"""The `trainyard:kueue` and `trainyard:jobs` config: which workloads a stack starts, and with what.

Built on `base.ConfigModel` (camelCase keys, unknown keys refused); cross-checks that need the slices and
pools (parallelism vs chips and slices, jobs naming pools that do not exist) live in `job_checks.py`.
Every accelerator number a job needs (hosts, chips per host, worker count) comes from topology facts, never
from here: a job names the slice group or GPU pool it runs on.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from components.config.base import (
    CONFIG_KEY,
    DNS_LABEL,
    MODEL_NAME,
    QUANTITY,
    RUN_NAME,
    VERSION_TAG,
    ConfigModel,
    Float,
    Int,
)

RemPolicy = Literal[
    "minimal", "save_dot_with_context_except_mlp", "save_dot_except_mlpwi", "save_dot_except_mlp",
    "save_qkv_proj", "qkv_proj_offloaded", "custom", "minimal_offloaded", "save_out_proj", "full",
    "minimal_with_context",
]  # fmt: skip


class KueueConfig(ConfigModel):
    """Kueue's release and the queues every workload of the stack goes through."""

    install: bool = True
    # The OCI Helm chart of this release (registry.k8s.io/kueue/charts/kueue); CRD schemas match v0.19.2.
    version: str = Field("v0.19.2", pattern=VERSION_TAG)
    namespace: str = Field("kueue-system", pattern=DNS_LABEL, max_length=63)
    cluster_queue: str = Field("trainyard", pattern=DNS_LABEL, max_length=63)
    local_queue: str = Field("trainyard", pattern=DNS_LABEL, max_length=63)
    cohort: str | None = Field(None, pattern=DNS_LABEL, max_length=63)
    # Flavors tried in order: on-demand, spot and reserved capacity first, DWS (flex-start) last (docs/cloud-facts.md: Kueue for DWS).
    prefer_on_demand: bool = True
    admission_check: str = Field("dws-prov", pattern=DNS_LABEL, max_length=63)


class RayClusterConfig(ConfigModel):
    """The Ray cluster shape shared by the standalone RayCluster and every MaxText RayJob."""

    enabled: bool = False  # a standalone RayCluster for `ray job submit`, as in the seed
    name: str = Field("maxtext", pattern=DNS_LABEL, max_length=40)
    image: str = "rayproject/ray:2.60.0-py312-tpu"  # the Ray the trainer is tested with
    head_cpu: str = Field("4", pattern=QUANTITY)  # fits the default system pool (e2-standard-8: 7.91 allocatable)
    head_memory: str = Field("16Gi", pattern=QUANTITY)
    worker_cpu: str = Field("8", pattern=QUANTITY)
    worker_memory: str = Field("200G", pattern=QUANTITY)
    metrics_export_port: Int = Field(8082, ge=1024, le=65535)
    megascale_port: Int = Field(9915, ge=1024, le=65535)
    # Stays on the host's loopback and the two DRANET NICs (eth1, eth2); see dranet.py.
    libtpu_init_args: tuple[str, ...] = (
        "--xla_tpu_scoped_vmem_limit_kib=122880",
        "--xla_tpu_use_minor_sharding_for_major_trivial_input=true",
        "--xla_tpu_relayout_group_size_threshold_for_reduce_scatter=1",
        "--xla_tpu_assign_all_reduce_scatter_layout",
        "--xla_tpu_enable_async_collective_fusion_fuse_all_gather=true",
        "--xla_tpu_enable_async_collective_fusion_multiple_steps=true",
        "--xla_tpu_overlap_compute_collective_tc=true",
        "--xla_enable_async_all_gather=true",
    )


class MaxTextJobConfig(ConfigModel):
    """One MaxText pre-training RayJob on a group of TPU slices."""

    name: str = Field(pattern=DNS_LABEL, max_length=40)
    enabled: bool = True
    slices: str = Field(pattern=DNS_LABEL)  # the trainyard:tpuSlices group it runs on
    model_name: str = Field(pattern=MODEL_NAME)
    steps: Int = Field(ge=1)
    per_device_batch_size: Float = Field(gt=0)
    max_target_length: Int = Field(ge=1)
    remat_policy: RemPolicy | None = None
    dataset_type: Literal["synthetic", "tfds", "grain", "hf"] = "synthetic"
    run_name: str | None = Field(None, pattern=RUN_NAME)
    # Sizes of MaxText's mesh axes; ici fsdp and dcn data take whatever the slices leave over.
    ici: dict[str, int] = Field(default_factory=dict)
    dcn: dict[str, int] = Field(default_factory=dict)
    # Elastic: Ray Train runs on min..max whole slices of the group (default: all of them, not elastic).
    min_slices: Int | None = Field(None, ge=1)
    max_slices: Int | None = Field(None, ge=1)
    max_failures: Int = Field(0, ge=0)
    extra_args: dict[str, str] = Field(default_factory=dict)  # further MaxText key=value arguments

    @property
    def elastic(self) -> bool:
        return self.min_slices is not None or self.max_slices is not None

    @property
    def effective_run_name(self) -> str:
        return self.run_name or self.name


class FsdpJobConfig(ConfigModel):
    """One torchrun FSDP2 fine-tune as an Indexed Job on an A4 pool."""

    name: str = Field(pattern=DNS_LABEL, max_length=40)
    enabled: bool = True
    pool: str = Field(pattern=DNS_LABEL)  # the trainyard:gpuPools pool it runs on
    nodes: Int = Field(ge=1)
    image: str = Field(min_length=1)  # the trainer image (the seed builds its own on cuda-dl-base, CUDA 12.8)
    # Trainer flags without the leading dashes (workloads/fsdp/config.py), e.g. {model-id: meta-llama/...}.
    args: dict[str, str] = Field(default_factory=dict)
    max_run_duration_seconds: Int = Field(7200, ge=60)
    # The Pulumi secret config key holding the Hugging Face token (gated models), outside the trainyard
    # namespace whose keys are all typed: `pulumi config set --secret huggingface:token hf_...`.
    hf_token_key: str | None = Field("huggingface:token", pattern=CONFIG_KEY)
    memory: str = Field("1800Gi", pattern=QUANTITY)
    shm_size: str = Field("250Gi", pattern=QUANTITY)


class SmokeConfig(ConfigModel):
    """Opt-in checks: a first-JAX-job per TPU slice group, an NCCL all-gather per A4 pool."""

    enabled: bool = False
    jax_image: str = "us-docker.pkg.dev/cloud-tpu-images/jax-ai-image/tpu:latest"
    # PyTorch on CUDA 12.8 with NCCL 2.25/2.26, the versions the gIB plugin supports (docs/cloud-facts.md: the A4 fine-tune).
    nccl_image: str = "nvcr.io/nvidia/pytorch:25.03-py3"
    nccl_nodes: Int = Field(2, ge=1)
    nccl_megabytes: Int = Field(256, ge=1)


class JobsConfig(ConfigModel):
    ray: RayClusterConfig = RayClusterConfig()
    maxtext: tuple[MaxTextJobConfig, ...] = ()
    fsdp: tuple[FsdpJobConfig, ...] = ()
    smoke: SmokeConfig = SmokeConfig()

    @property
    def enabled_maxtext(self) -> tuple[MaxTextJobConfig, ...]:
        return tuple(job for job in self.maxtext if job.enabled)

    @property
    def enabled_fsdp(self) -> tuple[FsdpJobConfig, ...]:
        return tuple(job for job in self.fsdp if job.enabled)
