"""The FSDP fine-tune on A4: a headless Service and an Indexed Job running torchrun on every node
(docs/cloud-facts.md: the A4 fine-tune).

One pod per node (parallelism = completions = nodes, `nvidia.com/gpu` = the machine's GPUs), rendezvous on
pod 0 through the Service; the pod's extra NICs are the RDMA Networks in `GpuMachine` order; NCCL and gIB
come from the host, installed by `rdma.py`'s DaemonSet. Kueue admits the Job (suspended until then) through
the DWS admission check.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.config.jobs import FsdpJobConfig, trainer_argv
from components.config.models import GpuPoolConfig
from components.facts.gke import (
    GCS_FUSE_ANNOTATIONS,
    GPU_RESOURCE,
    JOB_NAME_POD_LABEL,
    MAX_RUN_ANNOTATION,
    PREFERRED_TOPOLOGY_ANNOTATION,
    SKIP_AWAIT,
    TOPOLOGY_BLOCK_LABEL,
    WORKLOAD_LABEL,
)
from components.facts.host_workloads import HOST_GIB_DIR, HOST_NVIDIA_DIR
from components.jobs.hf_token import hf_token_env, hf_token_secret
from components.jobs.pod_parts import DATA_MOUNT, accelerator_toleration, data_mount, data_volume, trainer_pod
from components.jobs.pod_security import container_security, snake
from components.kube import nvidia_dra as nvlink
from components.kube import rdma
from components.kube.revision import FINISHED_TTL_SECONDS, revision_name, superseded
from components.kube.workload_code import TOP_LEVEL, WorkloadCode
from components.kube.workload_target import WorkloadTarget

RDZV_PORT = 29400
CACHE_MOUNT = "/cache"  # an emptyDir on the node's local SSDs: the model download (~140 GB for 70B) and caches


def nccl_env(tuner_config: str | None) -> dict[str, str]:
    """The A4 tutorial's NCCL settings for gIB over RoCE (docs/cloud-facts.md: the A4 fine-tune); the tuner
    file is the machine's, where it has one."""
    env = {
        "NCCL_NET": "gIB",
        "NCCL_CROSS_NIC": "0",
        "NCCL_NET_GDR_LEVEL": "PIX",
        "NCCL_P2P_NET_CHUNKSIZE": "131072",
        "NCCL_P2P_PCI_CHUNKSIZE": "131072",
        "NCCL_P2P_NVL_CHUNKSIZE": "524288",
        "NCCL_NVLS_CHUNKSIZE": "524288",
        "NCCL_IB_GID_INDEX": "3",
        "NCCL_IB_ADAPTIVE_ROUTING": "1",
        "NCCL_IB_QPS_PER_CONNECTION": "4",
        "NCCL_IB_TC": "52",
        "NCCL_IB_FIFO_TC": "84",
        "NCCL_TUNER_CONFIG_PATH": f"/usr/local/gib/configs/{tuner_config}",
        "LD_LIBRARY_PATH": "/usr/local/nvidia/lib64",
    }
    if tuner_config is None:
        del env["NCCL_TUNER_CONFIG_PATH"]
    return env


# torchrun waits this much less than the pod's grace period for its workers' SIGTERM checkpoint, then kills them.
SHUTDOWN_MARGIN_SECONDS = 15
# The pod's first step (workloads/fsdp/cuda_check.py, whose DRIVER_EXIT_CODE this is: the image has no
# components/) exits so when the node's driver cannot run the image's CUDA; another pod would land on the same.
CUDA_CHECK_EXIT_CODE = 78
DRIVER_CHECK = "python -m workloads.fsdp.cuda_check"
# Disruptions (a drain, a preemption, a DWS reclaim, the node's graceful shutdown) set DisruptionTarget on the pod;
# they must not use up the Job's backoffLimit, which is for the trainer's own failures. A driver the image cannot
# use fails the Job at once (https://kubernetes.io/docs/concepts/workloads/controllers/job/#pod-failure-policy).
FAILURE_POLICY = k8s.batch.v1.PodFailurePolicyArgs(
    rules=[
        k8s.batch.v1.PodFailurePolicyRuleArgs(
            action="Ignore",
            on_pod_conditions=[k8s.batch.v1.PodFailurePolicyOnPodConditionsPatternArgs(type="DisruptionTarget")],
        ),
        k8s.batch.v1.PodFailurePolicyRuleArgs(
            action="FailJob",
            on_exit_codes=k8s.batch.v1.PodFailurePolicyOnExitCodesRequirementArgs(
                container_name="trainer", operator="In", values=[CUDA_CHECK_EXIT_CODE]
            ),
        ),
    ]
)

