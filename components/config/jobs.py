"""The `trainyard:kueue` and `trainyard:jobs` config: which workloads a stack starts, and with what.

Built on `base.ConfigModel` (camelCase keys, unknown keys refused); cross-checks that need the slices and
pools (parallelism vs chips and slices, jobs naming pools that do not exist) live in `job_checks.py`.
Every accelerator number a job needs (hosts, chips per host, worker count) comes from topology facts, never
from here: a job names the slice group or GPU pool it runs on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import Field

from components.config.base import (
    CONFIG_KEY,
    DNS_LABEL,
    MODEL_NAME,
    QUANTITY,
    RUN_NAME,
    RUN_NAME_MAX,
    VERSION_TAG,
    ConfigModel,
    Float,
    Int,
    PinnedImage,
)
from components.facts.huggingface import known_gated
from components.facts.models import ModelArchitecture
from workloads.fsdp.config import ConfigError as TrainerConfigError
from workloads.fsdp.config import TrainConfig, flag_name, parse_config

# What the FSDP trainer does when a flag is not given (workloads/fsdp/config.py, the trainer's one definition).
TRAINER_DEFAULTS = {option.name: option.default for option in dataclasses.fields(TrainConfig)}
# The trainer's flags without the leading dashes, each field's own and its alias, as its parser names them.
TRAINER_FLAGS = {
    name: option.name
    for option in dataclasses.fields(TrainConfig)
    for name in (flag_name(option).removeprefix("--"), option.metadata.get("alias"))
    if name
}


def trainer_argv(output_dir: str, args: Mapping[str, str]) -> list[str]:
    """The FSDP trainer's flags as torchrun passes them (components/jobs/torch_workloads.py): trainyard's output
    folder (config load refuses another in args), then a job's args, each as `--flag value`."""
    flags = {"output-dir": output_dir, **args}
    return [word for key, value in flags.items() for word in (f"--{key}", value)]


def trainer_refusal(argv: Sequence[str]) -> str | None:
    """Why the FSDP trainer would refuse `argv`, in its own words, or None: its own parse_config (flags, then its
    rules) with no environment; argparse's error line instead of its usage and exit."""
    printed = io.StringIO()
    try:
        with contextlib.redirect_stderr(printed):
            parse_config(argv, environ={})
    except TrainerConfigError as error:
        return str(error)
    except SystemExit:
        lines = printed.getvalue().strip().splitlines() or ["argparse stopped"]
        return lines[-1].partition("error: ")[2] or lines[-1]
    return None


def parsed_trainer_config(args: Mapping[str, str]) -> TrainConfig | None:
    """The FSDP trainer's configuration from a job's args, as its own parser reads them; None where it refuses them
    (trainer_refusal says why)."""
    argv = trainer_argv("/out", args)
    return None if trainer_refusal(argv) is not None else parse_config(argv, environ={})


def gated_repositories(said: Sequence[str] | None, repositories: Sequence[str]) -> list[str]:
    """The repositories that need a token: as the config says, or the known gated ones when it is silent."""
    if said is not None:
        return list(said)
    return [repository for repository in repositories if known_gated(repository)]


class ReadsTheHub:
    """A job that downloads from the Hugging Face Hub (its `gated` and `hub_repositories`): which of its
    repositories need a token."""

    @property
    def gated_repositories(self) -> list[str]:
        return gated_repositories(self.gated, self.hub_repositories)

    @property
    def needs_token(self) -> bool:
        return bool(self.gated_repositories)


# MaxText arguments that name a Hugging Face repository it downloads (maxtext/configs/base.yml).
MAXTEXT_HUB_ARGUMENTS = ("hf_path", "tokenizer_path")

RemPolicy = Literal[
    "minimal",
    "save_dot_with_context_except_mlp",
    "save_dot_except_mlpwi",
    "save_dot_except_mlp",
    "save_qkv_proj",
    "qkv_proj_offloaded",
    "custom",
    "minimal_offloaded",
    "save_out_proj",
    "full",
    "minimal_with_context",
]


class KueueConfig(ConfigModel):
    """Kueue's release and the queues every workload of the stack goes through."""

    install: bool = True
    """Install Kueue's release (its vendored manifests, object by object)."""
    version: str = Field("v0.19.2", pattern=VERSION_TAG)
    """Kueue release: one whose manifests are vendored in components/facts/releases/ (v0.19.2)."""
    namespace: str = Field("kueue-system", pattern=DNS_LABEL, max_length=63)
    """Kueue's namespace."""
    cluster_queue: str = Field("trainyard", pattern=DNS_LABEL, max_length=63)
    """The ClusterQueue every workload goes through."""
    local_queue: str = Field("trainyard", pattern=DNS_LABEL, max_length=63)
    """The LocalQueue in the workloads' namespace."""
    cohort: str | None = Field(None, pattern=DNS_LABEL, max_length=63)
    """A cohort to share quota with other ClusterQueues."""
    # Flavors tried in order: on-demand, spot and reserved capacity first, DWS (flex-start) last
    # (docs/cloud-facts.md: Kueue for DWS).
    prefer_on_demand: bool = True
    """Try on-demand, spot and reserved flavors before DWS ones."""
    admission_check: str = Field("dws-prov", pattern=DNS_LABEL, max_length=63)
    """Name of the ProvisioningRequest admission check for DWS flavors."""


