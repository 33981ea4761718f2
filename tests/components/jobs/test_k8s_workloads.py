"""The MaxText RayJob, the RayCluster, the FSDP Job and the smoke jobs, read back from plans, and their
arguments parsed by the trainers' own parsers (workloads/ imports nothing heavy for that)."""

from __future__ import annotations

import base64
import io
import json
import re
import shlex
import subprocess
import zipfile

import pytest

from components.jobs.pod_security import TRAINER_UID
from components.kube import workload_code
from policies.workloads import pod_templates
from tests.helpers.plans import PROJECT_DIR, everything_on, manifest
from tests.helpers.trainer_repo import commit_tiny_trainers
from workloads.fsdp.config import parse_config
from workloads.maxtext.cli import split_maxtext_args
from workloads.maxtext.parallelism import check_parallelism, parse_overrides

GCS_FUSE = {
    "gke-gcsfuse/volumes": "true",
    "gke-gcsfuse/cpu-limit": "0",
    "gke-gcsfuse/memory-limit": "0",
    "gke-gcsfuse/ephemeral-storage-limit": "0",
}


@pytest.fixture(scope="module")
def full_plan(plan_with):
    return plan_with(everything_on)


def entrypoint_words(rayjob):
    return shlex.split(rayjob["spec"]["entrypoint"])


def test_rayjob_metadata_and_lifecycle(dev_plan):
    job = manifest(dev_plan, "RayJob", "llama3-8b")
    assert re.fullmatch(r"llama3-8b-[0-9a-f]{6}", job["metadata"]["name"])
    assert job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "trainyard", "trainyard/workload": "llama3-8b"}
    assert job["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true"}
    assert job["spec"]["shutdownAfterJobFinishes"] is True and job["spec"]["suspend"] is True


def test_rayjob_entrypoint_is_the_trainer_with_slice_facts(dev_plan):
    words = entrypoint_words(manifest(dev_plan, "RayJob", "llama3-8b"))
    assert words[:3] == ["python", "-m", "workloads.maxtext.train"]
    flags, maxtext = split_maxtext_args(words[3:])
    assert flags == [
        "--accelerator-type",
        "TPU-V6E",
        "--topology",
        "4x4",
        "--slices",
        "2",
        "--hosts-per-slice",
        "4",
        "--chips-per-host",
        "4",
        "--max-failures",
        "3",
        "--storage-path",
        "/data/maxtext",
        "--name",
        "llama3-8b",
        "--worker-package",
        "none",
    ]
    overrides = parse_overrides(maxtext)
    expected = {
        "model_name": "llama3-8b",
        "steps": "100",
        "per_device_batch_size": "4",
        "max_target_length": "4096",
        "run_name": "llama3-8b",
        "checkpoint_period": "20",
    }
    assert {key: overrides[key] for key in expected} == expected
    assert overrides["base_output_directory"] == "/data/maxtext"
    mesh = check_parallelism(overrides, devices_per_slice=16, slices=2)
    assert (mesh.ici, mesh.dcn) == ({"fsdp": 4, "tensor": 4}, {"data": 2})


def test_70b_job_shards_fsdp_over_dcn(full_plan):
    overrides = parse_overrides(
        split_maxtext_args(entrypoint_words(manifest(full_plan, "RayJob", "llama3-70b"))[3:])[1]
    )
    assert overrides["remat_policy"] == "full" and overrides["per_device_batch_size"] == "2"
    mesh = check_parallelism(overrides, devices_per_slice=16, slices=2)
    assert (mesh.ici, mesh.dcn) == ({"fsdp": 4, "tensor": 4}, {"fsdp": 2})