# The pod's own Job name (`<job>-<revision>`, see kube/revision.py), from the label the Job controller sets.
JOB_NAME_ENV = "JOB_NAME"


def trainer_args(job: FsdpJobConfig) -> list[str]:
    """Each revision writes (and, restarted, resumes) in its own folder of the job's."""
    return trainer_argv(f"{DATA_MOUNT}/fsdp/{job.name}/${JOB_NAME_ENV}", job.args)


def _shell_word(word: str) -> str:
    """Quoted; a word naming $JOB_NAME or $JOB_COMPLETION_INDEX in double quotes, so the shell expands them."""
    return f'"{word}"' if "$" in word and '"' not in word and "`" not in word else shlex.quote(word)


def launch_script(job: FsdpJobConfig, pool: GpuPoolConfig, code_path: str, service: str) -> str:
    """Unpack the content-addressed code, check the node's driver, then torchrun with node rank = the pod's
    completion index; pod 0 of this revision (hostname `<job name>-0` under the headless Service) hosts the
    rendezvous."""
    torchrun = [
        "torchrun",
        f"--nnodes={job.nodes}",
        f"--nproc_per_node={pool.machine.gpus_per_vm}",
        "--node_rank=$JOB_COMPLETION_INDEX",
        "--rdzv_backend=c10d",
        f"--rdzv_id={job.name}",
        f"--shutdown_timeout={job.grace_seconds - SHUTDOWN_MARGIN_SECONDS}",
        f"--rdzv_endpoint=${JOB_NAME_ENV}-0.{service}:{RDZV_PORT}",
        "-m",
        "workloads.fsdp.train",
        *trainer_args(job),
    ]
    extract = "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])"
    unpack = f"python -c '{extract}' {shlex.quote(code_path)} /tmp/code"
    command = " ".join(_shell_word(word) for word in torchrun)
    return f"set -euo pipefail\n{unpack}\ncd /tmp/code/{TOP_LEVEL}\n{DRIVER_CHECK}\nexec {command}\n"


def topology(pool: GpuPoolConfig) -> dict[str, str]:
    """Ask Kueue for one block, as a preference: a DWS request may come back spread over blocks, and a required
    block would then leave the job unadmitted on nodes already paid for (docs/cloud-facts.md: TAS)."""
    return {PREFERRED_TOPOLOGY_ANNOTATION: TOPOLOGY_BLOCK_LABEL} if pool.places_by_topology else {}


def _pod_identity(service_account: str) -> dict:
    """pod_parts.trainer_pod as PodSpecArgs keywords."""
    identity = snake(trainer_pod(service_account))
    identity["security_context"] = k8s.core.v1.PodSecurityContextArgs(**identity["security_context"])
    return identity


def _volume(volume: dict) -> k8s.core.v1.VolumeArgs:
    """A pod_parts volume (GCS FUSE's CSI volume) as VolumeArgs; its attributes are a plain map, kept as written."""
    csi = volume["csi"]
    source = k8s.core.v1.CSIVolumeSourceArgs(driver=csi["driver"], volume_attributes=csi["volumeAttributes"])
    return k8s.core.v1.VolumeArgs(name=volume["name"], csi=source)