class RayClusterConfig(ConfigModel):
    """The Ray cluster shape shared by the standalone RayCluster and every MaxText RayJob."""

    enabled: bool = False  # a standalone RayCluster for `ray job submit`, as in the seed
    """Also start a standalone RayCluster (for `ray job submit`); RayJobs bring their own. It holds every slice
    until deleted, so preflight refuses it beside RayJobs or JAX checks, which would wait for it forever."""
    name: str = Field("maxtext", pattern=DNS_LABEL, max_length=40)
    """The standalone RayCluster's name."""
    head_cpu: str = Field("4", pattern=QUANTITY)  # fits the default system pool (the placement check says so)
    """CPU request of a Ray head (it lands on the system pool)."""
    head_memory: str = Field("16Gi", pattern=QUANTITY)
    """Memory of a Ray head."""
    worker_cpu: str = Field("8", pattern=QUANTITY)
    """CPU request of a TPU worker pod."""
    worker_memory: str = Field("200G", pattern=QUANTITY)
    """Memory of a TPU worker pod."""
    metrics_export_port: Int = Field(8082, ge=1024, le=65535)
    """Ray's metrics port."""
    megascale_port: Int = Field(9915, ge=1024, le=65535)
    """Port of MaxText's cross-slice (MEGASCALE) traffic."""
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
    """LIBTPU_INIT_ARGS of the workers."""


# What a change to a running job does (docs/operations.md): "replace" deletes the running revision (its pods get
# SIGTERM and graceSeconds to checkpoint) before the new one is created, so two never run or bill at once;
# "keep" leaves the running revision to finish and creates the new one beside it (Kueue admits it at once
# when the quota holds both: `preflight diff` says so, with the overlap's cost).
UpdatePolicy = Literal["replace", "keep"]


