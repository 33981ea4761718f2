"""Opt-in bring-up checks (`trainyard:jobs.smoke.enabled`).

Per TPU slice group, the first-JAX-job from the seed: an Indexed Job with one pod per VM of one slice that
fails unless `jax.device_count()` is the slice's chips. Per A4 pool, an NCCL all-gather across
`ncclNodes` nodes over the RDMA NICs (docs/cloud-facts.md: a fabric check before a long job);
the script checks every rank's data and prints algorithm and bus bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.config.jobs import SmokeConfig
from components.config.models import GpuPoolConfig, TpuSliceConfig
from components.facts.gke import GPU_RESOURCE, NODE_POOL_LABEL, SKIP_AWAIT, TPU_RESOURCE
from components.jobs.pod_security import TRAINER_UID, container_security, pod_security, snake
from components.jobs.torch_workloads import (
    DRIVER_CHECK,
    RDZV_PORT,
    host_library_mounts,
    host_library_volumes,
    nccl_env,
    rdma_pod_annotations,
    topology,
)
from components.kube import nvidia_dra as nvlink
from components.kube.workload_target import WorkloadTarget


def jax_job_name(pool: str) -> str:
    return f"smoke-jax-{pool}"


def nccl_job_name(pool: str) -> str:
    return f"smoke-nccl-{pool}"


def pod_identity(run_as: int | None) -> dict:
    """No service account token; `run_as` the image's non-root uid, or None for a third-party image's own user
    (JAX's, or an all-gather image the stack names: root, still without capabilities)."""
    return {
        "automount_service_account_token": False,
        "security_context": k8s.core.v1.PodSecurityContextArgs(**snake(pod_security(run_as=run_as))),
    }


SCRIPT_DIR = "/smoke"
# From the Job's start (Kueue unsuspends it once its slice is up): the image pull and JAX's start take minutes.
JAX_CHECK_DEADLINE_SECONDS = 1800
ALLGATHER_SCRIPT = '''"""All-gather across every GPU of the job; exits 1 on wrong data.

Env: SMOKE_BACKEND, SMOKE_MEGABYTES."""
import os
import sys
import time

import torch
import torch.distributed as dist

backend = os.environ.get("SMOKE_BACKEND", "nccl")
dist.init_process_group(backend)
rank, world = dist.get_rank(), dist.get_world_size()
device = torch.device("cpu")
if backend == "nccl":
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(device)
elements = int(os.environ.get("SMOKE_MEGABYTES", "256")) * 2**20 // 4
chunk = torch.full((elements,), float(rank), device=device)
gathered = [torch.empty_like(chunk) for _ in range(world)]
iterations = int(os.environ.get("SMOKE_ITERATIONS", "20"))
for _ in range(3):
    dist.all_gather(gathered, chunk)
if device.type == "cuda":
    torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(iterations):
    dist.all_gather(gathered, chunk)
if device.type == "cuda":
    torch.cuda.synchronize()
seconds = (time.perf_counter() - start) / iterations
wrong = [index for index, part in enumerate(gathered) if not bool((part == float(index)).all())]
total_bytes = elements * 4 * world
algbw = total_bytes / seconds / 1e9
if rank == 0:
    print(f"all_gather: world {world}, {total_bytes / 2**20:.0f} MiB gathered, {seconds * 1e3:.2f} ms, "
          f"algbw {algbw:.2f} GB/s, busbw {algbw * (world - 1) / world:.2f} GB/s", flush=True)
if wrong:
    print(f"rank {rank}: wrong data from ranks {wrong}", file=sys.stderr, flush=True)
dist.destroy_process_group()
sys.exit(1 if wrong else 0)
'''


def jax_check_command(expected_devices: int) -> list[str]:
    check = (
        "import jax; count = jax.device_count(); print('TPU cores:', count, flush=True); "
        f"assert count == {expected_devices}, f'expected {expected_devices} TPU cores, found {{count}}'"
    )
    return ["python", "-c", check]


@dataclass(frozen=True)
class SmokeWorkloadsArgs:
    smoke: SmokeConfig
    tpu_slices: tuple[TpuSliceConfig, ...]  # a JAX check per slice
    gpu_pools: tuple[GpuPoolConfig, ...]  # an NCCL all-gather per pool
    nccl_image: pulumi.Input[str] | None  # the all-gather's image, the FSDP trainer's unless the stack names another
    on_trainer_image: bool  # the all-gather runs the FSDP trainer's image (its uid, its driver check)
    target: WorkloadTarget


class SmokeWorkloads(pulumi.ComponentResource):
    def __init__(self, name: str, args: SmokeWorkloadsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:k8s:SmokeWorkloads", name, None, opts)
        self._args = args
        self._nccl_image = args.nccl_image
        self._namespace = args.target.namespace_name
        self._labels = args.target.queue_labels
        self._opts = args.target.options(self)
        self.jobs = [self._jax_job(group, pool) for group in args.tpu_slices for pool in group.pool_names]
        if args.gpu_pools:
            script = self._script_config_map()
            self.jobs += [self._nccl_job(pool, script) for pool in args.gpu_pools]
        self.register_outputs({"jobs": [job.metadata.name for job in self.jobs]})

    def _indexed_job(
        self, job_name: str, pods: int, pod: k8s.core.v1.PodTemplateSpecArgs, extra: list, deadline: int | None = None
    ) -> k8s.batch.v1.Job:
        service = k8s.core.v1.Service(
            f"service-{job_name}",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=job_name, namespace=self._namespace),
            spec=k8s.core.v1.ServiceSpecArgs(cluster_ip="None", selector={"job-name": job_name}),
            opts=self._opts,
        )
        return k8s.batch.v1.Job(
            f"job-{job_name}",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=job_name, namespace=self._namespace, labels=self._labels, annotations=dict(SKIP_AWAIT)
            ),
            spec=k8s.batch.v1.JobSpecArgs(
                suspend=True,
                completion_mode="Indexed",
                completions=pods,
                parallelism=pods,
                backoff_limit=0,
                active_deadline_seconds=deadline,
                template=pod,
            ),
            opts=pulumi.ResourceOptions.merge(self._opts, pulumi.ResourceOptions(depends_on=[service, *extra])),
        )

    def _jax_job(self, group: TpuSliceConfig, pool: str) -> k8s.batch.v1.Job:
        """One slice's check: its hosts in its own node pool, so they never straddle two slices (libtpu would wait
        for peers in the other slice, holding the group's quota), and a deadline, so a stuck check ends."""
        tpu = group.slice
        job_name = jax_job_name(pool)
        chips = str(tpu.chips_per_vm)
        container = k8s.core.v1.ContainerArgs(
            name="jax",
            image=self._args.smoke.jax_image,
            command=jax_check_command(tpu.devices),
            # 8471: TPU VMs talk to each other; 8431: the TPU runtime's metrics (the seed's ports).
            ports=[
                k8s.core.v1.ContainerPortArgs(container_port=8471),
                k8s.core.v1.ContainerPortArgs(container_port=8431),
            ],
            security_context=k8s.core.v1.SecurityContextArgs(**snake(container_security())),
            resources=k8s.core.v1.ResourceRequirementsArgs(
                requests={TPU_RESOURCE: chips}, limits={TPU_RESOURCE: chips}
            ),
        )
        pod = k8s.core.v1.PodTemplateSpecArgs(
            spec=k8s.core.v1.PodSpecArgs(
                subdomain=job_name,
                restart_policy="Never",
                node_selector={**group.node_selector, NODE_POOL_LABEL: pool},
                containers=[container],
                **pod_identity(run_as=None),
            )
        )
        return self._indexed_job(job_name, tpu.vms, pod, [], deadline=JAX_CHECK_DEADLINE_SECONDS)

    def _script_config_map(self) -> k8s.core.v1.ConfigMap:
        return k8s.core.v1.ConfigMap(
            "smoke-scripts",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="smoke-scripts", namespace=self._namespace),
            data={"allgather.py": ALLGATHER_SCRIPT},
            opts=self._opts,
        )

    def _nccl_job(self, pool: GpuPoolConfig, script: k8s.core.v1.ConfigMap) -> k8s.batch.v1.Job:
        smoke = self._args.smoke
        job_name = nccl_job_name(pool.name)
        gpus = str(pool.machine.gpus_per_vm)
        command = (
            f"exec torchrun --nnodes={smoke.nccl_nodes} --nproc_per_node={gpus} --node_rank=$JOB_COMPLETION_INDEX "
            f"--rdzv_backend=c10d --rdzv_id={job_name} --rdzv_endpoint={job_name}-0.{job_name}:{RDZV_PORT} "
            f"{SCRIPT_DIR}/allgather.py"
        )
        on_trainer_image = self._args.on_trainer_image
        if on_trainer_image:  # its driver check says first if the node cannot run the image
            command = f"{DRIVER_CHECK} && {command}"
        env = {**nccl_env(pool.machine.nccl_tuner_config), "SMOKE_MEGABYTES": str(smoke.nccl_megabytes)}
        container = k8s.core.v1.ContainerArgs(
            name="allgather",
            image=self._nccl_image,
            command=["/bin/bash", "-c", command],
            env=[k8s.core.v1.EnvVarArgs(name=key, value=value) for key, value in env.items()],
            ports=[k8s.core.v1.ContainerPortArgs(container_port=RDZV_PORT, name="rdzv")],
            resources=k8s.core.v1.ResourceRequirementsArgs(
                requests={GPU_RESOURCE: gpus},
                limits={GPU_RESOURCE: gpus},
                claims=nvlink.container_claims(pool, smoke.nccl_nodes),
            ),
            security_context=k8s.core.v1.SecurityContextArgs(**snake(container_security())),
            volume_mounts=[*host_library_mounts(), k8s.core.v1.VolumeMountArgs(name="scripts", mount_path=SCRIPT_DIR)],
        )
        volumes = [
            *host_library_volumes("64Gi"),
            k8s.core.v1.VolumeArgs(
                name="scripts", config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(name="smoke-scripts")
            ),
        ]
        pod = k8s.core.v1.PodTemplateSpecArgs(
            metadata=k8s.meta.v1.ObjectMetaArgs(annotations={**rdma_pod_annotations(pool), **topology(pool)}),
            spec=k8s.core.v1.PodSpecArgs(
                subdomain=job_name,
                restart_policy="Never",
                node_selector={NODE_POOL_LABEL: pool.name},
                tolerations=[k8s.core.v1.TolerationArgs(key=GPU_RESOURCE, operator="Exists", effect="NoSchedule")],
                volumes=volumes,
                containers=[container],
                resource_claims=nvlink.pod_claims(pool, job_name, smoke.nccl_nodes),
                **pod_identity(run_as=TRAINER_UID if on_trainer_image else None),
            ),
        )
        domains = nvlink.compute_domains(pool, job_name, smoke.nccl_nodes, self._namespace, self._opts)
        return self._indexed_job(job_name, smoke.nccl_nodes, pod, [script, *domains])