def test_worker_group_from_the_slice_facts(dev_plan):
    spec = manifest(dev_plan, "RayJob", "llama3-8b")["spec"]["rayClusterSpec"]
    (group,) = spec["workerGroupSpecs"]
    assert (group["replicas"], group["minReplicas"], group["maxReplicas"], group["numOfHosts"]) == (2, 2, 2, 4)
    assert group["rayStartParams"] == {"metrics-export-port": "8082"}
    pod = group["template"]["spec"]
    (worker,) = pod["containers"]
    assert worker["resources"]["limits"]["google.com/tpu"] == "4" == worker["resources"]["requests"]["google.com/tpu"]
    assert pod["nodeSelector"] == {
        "iam.gke.io/gke-metadata-server-enabled": "true",
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
        "cloud.google.com/gke-tpu-topology": "4x4",
        "trainyard/tpu-slice-group": "v6e-16",  # its own group's flavor, never another group of this shape
    }
    env = {e["name"]: e["value"] for e in worker["env"]}
    assert env["MEGASCALE_NUM_SLICES"] == "2" and env["MEGASCALE_PORT"] == "9915"
    assert env["JAX_PLATFORMS"] == "tpu,cpu" and env["ENABLE_PJRT_COMPATIBILITY"] == "true"
    assert env["LIBTPU_INIT_ARGS"].startswith("--xla_tpu_scoped_vmem_limit_kib=122880 ")
    assert env["LIBTPU_INIT_ARGS"].endswith(" --megascale_grpc_interface_prefixes=eth1,eth2,lo")
    assert pod["resourceClaims"] == [{"name": "netdev", "resourceClaimTemplateName": "dcn-netdev-2"}]
    assert worker["resources"]["claims"] == [{"name": "netdev"}]
    assert pod["serviceAccountName"] == "trainyard-runner" and group["template"]["metadata"]["annotations"] == GCS_FUSE
    mounts = {m["mountPath"]: m["name"] for m in worker["volumeMounts"]}
    assert mounts["/data"] == "gcs-fuse-csi-ephemeral" and mounts["/dev/shm"] == "dshm"
    fuse = next(v for v in pod["volumes"] if v["name"] == "gcs-fuse-csi-ephemeral")["csi"]
    assert fuse["volumeAttributes"] == {
        "bucketName": "trainyard-dev-data",
        "mountOptions": "implicit-dirs,uid=1000,gid=1000,dir-mode=775,file-mode=664,file-cache:max-size-mb:-1",
    }