class MaxTextJobConfig(ReadsTheHub, ConfigModel):
    """One MaxText pre-training RayJob on a group of TPU slices."""

    name: str = Field(pattern=DNS_LABEL, max_length=40)
    """RayJob name."""
    enabled: bool = True
    """Start the job; a disabled job is kept but not checked against the pools."""
    update_policy: UpdatePolicy = "replace"
    """What a change does to the running job: replace (stop it, then start the new revision) or keep (let it
    finish; the new revision starts beside it when quota allows, billing both)."""
    slices: str = Field(pattern=DNS_LABEL)  # the trainyard:tpuSlices group it runs on
    """The trainyard:tpuSlices group it runs on, and only there: never on another group of its shape."""
    model_name: str = Field(pattern=MODEL_NAME)
    """MaxText model, e.g. llama3-8b."""
    steps: Int = Field(ge=1)
    """Training steps."""
    per_device_batch_size: Float = Field(gt=0)
    """MaxText per_device_batch_size."""
    max_target_length: Int = Field(ge=1)
    """Sequence length."""
    remat_policy: RemPolicy | None = None
    """MaxText remat_policy."""
    dataset_type: Literal["synthetic", "tfds", "grain", "hf"] = "synthetic"
    """MaxText dataset_type."""
    run_name: str | None = Field(None, pattern=RUN_NAME, max_length=RUN_NAME_MAX)
    """MaxText run name; unset: the job's name."""
    # Sizes of MaxText's mesh axes; ici fsdp and dcn data take whatever the slices leave over.
    ici: dict[str, int] = Field(default_factory=dict)
    """MaxText mesh sizes within a slice by axis, e.g. {tensor: 4}; fsdp takes the chips left."""
    dcn: dict[str, int] = Field(default_factory=dict)
    """MaxText mesh sizes across slices by axis; data takes the slices left."""
    # Elastic: Ray Train runs on min..max whole slices of the group (default: all of them, not elastic). Kueue
    # v0.19 admits a RayJob only whole (replicas x numOfHosts), so elasticity applies after a failure only.
    min_slices: Int | None = Field(None, ge=1)
    """Elastic: fewest whole slices Ray Train keeps training on while a lost slice is replaced; the job still
    starts only once Kueue admits maxSlices."""
    max_slices: Int | None = Field(None, ge=1)
    """Elastic: the slices the job is admitted and started with; unset: every slice of the group."""
    max_failures: Int = Field(3, ge=0)
    """Worker-group restarts Ray Train allows (a lost TPU worker restarts the group from the newest checkpoint)."""
    checkpoint_period: Int = Field(20, ge=1)
    """MaxText checkpoint_period: steps between checkpoints, the most a restart loses."""
    extra_args: dict[str, str] = Field(default_factory=dict)  # further MaxText key=value arguments
    """Further MaxText key=value arguments, each a setting of the pinned MaxText with a value of its type: none that
    trainyard sets from the keys above (model_name, steps, run_name, checkpoint_period...; mesh sizes go in
    ici/dcn) and no tokens (hfTokenKey carries the Hugging Face token)."""
    # As an FSDP job's: the Secret's value reaches the Ray pods as HF_TOKEN, which MaxText reads when
    # hf_access_token is unset (maxtext/configs/pyconfig.py). Unset by default: most MaxText runs read GCS or
    # synthetic data, and a token is given only to the jobs that name it.
    hf_token_key: str | None = Field(None, pattern=CONFIG_KEY)
    """Pulumi secret config key of the Hugging Face token, outside the trainyard namespace (e.g. huggingface:token);
    it reaches the Ray pods as HF_TOKEN, which MaxText reads for its hf_access_token. Unset: no token."""
    gated: tuple[str, ...] | None = None
    """Which Hugging Face repositories the job reads are gated (they need hfTokenKey set); unset: those of
    meta-llama among extraArgs' hf_path and tokenizer_path."""

    @property
    def hub_repositories(self) -> list[str]:
        """The Hugging Face repositories MaxText may download: its dataset and tokenizer as extraArgs name them."""
        return [self.extra_args[key] for key in MAXTEXT_HUB_ARGUMENTS if self.extra_args.get(key)]

    @property
    def elastic(self) -> bool:
        return self.min_slices is not None or self.max_slices is not None

    def own_arguments(self, output_dir: str) -> dict[str, object]:
        """The MaxText arguments trainyard sets from the job's own keys (each named as its field, but the output
        folder) in the entrypoint's order; None where a key is unset and MaxText keeps its default. The mesh sizes
        follow them, then extraArgs, which may repeat none of them (components/jobs/ray_workloads.py)."""
        return {
            "model_name": self.model_name,
            "steps": self.steps,
            "per_device_batch_size": f"{self.per_device_batch_size:g}",
            "max_target_length": self.max_target_length,
            "dataset_type": self.dataset_type,
            "run_name": self.effective_run_name,
            "base_output_directory": output_dir,
            "checkpoint_period": self.checkpoint_period,
            "remat_policy": self.remat_policy,
        }

    @property
    def effective_run_name(self) -> str:
        return self.run_name or self.name


class ArchitectureConfig(ConfigModel):
    """A model's shape, as its Hugging Face config.json gives it, for a model trainyard's table does not hold."""

    hidden: Int = Field(ge=1)
    """hidden_size. The architecture section gives the forecast the shape of a model trainyard's table lacks (`trainyard
    catalog` lists the table; a model in it takes the table's shape), in its config.json's figures."""
    intermediate: Int = Field(ge=1)
    """intermediate_size: the MLP's width; an MoE model's per expert (Qwen3 MoE's moe_intermediate_size)."""
    layers: Int = Field(ge=1)
    """num_hidden_layers."""
    heads: Int = Field(ge=1)
    """num_attention_heads."""
    kv_heads: Int = Field(ge=1)
    """num_key_value_heads."""
    vocab: Int = Field(ge=1)
    """vocab_size."""
    head_dim: Int | None = Field(None, ge=1)
    """head_dim; unset: hidden / heads."""
    experts: Int = Field(1, ge=1)
    """Experts per MoE layer (num_local_experts, num_experts); 1: a dense model."""
    experts_per_token: Int = Field(1, ge=1)
    """Experts each token is routed to (num_experts_per_tok)."""
    tied_embeddings: bool = False
    """tie_word_embeddings: the output head is the input embedding."""

    def facts(self) -> ModelArchitecture:
        return ModelArchitecture(**{**self.model_dump(), "head_dim": self.head_dim or 0})


