"""Numbers that must agree across layers, for stacks that differ from dev only in `topology` and `count`.

Slice facts (topology.py) -> node pools -> Kueue quotas -> Ray worker groups -> the trainer's flags and
MaxText's mesh -> smoke jobs; and NIC names in pod annotations -> Network objects. Each variant re-plans the
program, so every number below is what the program derived, checked with the trainers' own parsers.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex

import pytest

from components.facts import gpu_machines, node_shapes, topology
from tests.helpers.plans import manifest, quotas
from workloads.maxtext.cli import add_slice_flags, slice_facts_from, split_maxtext_args
from workloads.maxtext.parallelism import check_elastic_parallelism, parse_overrides

# Within the dev pod range (/19: 32 nodes with the system and A4 pools).
# Single-host shapes (2x2, 2x4 on ct6e-standard-8t) come one to a group: GKE builds multislice of multi-host ones.
VARIANTS = [("4x4", 2), ("4x8", 2), ("2x4", 1), ("8x8", 1), ("2x2", 1)]


def reshaped(tpu_topology: str, count: int):
    def edit(values):
        values["trainyard:tpuSlices"][0].update(topology=tpu_topology, count=count)
        values["trainyard:jobs"]["smoke"]["enabled"] = True

    return edit


@pytest.fixture(scope="module", params=VARIANTS, ids=[f"{t}x{c}" for t, c in VARIANTS])
def variant(request, plan_with):
    tpu_topology, count = request.param
    return tpu_topology, count, topology.tpu_slice("v6e", tpu_topology), plan_with(reshaped(tpu_topology, count))


def trainer_view(rayjob):
    """What the trainer sees: its slice facts (parsed by its own flags) and MaxText's arguments."""
    words = shlex.split(rayjob["spec"]["entrypoint"])
    flags, maxtext = split_maxtext_args(words[3:])
    parser = argparse.ArgumentParser()
    add_slice_flags(parser)
    known, _ = parser.parse_known_args(flags)
    return slice_facts_from(known), parse_overrides(maxtext)


def test_node_pools_follow_the_slices(variant):
    _, count, tpu, plan = variant
    pools = [p for p in plan.of_type("gcp:container/nodePool:NodePool") if p.name.startswith("v6e-16-")]
    assert len(pools) == count
    assert {p.inputs["nodeCount"] for p in pools} == {tpu.vms}
    assert {p.inputs["nodeConfig"]["machineType"] for p in pools} == {tpu.machine_type}


def test_kueue_tpu_quota_is_what_the_slice_pools_hold(variant):
    _, count, tpu, plan = variant
    pools = [p for p in plan.of_type("gcp:container/nodePool:NodePool") if p.name.startswith("v6e-16-")]
    held = sum(
        p.inputs["nodeCount"] * tpu.generation.chips_per_machine_type[p.inputs["nodeConfig"]["machineType"]]
        for p in pools
    )
    flavor = quotas(manifest(plan, "ClusterQueue", "trainyard"))["v6e-16"]
    assert flavor["google.com/tpu"] == held == count * tpu.chips
    shape = node_shapes.machine_shape(tpu.machine_type)
    assert flavor["cpu"] == str(count * tpu.vms * shape.vcpus)


def test_ray_workers_match_the_trainers_worker_count(variant):
    _, count, tpu, plan = variant
    job = manifest(plan, "RayJob", "llama3-8b")
    (group,) = job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    facts, _ = trainer_view(job)
    assert group["replicas"] * group["numOfHosts"] == count * tpu.vms == facts.num_workers
    assert group["numOfHosts"] == facts.hosts_per_slice == tpu.vms


def test_tpu_per_pod_is_chips_per_vm(variant):
    _, _, tpu, plan = variant
    job = manifest(plan, "RayJob", "llama3-8b")
    (group,) = job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    (worker,) = group["template"]["spec"]["containers"]
    facts, _ = trainer_view(job)
    assert int(worker["resources"]["limits"]["google.com/tpu"]) == tpu.chips_per_vm == facts.chips_per_host
    assert group["template"]["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"] == facts.topology


def test_maxtext_mesh_multiplies_to_chips_and_slices(variant):
    _, count, tpu, plan = variant
    facts, overrides = trainer_view(manifest(plan, "RayJob", "llama3-8b"))
    ici = {k: int(v) for k, v in overrides.items() if k.startswith("ici_")}
    dcn = {k: int(v) for k, v in overrides.items() if k.startswith("dcn_")}
    assert math.prod(ici.values()) == tpu.chips == facts.chips_per_slice
    assert math.prod(dcn.values()) == count == facts.slices
    check_elastic_parallelism(overrides, facts.chips_per_slice, facts.slice_counts)  # the trainer's own refusal


def test_megascale_and_dranet_only_across_slices(variant):
    _, count, _, plan = variant
    (group,) = manifest(plan, "RayJob", "llama3-8b")["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    env = {e["name"]: e["value"] for e in group["template"]["spec"]["containers"][0]["env"]}
    templates = [m for m in plan.manifests if m["kind"] == "ResourceClaimTemplate"]
    if count > 1:
        assert env["MEGASCALE_NUM_SLICES"] == str(count)
        assert (
            group["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
            == templates[0]["metadata"]["name"]
        )
        dcn_networks = [n for n in plan.of_type("gcp:compute/network:Network") if "-dcn-" in n.name]
        assert templates[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == len(dcn_networks)
    else:
        assert "MEGASCALE_NUM_SLICES" not in env and not templates
        assert "resourceClaims" not in group["template"]["spec"]


def test_smoke_job_expects_the_slices_chips(variant):
    _, _, tpu, plan = variant
    job = manifest(plan, "Job", "smoke-jax-v6e-16-0")
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == tpu.vms
    assert f"assert count == {tpu.chips}" in job["spec"]["template"]["spec"]["containers"][0]["command"][2]


def test_pod_nics_are_network_objects(variant):
    _, _, _, plan = variant
    networks = {m["metadata"]["name"] for m in plan.manifests if m["kind"] == "Network"}
    machine = gpu_machines.gpu_machine("a4-highgpu-8g")
    for job in (manifest(plan, "Job", "llama31-70b-fsdp"), manifest(plan, "Job", "smoke-nccl-gpu-nodepool-dws")):
        annotation = job["spec"]["template"]["metadata"]["annotations"]["networking.gke.io/interfaces"]
        named = [i["network"] for i in json.loads(annotation) if i["network"] != "default"]
        assert named == list(machine.additional_network_names)
        assert set(named) == networks