def host_library_volumes(shm_size: str) -> list[k8s.core.v1.VolumeArgs]:
    return [
        k8s.core.v1.VolumeArgs(
            name="library-dir-host", host_path=k8s.core.v1.HostPathVolumeSourceArgs(path=HOST_NVIDIA_DIR)
        ),
        k8s.core.v1.VolumeArgs(name="gib", host_path=k8s.core.v1.HostPathVolumeSourceArgs(path=HOST_GIB_DIR)),
        k8s.core.v1.VolumeArgs(
            name="shared-memory", empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs(medium="Memory", size_limit=shm_size)
        ),
    ]


def host_library_mounts() -> list[k8s.core.v1.VolumeMountArgs]:
    """The host's driver and gIB libraries, read-only: a job must not plant libraries for the next one."""
    return [
        k8s.core.v1.VolumeMountArgs(name="library-dir-host", mount_path="/usr/local/nvidia", read_only=True),
        k8s.core.v1.VolumeMountArgs(name="gib", mount_path="/usr/local/gib", read_only=True),
        k8s.core.v1.VolumeMountArgs(name="shared-memory", mount_path="/dev/shm"),
    ]


def rdma_pod_annotations(pool: GpuPoolConfig) -> dict[str, str]:
    return rdma.pod_annotations(pool.machine)


@dataclass(frozen=True)
class TorchWorkloadsArgs:
    jobs: tuple[tuple[FsdpJobConfig, GpuPoolConfig], ...]  # each enabled FSDP job and its pool
    bucket_name: str  # mounted at /data through GCS FUSE
    service_account: str  # the pods' Kubernetes service account (Workload Identity)
    target: WorkloadTarget
    image: pulumi.Input[str]
    code: WorkloadCode