class FsdpJobConfig(ReadsTheHub, ConfigModel):
    """One torchrun FSDP2 fine-tune as an Indexed Job on an A4 pool."""

    name: str = Field(pattern=DNS_LABEL, max_length=40)
    """Indexed Job name."""
    enabled: bool = True
    """Start the job."""
    update_policy: UpdatePolicy = "replace"
    """What a change does to the running job: replace (stop it, then start the new revision) or keep (let it
    finish; the new revision starts beside it when quota allows, billing both)."""
    pool: str = Field(pattern=DNS_LABEL)  # the trainyard:gpuPools pool it runs on
    """The trainyard:gpuPools pool it runs on, and only there: never on another pool of its machine type."""
    nodes: Int = Field(ge=1)
    """Nodes (one torchrun pod each); at most the pool's maxNodes."""
    # Trainer flags without the leading dashes (workloads/fsdp/config.py), e.g. {model-id: meta-llama/...}.
    args: dict[str, str] = Field(default_factory=dict)
    """Trainer flags without the leading dashes, e.g. {model-id: meta-llama/Llama-3.1-70B}, checked by the
    trainer's own parser when the stack loads; no output-dir (each revision writes to its own folder) and no tokens
    (hfTokenKey carries the Hugging Face token)."""
    max_run_duration_seconds: Int = Field(7200, ge=60)
    """How long DWS keeps the nodes (provreq maxRunDurationSeconds)."""
    restarts: Int = Field(3, ge=0)
    """Failed attempts the job resumes from its newest checkpoint before it gives up; disruptions (drain,
    preemption, reclaim) do not count."""
    grace_seconds: Int = Field(300, ge=30, le=3600)
    """How long a trainer has, after SIGTERM, to save a checkpoint before it is killed."""
    # The Pulumi secret config key holding the Hugging Face token (gated models), outside the trainyard
    # namespace whose keys are all typed: `pulumi config set --secret huggingface:token hf_...`.
    hf_token_key: str | None = Field("huggingface:token", pattern=CONFIG_KEY)
    """Pulumi secret config key of the Hugging Face token, outside the trainyard namespace."""
    # Gated repositories (Llama's) need the token of an account that accepted their license on the Hub.
    gated: tuple[str, ...] | None = None
    """Which of the job's model and dataset are gated (they need hfTokenKey set); unset: those of meta-llama."""
    memory: str = Field("1800Gi", pattern=QUANTITY)
    """Memory of each trainer pod."""
    shm_size: str = Field("250Gi", pattern=QUANTITY)
    """Size of /dev/shm."""
    cache_size: str = Field("1Ti", pattern=QUANTITY)
    """Local space (on the node's local SSDs) for the model download and caches: HF_HOME."""
    architecture: ArchitectureConfig | None = None
    """The model's shape, for the forecast of a model not in trainyard's table (`trainyard catalog` lists it); a
    model the table holds takes the table's."""

    @property
    def hub_repositories(self) -> list[str]:
        """The Hugging Face repositories the trainer downloads: its model and dataset, the trainer's own defaults
        where the job names none."""
        return [self.args.get(flag) or TRAINER_DEFAULTS[flag.replace("-", "_")] for flag in ("model-id", "dataset-id")]


class SmokeConfig(ConfigModel):
    """Opt-in checks: a first-JAX-job per TPU slice group, an NCCL all-gather per A4 pool."""

    enabled: bool = False
    """Start the bring-up checks: a JAX check per TPU slice (its hosts in its own pool, 30 minutes at most) and an NCCL
    all-gather per GPU pool."""
    jax_image: PinnedImage = "us-docker.pkg.dev/cloud-tpu-images/jax-ai-image/tpu:jax0.8.1-rev1"
    """Image of the per-slice first-JAX-job, from a registry the policy pack allows (`allowedRegistries`)."""
    nccl_image: PinnedImage | None = None
    """Image of the NCCL all-gather; unset: the FSDP trainer's, so it checks the CUDA and NCCL the fine-tune runs.
    Another image must come from a registry the policy pack allows (`allowedRegistries`)."""
    nccl_nodes: Int = Field(2, ge=1)
    """Nodes the all-gather spans; at most the pool's maxNodes."""
    nccl_megabytes: Int = Field(256, ge=1)
    """Size of each all-gather buffer."""


class JobsConfig(ConfigModel):
    ray: RayClusterConfig = RayClusterConfig()
    """Ray cluster shape shared by the RayJobs (and an optional standalone RayCluster)."""
    maxtext: tuple[MaxTextJobConfig, ...] = ()
    """MaxText RayJobs."""
    fsdp: tuple[FsdpJobConfig, ...] = ()
    """FSDP fine-tunes."""
    smoke: SmokeConfig = SmokeConfig()
    """Opt-in bring-up checks."""

    @property
    def enabled_maxtext(self) -> tuple[MaxTextJobConfig, ...]:
        return tuple(job for job in self.maxtext if job.enabled)

    @property
    def enabled_fsdp(self) -> tuple[FsdpJobConfig, ...]:
        return tuple(job for job in self.fsdp if job.enabled)