def test_head_group_ports_and_resources(dev_plan):
    head = manifest(dev_plan, "RayJob", "llama3-8b")["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    (container,) = head["containers"]
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {
        "gcs-server": 6379,
        "dashboard": 8265,
        "client": 10001,
    }
    assert container["resources"] == {"limits": {"memory": "16Gi"}, "requests": {"cpu": "4", "memory": "16Gi"}}
    assert container["image"].startswith("us-east5-docker.pkg.dev/trainyard-dev/trainyard/maxtext:")


def test_dranet_claim_template(dev_plan):
    template = manifest(dev_plan, "ResourceClaimTemplate", "dcn-netdev-2")
    assert template["apiVersion"] == "resource.k8s.io/v1"
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"] == {"deviceClassName": "netdev.google.com", "allocationMode": "ExactCount", "count": 2}


def test_elastic_job_takes_min_and_max_slices_and_leaves_megascale_to_ray(plan_with):
    def elastic(values):
        values["trainyard:jobs"]["maxtext"][0].update(minSlices=1, maxSlices=2, maxFailures=3)

    job = manifest(plan_with(elastic), "RayJob", "llama3-8b")
    assert job["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"] == "true"
    flags, maxtext = split_maxtext_args(entrypoint_words(job)[3:])
    assert flags[flags.index("--min-slices") + 1] == "1" and flags[flags.index("--max-slices") + 1] == "2"
    assert parse_overrides(maxtext)["dcn_data_parallelism"] == "-1"
    for slices in (1, 2):
        assert check_parallelism(parse_overrides(maxtext), 16, slices).dcn == ({"data": slices} if slices > 1 else {})
    (group,) = job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert (group["minReplicas"], group["maxReplicas"]) == (1, 2)
    assert "MEGASCALE_NUM_SLICES" not in {e["name"] for e in group["template"]["spec"]["containers"][0]["env"]}


def test_standalone_raycluster_when_enabled(full_plan):
    cluster = manifest(full_plan, "RayCluster", "maxtext")
    assert cluster["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "trainyard"}
    assert [g["groupName"] for g in cluster["spec"]["workerGroupSpecs"]] == ["v6e-16"]


def test_each_trainers_code_is_content_addressed_and_mounted(dev_plan):
    archive = workload_code.build_archive("maxtext", PROJECT_DIR)
    config_map = manifest(dev_plan, "ConfigMap", archive.config_map_name)
    assert config_map["immutable"] is True
    data = base64.b64decode(config_map["binaryData"]["workloads.zip"])
    assert data == archive.data
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert "trainyard/workloads/maxtext/train.py" in names and not any("__pycache__" in n for n in names)
    assert not any("/fsdp/" in name for name in names)
    job = manifest(dev_plan, "RayJob", "llama3-8b")
    assert job["spec"]["runtimeEnvYAML"] == "working_dir: file:///opt/trainyard/code/workloads.zip\n"
    head = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    assert {"name": "trainyard-code", "configMap": {"name": archive.config_map_name}} in head["volumes"]
    fsdp = workload_code.build_archive("fsdp", PROJECT_DIR)
    volumes = manifest(dev_plan, "Job", "llama31-70b-fsdp")["spec"]["template"]["spec"]["volumes"]
    assert {"name": "trainyard-code", "configMap": {"name": fsdp.config_map_name}} in volumes


def test_a_code_name_follows_its_trainers_tracked_files_only(tmp_path):
    commit_tiny_trainers(tmp_path)
    before = {trainer: workload_code.build_archive(trainer, tmp_path) for trainer in ("fsdp", "maxtext")}
    (tmp_path / "workloads/fsdp/scratch.py").write_text("untracked\n")
    (tmp_path / "workloads/fsdp/notes.md").write_text("not shipped\n")
    assert {trainer: workload_code.build_archive(trainer, tmp_path) for trainer in before} == before
    (tmp_path / "workloads/fsdp/train.py").write_text("# changed\n")
    after = {trainer: workload_code.build_archive(trainer, tmp_path) for trainer in before}
    assert after["maxtext"] == before["maxtext"]
    assert after["fsdp"].config_map_name != before["fsdp"].config_map_name
    assert after["fsdp"].config_map_name.startswith("workloads-fsdp-")


def test_the_code_archive_is_found_from_the_project_root_and_never_ships_empty(tmp_path):
    assert workload_code.PROJECT_DIR == PROJECT_DIR
    with pytest.raises(FileNotFoundError, match="no workloads/ package under"):
        workload_code.build_archive("fsdp", tmp_path)


def test_fsdp_job(dev_plan):
    job = manifest(dev_plan, "Job", "llama31-70b-fsdp")
    assert re.fullmatch(r"llama31-70b-fsdp-[0-9a-f]{6}", job["metadata"]["name"])
    labels = {"kueue.x-k8s.io/queue-name": "trainyard", "trainyard/workload": "llama31-70b-fsdp"}
    assert job["metadata"]["labels"] == labels
    assert job["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    spec = job["spec"]
    shape = ("suspend", "completionMode", "completions", "parallelism", "backoffLimit")
    # Three resumptions of both nodes' pods; drains, preemptions and reclaims do not count.
    assert tuple(spec[key] for key in shape) == (True, "Indexed", 2, 2, 6)
    # A node whose driver cannot run the image fails the Job at once: another pod would land on the same kind.
    assert spec["podFailurePolicy"] == {
        "rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
            {"action": "FailJob", "onExitCodes": {"containerName": "trainer", "operator": "In", "values": [78]}},
        ]
    }
    assert spec["template"]["spec"]["terminationGracePeriodSeconds"] == 300
    assert spec["ttlSecondsAfterFinished"] == 3 * 24 * 3600
    pod = spec["template"]
    annotations = pod["metadata"]["annotations"]
    assert annotations["provreq.kueue.x-k8s.io/maxRunDurationSeconds"] == "7200"
    assert annotations["networking.gke.io/default-interface"] == "eth0"
    interfaces = {i["interfaceName"]: i["network"] for i in json.loads(annotations["networking.gke.io/interfaces"])}
    assert interfaces == {"eth0": "default", "eth1": "gvnic-1", **{f"eth{i + 2}": f"rdma-{i}" for i in range(8)}}
    (container,) = pod["spec"]["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["NCCL_NET"] == "gIB" and env["NCCL_TUNER_CONFIG_PATH"] == "/usr/local/gib/configs/tuner_config_a4.txtpb"
    assert env["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64" and env["NCCL_IB_GID_INDEX"] == "3"
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["library-dir-host"]["hostPath"]["path"] == "/home/kubernetes/bin/nvidia"
    assert volumes["gib"]["hostPath"]["path"] == "/home/kubernetes/bin/gib"
    assert volumes["shared-memory"]["emptyDir"]["medium"] == "Memory"
    assert (
        "file-cache:parallel-downloads-per-file:100"
        in volumes["gcs-fuse-csi-ephemeral"]["csi"]["volumeAttributes"]["mountOptions"]
    )
    assert pod["spec"]["subdomain"] == "llama31-70b-fsdp"
    service = manifest(dev_plan, "Service", "llama31-70b-fsdp")["spec"]
    assert service["clusterIP"] == "None" and service["selector"] == {"trainyard/workload": "llama31-70b-fsdp"}
    assert pod["metadata"]["labels"] == {"trainyard/workload": "llama31-70b-fsdp"}
    (job_name,) = [e for e in container["env"] if e["name"] == "JOB_NAME"]
    assert job_name["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.labels['batch.kubernetes.io/job-name']"}}
    assert service["ports"][0]["port"] == 29400


def test_fsdp_launcher_flags_parse_with_the_trainer(dev_plan):
    script = manifest(dev_plan, "Job", "llama31-70b-fsdp")["spec"]["template"]["spec"]["containers"][0]["args"][0]
    # The words the pod's shell hands torchrun, with the variables Kubernetes sets.
    echo = 'printf "%s\\n" ' + script.splitlines()[-1].removeprefix("exec ")
    env = {"PATH": "/usr/bin:/bin", "JOB_NAME": "llama31-70b-fsdp-0a1b2c", "JOB_COMPLETION_INDEX": "1"}
    launch = subprocess.run(["bash", "-c", echo], env=env, capture_output=True, text=True, check=True).stdout.split(
        "\n"
    )
    assert launch[:7] == [
        "torchrun",
        "--nnodes=2",
        "--nproc_per_node=8",
        "--node_rank=1",
        "--rdzv_backend=c10d",
        "--rdzv_id=llama31-70b-fsdp",
        "--shutdown_timeout=285",
    ]
    assert "--rdzv_endpoint=llama31-70b-fsdp-0a1b2c-0.llama31-70b-fsdp:29400" in launch
    trainer_flags = [word for word in launch[launch.index("workloads.fsdp.train") + 1 :] if word]
    config = parse_config(trainer_flags, environ={})
    shape = (config.per_device_train_batch_size, config.gradient_accumulation_steps, config.activation_checkpointing)
    assert (config.model_id, config.max_seq_length, shape) == ("meta-llama/Llama-3.1-70B", 512, (32, 2, True))
    assert config.output_dir == "/data/fsdp/llama31-70b-fsdp/llama31-70b-fsdp-0a1b2c"


def test_smoke_jobs(full_plan):
    # One check per slice, held to its own pool and to a deadline.
    for index in (0, 1):
        jax = manifest(full_plan, "Job", f"smoke-jax-v6e-16-{index}")
        assert jax["spec"]["template"]["spec"]["nodeSelector"]["cloud.google.com/gke-nodepool"] == f"v6e-16-{index}"
        assert jax["spec"]["activeDeadlineSeconds"] == 1800
    assert (jax["spec"]["completions"], jax["spec"]["parallelism"], jax["spec"]["completionMode"]) == (4, 4, "Indexed")
    (container,) = jax["spec"]["template"]["spec"]["containers"]
    assert "assert count == 16" in container["command"][2]
    assert container["resources"]["limits"] == {"google.com/tpu": "4"}
    nccl = manifest(full_plan, "Job", "smoke-nccl-gpu-nodepool-dws")
    assert nccl["spec"]["completions"] == 2
    command = nccl["spec"]["template"]["spec"]["containers"][0]["command"][2]
    assert "--nproc_per_node=8" in command and command.endswith("/smoke/allgather.py")
    assert "allgather.py" in manifest(full_plan, "ConfigMap", "smoke-scripts")["data"]
    # Its flavor places by topology, beside flavors without: Kueue admits only a pod set that asks for one.
    annotations = nccl["spec"]["template"]["metadata"]["annotations"]
    assert annotations["kueue.x-k8s.io/podset-preferred-topology"] == "cloud.google.com/gce-topology-block"


def nccl_smoke_pod(plan):
    return manifest(plan, "Job", "smoke-nccl-gpu-nodepool-dws")["spec"]["template"]["spec"]


def test_the_nccl_smoke_runs_the_fine_tunes_image_as_its_user(full_plan):
    pod = nccl_smoke_pod(full_plan)
    trainer = manifest(full_plan, "Job", "llama31-70b-fsdp")["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == trainer["containers"][0]["image"]
    assert pod["securityContext"]["runAsUser"] == TRAINER_UID
    # The trainer's driver check runs first and says why a node cannot run the image.
    assert pod["containers"][0]["command"][2].startswith("python -m workloads.fsdp.cuda_check && exec torchrun ")


def test_the_nccl_smoke_builds_the_trainer_image_without_the_fine_tune(plan_with):
    def smoke_only(values):
        values["trainyard:jobs"]["smoke"]["enabled"] = True
        values["trainyard:jobs"]["fsdp"][0]["enabled"] = False

    plan = plan_with(smoke_only)
    assert sorted(r.name for r in plan.of_type("docker-build:index:Image")) == ["image-fsdp", "image-maxtext"]
    assert "/trainyard/fsdp:" in nccl_smoke_pod(plan)["containers"][0]["image"]
    assert not [m for m in plan.manifests if m["metadata"]["name"].startswith("llama31-70b-fsdp")]


def test_a_named_nccl_smoke_image_runs_as_its_own_user(plan_with):
    def named(values):
        values["trainyard:jobs"]["smoke"] = {"enabled": True, "ncclImage": "nvcr.io/nvidia/pytorch:26.04-py3"}

    pod = nccl_smoke_pod(plan_with(named))
    assert pod["containers"][0]["image"] == "nvcr.io/nvidia/pytorch:26.04-py3"
    assert "runAsUser" not in pod["securityContext"]
    assert pod["containers"][0]["command"][2].startswith("exec torchrun ")  # that image has no trainer code


def workload_pods(plan):
    """(object name, pod spec) of every pod the workload namespace would run."""
    return [
        (m["metadata"]["name"], template.spec)
        for m in plan.manifests
        if m["metadata"].get("namespace") == "trainyard"
        for template in pod_templates(m["kind"], m)
    ]


def test_no_workload_pod_is_privileged_or_holds_capabilities_or_a_token(full_plan):
    pods = workload_pods(full_plan)
    names = " ".join(name for name, _ in pods)
    for workload in ("llama31-70b-fsdp-", "llama3-8b-", "maxtext", "smoke-jax-v6e-16-0", "smoke-nccl-gpu-nodepool-dws"):
        assert workload in names
    for name, pod in pods:
        assert pod["automountServiceAccountToken"] is False, name
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for container in pod["containers"]:
            assert container["securityContext"] == {
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"]},
            }, name


def test_the_trainers_run_as_the_uid_their_images_and_bucket_mounts_use(full_plan):
    trainer_pods = [(n, p) for n, p in workload_pods(full_plan) if not n.startswith("smoke-")]
    assert trainer_pods
    for name, pod in trainer_pods:
        context = pod["securityContext"]
        assert context["runAsNonRoot"] is True and context["runAsUser"] == TRAINER_UID, name
        fuse = next(v for v in pod["volumes"] if v["name"] == "gcs-fuse-csi-ephemeral")
        assert f"uid={TRAINER_UID}" in fuse["csi"]["volumeAttributes"]["mountOptions"].split(","), name
    dockerfile = (PROJECT_DIR / "workloads" / "fsdp" / "Dockerfile").read_text()
    assert re.findall(r"^USER (\S+)$", dockerfile, re.MULTILINE) == [f"{TRAINER_UID}:{TRAINER_UID}"]
    assert "FROM rayproject/ray:" in (PROJECT_DIR / "workloads" / "maxtext" / "Dockerfile").read_text()
