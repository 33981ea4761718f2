"""The pod parts both trainers share are built once (components/jobs/pod_parts.py): the MaxText RayJob's pods and
the FSDP Job's pods carry the same bucket mount, identity and security, and the Ray builder keeps nothing between
calls."""

from __future__ import annotations

import dataclasses

from components.config.load import load_stack_config
from components.jobs import pod_parts
from components.jobs.ray_workloads import RayPods, RayWorkloadsArgs
from tests.helpers.plans import as_engine_config, dev_config_values


def _templates(plan) -> dict[str, list[dict]]:
    (rayjob,) = [m for m in plan.manifests if m["kind"] == "RayJob"]
    (job,) = [m for m in plan.manifests if m["kind"] == "Job"]
    cluster = rayjob["spec"]["rayClusterSpec"]
    ray = [cluster["headGroupSpec"]["template"], *(g["template"] for g in cluster["workerGroupSpecs"])]
    return {"ray": ray, "torch": [job["spec"]["template"]]}


def test_both_trainers_pods_carry_the_one_mount_identity_and_security(dev_plan):
    bucket = dev_config_values()["trainyard:storage"]["bucket"]
    for trainer, templates in _templates(dev_plan).items():
        for template in templates:
            spec = template["spec"]
            assert pod_parts.data_volume(bucket, trainer) in spec["volumes"]
            for container in spec["containers"]:
                assert pod_parts.data_mount() in container["volumeMounts"]
            identity = pod_parts.trainer_pod("trainyard-runner")
            assert {key: spec[key] for key in identity} == identity


def test_the_ray_builder_keeps_nothing_between_calls():
    config = load_stack_config(as_engine_config(dev_config_values()), "dev")
    (group,) = config.tpu_slices
    args = RayWorkloadsArgs(config.jobs.ray, (), (), "bucket", "runner", 0, None, "image", None, None)
    pods = RayPods(args)
    secret = [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "token"}}}]
    with_secret = pods.cluster_spec([(group, 2, 2, False)], None, secret)
    without = pods.cluster_spec([(group, 2, 2, False)])
    assert secret[0] in with_secret["headGroupSpec"]["template"]["spec"]["containers"][0]["env"]
    assert secret[0] not in without["headGroupSpec"]["template"]["spec"]["containers"][0]["env"]
    assert without == RayPods(dataclasses.replace(args)).cluster_spec([(group, 2, 2, False)])
