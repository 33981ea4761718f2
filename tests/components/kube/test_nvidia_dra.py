"""Multi-node NVLink on A4X: NVIDIA's DRA driver applied object by object, a ComputeDomain per job spanning VMs,
the pods' channel claims, and what Kueue, the pack and the diff make of them (its own messages)."""

from __future__ import annotations

import copy
import functools
import json

import pytest
import yaml

from components.config.load import load_stack_config
from components.facts import gke, nvidia_dra, releases
from components.facts.host_workloads import HOST_WORKLOADS, NVIDIA_DRA_KUBELET_PLUGIN
from components.kube.nvidia_dra import spans_nvlink_domain
from preflight.checks.admission import check_admission
from preflight.checks.policy_runner import evaluate
from preflight.diff import compare
from tests.helpers.plans import PROJECT_DIR, manifest, one, quotas

JOB = "llama31-8b-fsdp"
COMPUTE_DOMAIN = "kubernetes:resource.nvidia.com/v1beta1:ComputeDomain"


@functools.cache
def plan():
    from preflight.engine.plan import plan_stack

    return plan_stack("a4x", PROJECT_DIR)


def test_every_object_of_the_rendered_chart_is_a_resource_of_the_a4x_plan():
    rendered = nvidia_dra.release_objects()
    planned = {(m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]) for m in plan().manifests}
    wanted = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in rendered}
    assert wanted <= planned
    kinds = {kind for kind, _, _ in wanted}
    assert {"CustomResourceDefinition", "DaemonSet", "Deployment", "DeviceClass", "ClusterRole"} <= kinds
    # GPU resources stay with GKE's device plugin: only the ComputeDomain device classes are made.
    classes = {name for kind, _, name in wanted if kind == "DeviceClass"}
    assert classes == {nvidia_dra.CHANNEL_DEVICE_CLASS, "compute-domain-daemon.nvidia.com"}
    quota = manifest(plan(), "ResourceQuota", nvidia_dra.CRITICAL_QUOTA)
    assert quota["metadata"]["namespace"] == nvidia_dra.NAMESPACE
    assert quota["spec"]["scopeSelector"]["matchExpressions"][0]["values"] == [
        "system-node-critical",
        "system-cluster-critical",
    ]


def test_the_render_is_pinned_and_a_changed_file_is_refused(tmp_path, monkeypatch):
    pins = json.loads(releases.SOURCES.read_text())
    pin = pins[nvidia_dra.RELEASE_KEY]
    assert pin["repo"] == nvidia_dra.REPO and nvidia_dra.VERSION in pin["file"]
    (tmp_path / "sources.json").write_text(json.dumps(pins))
    text = (releases.RELEASES / pin["file"]).read_text()
    (tmp_path / pin["file"]).write_text(text.replace("value: '4'", "value: '6'", 1))
    monkeypatch.setattr(releases, "RELEASES", tmp_path)
    monkeypatch.setattr(releases, "SOURCES", tmp_path / "sources.json")
    nvidia_dra._release_text.cache_clear()
    try:
        with pytest.raises(releases.ReleaseError, match="gen_nvidia_dra"):
            nvidia_dra.release_objects()
    finally:
        nvidia_dra._release_text.cache_clear()


