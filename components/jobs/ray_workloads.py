"""MaxText on Ray: the RayCluster shape derived from the slice facts, and one RayJob per MaxText job.

Every number a worker group or the trainer needs (replicas = slices, numOfHosts = VMs per slice,
google.com/tpu = chips per VM, MaxText's ici_*/dcn_* mesh) comes from `topology.py` through the slice
group the job names; the trainer gets them as flags (workloads/maxtext/train.py), never recomputes them.

Every RayCluster, the standalone one and each RayJob's, runs with Ray's token authentication: KubeRay v1.6.2
generates a random token per RayCluster into a Secret named as the cluster (owned by it, so deleted with it), and
gives it to every Ray container, the RayJob's submitter and its own dashboard client. The token never passes
through the program, the plan or Pulumi's state. Each Ray container also states RAY_AUTH_MODE=token itself, so an
operator that ignored `authOptions` would start Ray closed (without a token Ray refuses to start), not open.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from types import MappingProxyType

import pulumi
import pulumi_kubernetes as k8s

from components.config.jobs import MaxTextJobConfig, RayClusterConfig
from components.config.models import TpuSliceConfig
from components.facts import maxtext
from components.facts.gke import (
    ELASTIC_JOB_ANNOTATION,
    GCS_FUSE_ANNOTATIONS,
    METADATA_SERVER_LABEL,
    RAY_AUTH_MODE_ENV,
    RAY_HEAD_PORTS,
    RAY_TOKEN_AUTH,
    RAY_VERSION,
    SKIP_AWAIT,
    TPU_RESOURCE,
    WORKLOAD_LABEL,
)
from components.jobs.hf_token import hf_token_env, hf_token_secret
from components.jobs.pod_parts import DATA_MOUNT, accelerator_toleration, data_mount, data_volume, trainer_pod
from components.jobs.pod_security import container_security
from components.kube.dranet import CLAIM_NAME, Dranet, megascale_interface_prefixes, nics_per_worker
from components.kube.revision import revision_name, superseded
from components.kube.workload_code import WorkloadCode
from components.kube.workload_target import WorkloadTarget

API_VERSION = "ray.io/v1"
OUTPUT_DIR = f"{DATA_MOUNT}/maxtext"
TRAINER_MODULE = "workloads.maxtext.train"
# The seed's options: the Ray image runs as uid 1000, and the file cache may use the node's disk.
METADATA_SERVER_SELECTOR = {METADATA_SERVER_LABEL: "true"}
# KubeRay v1.6.2 (apis/ray/v1/raycluster_types.go): mode token without a secretName makes the operator generate the
# token Secret; enableK8sTokenAuth (Kubernetes RBAC instead of a token) is for standalone RayClusters only.
RAY_AUTH_OPTIONS = MappingProxyType({"mode": RAY_TOKEN_AUTH})


def ray_auth_env() -> list[dict]:
    return [{"name": RAY_AUTH_MODE_ENV, "value": RAY_AUTH_OPTIONS["mode"]}]


def slice_range(job: MaxTextJobConfig, group: TpuSliceConfig) -> tuple[int, int]:
    """(fewest, most) slices the job runs on; equal unless the job is elastic."""
    return maxtext.job_slice_range(group.count, job.min_slices, job.max_slices)


def maxtext_arguments(job: MaxTextJobConfig, group: TpuSliceConfig) -> list[str]:
    values = {key: value for key, value in job.own_arguments(OUTPUT_DIR).items() if value is not None}
    values.update(maxtext.parallelism_arguments(job.ici, job.dcn, group.slice.devices, slice_range(job, group)))
    values.update(job.extra_args)
    return [f"{key}={value}" for key, value in values.items()]


def trainer_flags(job: MaxTextJobConfig, group: TpuSliceConfig) -> list[str]:
    lowest, highest = slice_range(job, group)
    flags = maxtext.slice_flags(group.slice, highest)
    if job.elastic:
        flags += ["--min-slices", str(lowest), "--max-slices", str(highest)]
    flags += ["--max-failures", str(job.max_failures), "--storage-path", OUTPUT_DIR, "--name", job.effective_run_name]
    # The image carries MaxText (workloads/maxtext/Dockerfile): the runtime env installs nothing.
    return [*flags, "--worker-package", "none"]


def maxtext_entrypoint(job: MaxTextJobConfig, group: TpuSliceConfig) -> str:
    words = ["python", "-m", TRAINER_MODULE, *trainer_flags(job, group), "--", *maxtext_arguments(job, group)]
    return shlex.join(words)


@dataclass(frozen=True)
class RayWorkloadsArgs:
    ray: RayClusterConfig  # the Ray cluster shape every RayCluster and RayJob shares
    cluster_groups: tuple[TpuSliceConfig, ...]  # the standalone RayCluster's slice groups (none: no cluster)
    jobs: tuple[tuple[MaxTextJobConfig, TpuSliceConfig], ...]  # each enabled MaxText job and its slice group
    bucket_name: str  # mounted at /data through GCS FUSE
    service_account: str  # the pods' Kubernetes service account (Workload Identity)
    dcn_nics: int  # DRANET NICs a worker of a multislice group claims
    target: WorkloadTarget
    image: pulumi.Input[str]
    code: WorkloadCode | None
    dranet: Dranet | None


class RayPods:
    """Builds the RayCluster spec (CRD camelCase) for worker groups over the stack's slice groups."""

    def __init__(self, args: RayWorkloadsArgs):
        self._args = args
        self._ray = args.ray
        self._image = args.image
        self._dranet = args.dranet

    def cluster_spec(
        self,
        groups: list[tuple[TpuSliceConfig, int, int, bool]],
        code: WorkloadCode | None = None,
        secret_env: list[dict] | None = None,
    ) -> dict:
        """`groups`: (slice group, min replicas, max replicas, elastic) per worker group; `code` mounted on
        every pod; `secret_env` (secretKeyRef entries) in every Ray container. Nothing is kept between calls."""
        secrets = list(secret_env or [])
        return {
            "authOptions": dict(RAY_AUTH_OPTIONS),
            "rayVersion": RAY_VERSION,
            "headGroupSpec": {"rayStartParams": {}, "template": self._head_template(code, secrets)},
            "workerGroupSpecs": [self._worker_group(*group, code, secrets) for group in groups],
        }

    def _volumes(self, code: WorkloadCode | None) -> list[dict]:
        return [
            *([code.volume()] if code else []),
            {"name": "dshm", "emptyDir": {"medium": "Memory"}},
            data_volume(self._args.bucket_name, "ray"),
        ]

    @staticmethod
    def _mounts(code: WorkloadCode | None) -> list[dict]:
        return [*([code.mount()] if code else []), data_mount(), {"name": "dshm", "mountPath": "/dev/shm"}]

    def _pod(self, spec: dict, code: WorkloadCode | None) -> dict:
        base = {**trainer_pod(self._args.service_account), "volumes": self._volumes(code)}
        return {"metadata": {"annotations": dict(GCS_FUSE_ANNOTATIONS)}, "spec": {**base, **spec}}

    def _head_template(self, code: WorkloadCode | None, secret_env: list[dict]) -> dict:
        ray = self._ray
        container = {
            "name": "ray-head",
            "image": self._image,
            "ports": [{"containerPort": port, "name": name} for name, port in RAY_HEAD_PORTS.items()],
            "env": [*ray_auth_env(), *secret_env],
            "resources": {
                "limits": {"memory": ray.head_memory},
                "requests": {"cpu": ray.head_cpu, "memory": ray.head_memory},
            },
            "securityContext": container_security(),
            "volumeMounts": self._mounts(code),
        }
        return self._pod({"containers": [container], "nodeSelector": dict(METADATA_SERVER_SELECTOR)}, code)

    def _worker_group(
        self,
        group: TpuSliceConfig,
        lowest: int,
        highest: int,
        elastic: bool,
        code: WorkloadCode | None,
        secret_env: list[dict],
    ) -> dict:
        tpu = group.slice
        chips = str(tpu.chips_per_vm)
        ray = self._ray
        claims = self._dranet is not None and nics_per_worker(self._args.dcn_nics, group) > 0
        container: dict = {
            "name": "ray-worker",
            "image": self._image,
            "resources": {
                "limits": {"memory": ray.worker_memory, TPU_RESOURCE: chips},
                "requests": {"cpu": ray.worker_cpu, "memory": ray.worker_memory, TPU_RESOURCE: chips},
            },
            "env": self._worker_env(highest, elastic, claims, secret_env),
            "securityContext": container_security(),
            "volumeMounts": self._mounts(code),
        }
        spec: dict = {
            "containers": [container],
            "nodeSelector": {**METADATA_SERVER_SELECTOR, **group.node_selector},
            "tolerations": [accelerator_toleration(TPU_RESOURCE)],
        }
        if claims:
            container["resources"]["claims"] = [{"name": CLAIM_NAME}]
            spec["resourceClaims"] = [{"name": CLAIM_NAME, "resourceClaimTemplateName": self._dranet.template_name}]
        return {
            "groupName": group.name,
            "replicas": highest,
            "minReplicas": lowest,
            "maxReplicas": highest,
            "numOfHosts": tpu.vms,
            "rayStartParams": {"metrics-export-port": str(ray.metrics_export_port)},
            "template": self._pod(spec, code),
        }

    def _worker_env(self, slices: int, elastic: bool, claims: bool, secret_env: list[dict]) -> list[dict]:
        ray = self._ray
        env = []
        # Elastic jobs change slice counts at run time; Ray Train sets MEGASCALE_* per attempt (ray PR #62893).
        if slices > 1 and not elastic:
            env += [
                {"name": "MEGASCALE_NUM_SLICES", "value": str(slices)},
                {"name": "MEGASCALE_PORT", "value": str(ray.megascale_port)},
            ]
        libtpu = list(ray.libtpu_init_args)
        if claims:
            prefixes = ",".join(megascale_interface_prefixes(self._args.dcn_nics))
            libtpu.append(f"--megascale_grpc_interface_prefixes={prefixes}")
        env += [
            *ray_auth_env(),
            {"name": "JAX_PLATFORMS", "value": "tpu,cpu"},
            {"name": "ENABLE_PJRT_COMPATIBILITY", "value": "true"},
            {"name": "LIBTPU_INIT_ARGS", "value": " ".join(libtpu)},
            *secret_env,
        ]
        return env