class TorchWorkloads(pulumi.ComponentResource):
    """One Service, one Job (and the Hugging Face token Secret) per enabled FSDP job."""

    def __init__(self, name: str, args: TorchWorkloadsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:k8s:TorchWorkloads", name, None, opts)
        self._args = args
        self._namespace = args.target.namespace_name
        self._queue_labels = args.target.queue_labels
        self._code = args.code
        self._image = args.image
        self._opts = args.target.options(self)
        self.jobs = {job.name: self._fsdp_job(job, pool) for job, pool in args.jobs}
        self.register_outputs({"jobs": list(self.jobs)})

    def _fsdp_job(self, job: FsdpJobConfig, pool: GpuPoolConfig) -> k8s.batch.v1.Job:
        service = self._service(job)
        token = hf_token_secret(job.name, job.hf_token_key, self._namespace, self._opts)
        env = [
            k8s.core.v1.EnvVarArgs(name=key, value=value)
            for key, value in nccl_env(pool.machine.nccl_tuner_config).items()
        ]
        env.append(
            k8s.core.v1.EnvVarArgs(
                name=JOB_NAME_ENV,
                value_from=k8s.core.v1.EnvVarSourceArgs(
                    field_ref=k8s.core.v1.ObjectFieldSelectorArgs(field_path=f"metadata.labels['{JOB_NAME_POD_LABEL}']")
                ),
            )
        )
        if token is not None:
            env.append(k8s.core.v1.EnvVarArgs(**snake(hf_token_env(job.name))))
        env.append(k8s.core.v1.EnvVarArgs(name="HF_HOME", value=f"{CACHE_MOUNT}/huggingface"))
        gpus = str(pool.machine.gpus_per_vm)
        resources = {GPU_RESOURCE: gpus, "memory": job.memory, "ephemeral-storage": job.cache_size}
        container = k8s.core.v1.ContainerArgs(
            name="trainer",
            image=self._image,
            command=["/bin/bash", "-c"],
            args=[launch_script(job, pool, self._code.archive_path, job.name)],
            env=env,
            ports=[k8s.core.v1.ContainerPortArgs(container_port=RDZV_PORT, name="rdzv")],
            resources=k8s.core.v1.ResourceRequirementsArgs(
                limits=resources, requests=resources, claims=nvlink.container_claims(pool, job.nodes)
            ),
            security_context=k8s.core.v1.SecurityContextArgs(**snake(container_security())),
            volume_mounts=[
                *host_library_mounts(),
                k8s.core.v1.VolumeMountArgs(**snake(data_mount())),
                k8s.core.v1.VolumeMountArgs(name="cache", mount_path=CACHE_MOUNT),
                k8s.core.v1.VolumeMountArgs(**snake(self._code.mount())),
            ],
        )
        max_run = {MAX_RUN_ANNOTATION: str(job.max_run_duration_seconds)}
        pod = k8s.core.v1.PodTemplateSpecArgs(
            metadata=k8s.meta.v1.ObjectMetaArgs(
                labels={WORKLOAD_LABEL: job.name},
                annotations={**rdma_pod_annotations(pool), **GCS_FUSE_ANNOTATIONS, **max_run, **topology(pool)},
            ),
            spec=k8s.core.v1.PodSpecArgs(
                subdomain=job.name,
                restart_policy="Never",  # what a podFailurePolicy needs; a restart is a new pod that resumes
                termination_grace_period_seconds=job.grace_seconds,
                **_pod_identity(self._args.service_account),
                node_selector=pool.node_selector,
                tolerations=[k8s.core.v1.TolerationArgs(**accelerator_toleration(GPU_RESOURCE))],
                volumes=[
                    *host_library_volumes(job.shm_size),
                    _volume(data_volume(self._args.bucket_name, "torch")),
                    k8s.core.v1.VolumeArgs(
                        name="cache", empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs(size_limit=job.cache_size)
                    ),
                    k8s.core.v1.VolumeArgs(
                        name=self._code.volume()["name"],
                        config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(name=self._code.archive.config_map_name),
                    ),
                ],
                containers=[container],
                resource_claims=nvlink.pod_claims(pool, job.name, job.nodes),
            ),
        )
        extra = [service, self._code.config_map] + ([token] if token is not None else [])
        extra += nvlink.compute_domains(pool, job.name, job.nodes, self._namespace, self._opts)
        spec = k8s.batch.v1.JobSpecArgs(
            suspend=True,
            completion_mode="Indexed",
            completions=job.nodes,
            parallelism=job.nodes,
            # A failed attempt fails every node's pod once: restarts x nodes failures allow `restarts` resumptions.
            backoff_limit=job.restarts * job.nodes,
            pod_failure_policy=FAILURE_POLICY,
            ttl_seconds_after_finished=FINISHED_TTL_SECONDS,
            template=pod,
        )
        return k8s.batch.v1.Job(
            f"job-{job.name}",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=revision_name(job.name, spec),
                namespace=self._namespace,
                labels={**self._queue_labels, WORKLOAD_LABEL: job.name},
                annotations={**SKIP_AWAIT, **max_run},
            ),
            spec=spec,
            opts=superseded(
                pulumi.ResourceOptions.merge(self._opts, pulumi.ResourceOptions(depends_on=extra)), job.update_policy
            ),
        )

    def _service(self, job: FsdpJobConfig) -> k8s.core.v1.Service:
        """Headless, one per job across its revisions: gives each revision's pod 0 the DNS name
        `<job>-<revision>-0.<job>` the other nodes rendezvous on."""
        return k8s.core.v1.Service(
            f"service-{job.name}",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=job.name, namespace=self._namespace),
            spec=k8s.core.v1.ServiceSpecArgs(
                cluster_ip="None",
                selector={WORKLOAD_LABEL: job.name},
                ports=[k8s.core.v1.ServicePortArgs(name="rdzv", port=RDZV_PORT, target_port=RDZV_PORT)],
            ),
            opts=self._opts,
        )