def test_the_controller_runs_on_the_system_pool_and_the_plugin_on_nvl72_nodes_only():
    controller = manifest(plan(), "Deployment", nvidia_dra.CONTROLLER)["spec"]["template"]["spec"]
    assert controller["nodeSelector"] == {gke.NODE_POOL_LABEL: "system"}
    (container,) = controller["containers"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    plugin = manifest(plan(), "DaemonSet", nvidia_dra.KUBELET_PLUGIN)["spec"]["template"]["spec"]
    (term,) = plugin["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    expression = {"key": gke.GPU_ACCELERATOR_LABEL, "operator": "In", "values": ["nvidia-gb200"]}
    assert term["matchExpressions"] == [expression]
    assert {"key": "kubernetes.io/arch", "operator": "Exists", "effect": "NoSchedule"} in plugin["tolerations"]
    assert {"key": gke.GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"} in plugin["tolerations"]
    env = {e["name"]: e.get("value") for e in plugin["containers"][0]["env"]}
    assert env["NVIDIA_DRIVER_ROOT"] == "/home/kubernetes/bin/nvidia"  # GKE's, not the chart's "/"


def test_a_job_spanning_vms_gets_its_compute_domain_and_claims_its_channel():
    domain = manifest(plan(), "ComputeDomain", nvidia_dra.compute_domain_name(JOB))
    template = nvidia_dra.channel_template_name(JOB)
    assert domain["spec"] == {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": template}}}
    spec = manifest(plan(), "Job", JOB)["spec"]["template"]["spec"]
    assert spec["resourceClaims"] == [
        {"name": "rdma", "resourceClaimTemplateName": "rdma-nvidia-gb200"},
        {"name": nvidia_dra.CHANNEL_CLAIM, "resourceClaimTemplateName": template},
    ]
    assert spec["containers"][0]["resources"]["claims"] == [{"name": "rdma"}, {"name": nvidia_dra.CHANNEL_CLAIM}]
    (resource,) = [r for r in plan().of_type(COMPUTE_DOMAIN) if r.name == f"compute-domain-{JOB}"]
    assert resource.replace_on_changes == ["spec"] and resource.delete_before_replace
    (job,) = [r for r in plan().of_type("kubernetes:batch/v1:Job") if r.name == f"job-{JOB}"]
    assert resource.urn in job.dependencies
    # The CRD exists before any ComputeDomain: the job's target waits for every object of the driver.
    (crd,) = [r for r in plan().resources if r.name == "computedomains.resource.nvidia.com"]
    assert crd.urn in resource.dependencies


def test_kueue_counts_one_channel_per_pod_against_the_flavors_nodes():
    config_map = one(plan(), "kubernetes:core/v1:ConfigMap", "kueue-system/kueue-manager-config")
    mappings = yaml.safe_load(config_map["data"]["controller_manager_config.yaml"])["resources"]["deviceClassMappings"]
    assert {"name": nvidia_dra.CHANNEL_RESOURCE, "deviceClassNames": [nvidia_dra.CHANNEL_DEVICE_CLASS]} in mappings
    assert quotas(manifest(plan(), "ClusterQueue", "trainyard"))["a4x"][nvidia_dra.CHANNEL_RESOURCE] == 18


def _resources_without(drop) -> list[dict]:
    return [copy.deepcopy(r) for r in plan().to_json()["resources"] if not drop(r)]


def test_kueue_cannot_find_the_channel_template_without_the_driver_or_the_domain():
    """The template exists only once the driver's controller has made it for a ComputeDomain: without either,
    Kueue's workload controller fails to read it (pkg/dra/claims.go) and never admits the job."""
    admitted, problems = check_admission(plan().to_json()["resources"])
    assert not problems and len(admitted) == 2
    for drop in (
        lambda r: r["type"] == COMPUTE_DOMAIN,
        lambda r: r["type"] == "kubernetes:apps/v1:Deployment" and r["name"].endswith(nvidia_dra.CONTROLLER),
    ):
        _, problems = check_admission(_resources_without(drop))
        reasons = {p.reason for p in problems}
        assert (
            f"failed to get claim spec for ResourceClaimTemplate {nvidia_dra.channel_template_name(JOB)} in podset main"
        ) in reasons


def test_kueue_refuses_the_channel_when_its_device_class_is_not_mapped():
    resources = _resources_without(lambda r: False)
    for resource in resources:
        if resource["name"] == "kueue-system/kueue-manager-config":
            data = resource["inputs"]["data"]
            config = yaml.safe_load(data["controller_manager_config.yaml"])
            kept = [m for m in config["resources"]["deviceClassMappings"] if m["name"] != nvidia_dra.CHANNEL_RESOURCE]
            config["resources"]["deviceClassMappings"] = kept
            data["controller_manager_config.yaml"] = yaml.safe_dump(config)
    _, problems = check_admission(resources)
    assert {p.reason for p in problems} == {
        f"DeviceClass {nvidia_dra.CHANNEL_DEVICE_CLASS} is not mapped in DRA configuration for podset main"
    }


def test_the_kubelet_plugins_shape_is_the_renders():
    """The record the pack exempts is what the vendored render runs: its host paths, privileged containers,
    image and account."""
    (daemon_set,) = [o for o in nvidia_dra.release_objects() if o["kind"] == "DaemonSet"]
    pod = daemon_set["spec"]["template"]["spec"]
    containers = pod["initContainers"] + pod["containers"]
    shape = NVIDIA_DRA_KUBELET_PLUGIN
    assert {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v} == shape.host_paths
    assert tuple(c["name"] for c in containers if c["securityContext"].get("privileged")) == shape.privileged_containers
    assert {c["image"] for c in containers} == set(shape.images)
    assert pod["serviceAccountName"] == shape.service_account
    assert (daemon_set["metadata"]["namespace"], daemon_set["metadata"]["name"]) == (shape.namespace, shape.name)


def test_the_pack_exempts_the_kubelet_plugin_in_its_shape_only():
    assert HOST_WORKLOADS[NVIDIA_DRA_KUBELET_PLUGIN.ref] is NVIDIA_DRA_KUBELET_PLUGIN
    plan_json = plan().to_json()
    assert [v.policy for v in evaluate(plan_json, {}) if v.level == "mandatory"] == []
    widened = copy.deepcopy(plan_json)
    for resource in widened["resources"]:
        if resource["name"] == f"{nvidia_dra.NAMESPACE}/{nvidia_dra.KUBELET_PLUGIN}":
            volumes = resource["inputs"]["spec"]["template"]["spec"]["volumes"]
            volumes.append({"name": "root", "hostPath": {"path": "/"}})
    violations = [v for v in evaluate(widened, {}) if v.level == "mandatory"]
    assert violations and all("outside its shape (hostPath /)" in v.message for v in violations)


def test_a_compute_domain_is_replaced_not_updated_and_the_api_refusal_is_named_otherwise():
    base = plan().to_json()
    head = copy.deepcopy(base)
    for resource in head["resources"]:
        if resource["type"] == COMPUTE_DOMAIN:
            resource["inputs"]["spec"]["numNodes"] = 2
    diff = compare.compare(base, head)
    assert {c.type for c in diff.replaced} == {COMPUTE_DOMAIN}
    assert not [v for v in diff.api_verdicts if v.verdict == "refused"]
    for resource in head["resources"]:  # without replaceOnChanges the API refuses the update
        resource.get("options", {}).pop("replaceOnChanges", None)
    diff = compare.compare(base, head)
    refused = [v for v in diff.api_verdicts if v.rule == "compute-domain-spec"]
    assert refused and refused[0].verdict == "refused" and "spec is immutable" in refused[0].says


def test_other_gpu_machines_get_no_driver_and_no_domain(dev_plan):
    assert not [m for m in dev_plan.manifests if m["kind"] == "ComputeDomain"]
    assert not [m for m in dev_plan.manifests if m["metadata"].get("namespace") == nvidia_dra.NAMESPACE]


def test_a_single_node_job_claims_no_channel():
    """NVLink inside one VM needs no IMEX channel: a 1-node job gets no domain, while the driver stays for the pool."""
    from preflight.engine.plan import plan_config
    from preflight.engine.stack_files import read_stack_files

    files = read_stack_files(PROJECT_DIR, "a4x")
    jobs = json.loads(files.config["trainyard:jobs"])
    jobs["fsdp"][0]["nodes"] = 1
    jobs["smoke"]["enabled"] = False
    single = plan_config(files.project, "a4x", files.main, {**files.config, "trainyard:jobs": json.dumps(jobs)})
    assert not [m for m in single.manifests if m["kind"] == "ComputeDomain"]
    spec = manifest(single, "Job", JOB)["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["resourceClaims"]] == ["rdma"]
    assert manifest(single, "DaemonSet", nvidia_dra.KUBELET_PLUGIN)
    (pool,) = load_stack_config(plan().config, "a4x").gpu_pools
    assert spans_nvlink_domain(pool, 2) and not spans_nvlink_domain(pool, 1)


def test_the_pack_refuses_a_channel_claim_no_driver_will_make():
    plan_json = plan().to_json()
    without = {
        **plan_json,
        "resources": _resources_without(lambda r: r["name"].endswith(f"/{nvidia_dra.CONTROLLER}")),
    }
    fired = [v.message for v in evaluate(without, {}) if v.policy == "pod-claims-name-a-template"]
    template = nvidia_dra.channel_template_name(JOB)
    assert any(m.startswith(f"Job 'trainyard/{JOB}-") and f"ResourceClaimTemplate '{template}'" in m for m in fired)
    assert all(nvidia_dra.channel_template_name("") in message for message in fired), fired