class RayWorkloads(pulumi.ComponentResource):
    """The optional standalone RayCluster and the enabled MaxText RayJobs."""

    def __init__(self, name: str, args: RayWorkloadsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:k8s:RayWorkloads", name, None, opts)
        self._args = args
        target, dranet = args.target, args.dranet
        self._namespace = target.namespace_name
        self._queue_labels = target.queue_labels
        self._code = args.code
        self._pods = RayPods(args)
        self._opts = (target.after(dranet.template) if dranet else target).options(self)
        self.cluster = self._cluster() if args.cluster_groups else None
        self.jobs = {job.name: self._job(job, group) for job, group in args.jobs}
        self.register_outputs({"rayJobs": list(self.jobs)})

    def _cluster(self) -> k8s.apiextensions.CustomResource:
        ray = self._args.ray
        groups = [(group, group.count, group.count, False) for group in self._args.cluster_groups]
        return k8s.apiextensions.CustomResource(
            f"raycluster-{ray.name}",
            api_version=API_VERSION,
            kind="RayCluster",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ray.name, namespace=self._namespace, labels=self._queue_labels),
            spec=self._pods.cluster_spec(groups),
            opts=self._opts,
        )

    def _job(self, job: MaxTextJobConfig, group: TpuSliceConfig) -> k8s.apiextensions.CustomResource:
        lowest, highest = slice_range(job, group)
        annotations = dict(SKIP_AWAIT)
        if job.elastic:
            annotations[ELASTIC_JOB_ANNOTATION] = "true"
        token = hf_token_secret(job.name, job.hf_token_key, self._namespace, self._opts)
        secret_env = [hf_token_env(job.name)] if token is not None else []
        needs = [self._code.config_map, *([token] if token is not None else [])]
        spec = {
            "entrypoint": maxtext_entrypoint(job, group),
            "runtimeEnvYAML": f"working_dir: {self._code.ray_working_dir}\n",
            "shutdownAfterJobFinishes": True,
            "suspend": True,
            "rayClusterSpec": self._pods.cluster_spec([(group, lowest, highest, job.elastic)], self._code, secret_env),
        }
        # Named by content, superseded by its updatePolicy (kube/revision.py); MaxText's run folder is the job's,
        # so a new revision resumes from the checkpoints of the one before.
        return k8s.apiextensions.CustomResource(
            f"rayjob-{job.name}",
            api_version=API_VERSION,
            kind="RayJob",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=revision_name(job.name, spec),
                namespace=self._namespace,
                labels={**self._queue_labels, WORKLOAD_LABEL: job.name},
                annotations=annotations,
            ),
            spec=spec,
            opts=superseded(
                pulumi.ResourceOptions.merge(self._opts, pulumi.ResourceOptions(depends_on=needs)), job.update_policy
            ),
        )
