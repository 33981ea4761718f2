"""`python -m preflight` as users and other tools run it: the tree, the JSON contract, the exit codes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from preflight.checks.crd_schemas import CRD_DIR_ENV, pinned_schema_files
from tests.helpers.plans import PROJECT_DIR, dev_config_values

SECRET_MARKERS = ("4dabf18193072939515e22adb298388d", "BEGIN CERTIFICATE")


def run_preflight(*args, cwd=PROJECT_DIR, crd_dir=None):
    """Preflight as users run it; copies of the project find their schemas in their own preflight/checks/crds/."""
    env = {key: value for key, value in os.environ.items() if key != CRD_DIR_ENV}
    if crd_dir is not None:
        env[CRD_DIR_ENV] = str(crd_dir)
    return subprocess.run(
        [sys.executable, "-m", "preflight", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.fixture(scope="module")
def dev_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("plan") / "plan.json"
    result = run_preflight("--stack", "dev", "--json", str(out))
    return result, json.loads(out.read_text()) if out.exists() else None


def test_dev_plan_tree_and_counts(dev_run):
    result, _ = dev_run
    assert result.returncode == 0, result.stderr
    assert "    NodePool  v6e-16-0  [ct6e-standard-4t, topology 4x4, nodes 4, onDemand, +2 NICs]\n" in result.stdout
    assert "gpu-nodepool-dws  [a4-highgpu-8g, nodes 0..10, dwsQueued, 8 x nvidia-b200, +9 NICs]" in result.stdout
    assert "trainyard-dev-rdma-net  [MTU 8896, RDMA profile]" in result.stdout
    assert "     4  gcp:container/nodePool:NodePool" in result.stdout
    gpu_software = " ".join(result.stdout.split("\nGPU software", 1)[1].split())
    assert "gpu-nodepool-dws: gpuDriverVersion DEFAULT must give 580.95.05 or newer" in gpu_software


def test_json_contract(dev_run):
    _, plan = dev_run
    assert {"project", "stack", "resources"} <= set(plan)
    assert (plan["project"], plan["stack"]) == ("trainyard", "dev")
    for resource in plan["resources"]:
        assert set(resource) - {"aliases", "options"} == {
            "urn",
            "type",
            "name",
            "parent",
            "custom",
            "provider",
            "dependencies",
            "inputs",
        }
        assert resource.get("aliases", ["present only when not empty"])
        assert resource.get("options", {"retainOnDelete": True}) in (
            {"retainOnDelete": True},
            {"deleteBeforeReplace": True},
            {"deleteBeforeReplace": True, "ignoreChanges": ["upgradeSettings"]},  # flex-start pools
        )
        assert resource["urn"].startswith("urn:pulumi:dev::trainyard::")
    pool = next(r for r in plan["resources"] if r["name"] == "v6e-16-0")
    assert pool["inputs"]["nodeCount"] == 4.0 and isinstance(pool["inputs"]["nodeCount"], float)
    assert pool["provider"] == "urn:pulumi:dev::trainyard::pulumi:providers:gcp::default"
    text = json.dumps(plan)
    assert not any(marker in text for marker in SECRET_MARKERS)


@pytest.fixture
def project_copy(tmp_path):
    """A copy of the program beside a stack file the test writes."""
    for item in ("Pulumi.yaml", "__main__.py", "components", "preflight", "policies", "tools", "workloads"):
        source = PROJECT_DIR / item
        if source.is_dir():
            shutil.copytree(source, tmp_path / item, ignore=shutil.ignore_patterns("__pycache__", ".venv*"))
        else:
            shutil.copy(source, tmp_path / item)
    return tmp_path


def write_stack(project, name, values):
    (project / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": values}))


def test_bad_config_exits_2_naming_key_and_value(project_copy):
    values = dev_config_values()
    values["trainyard:tpuSlices"][0]["topology"] = "4x3"
    write_stack(project_copy, "broken", values)
    result = run_preflight("--stack", "broken", cwd=project_copy)
    assert result.returncode == 2
    assert 'trainyard:tpuSlices[0].topology: "4x3" is not a v6e topology' in result.stderr
    assert result.stdout == ""


def test_any_stack_file_works(project_copy):
    values = dev_config_values()
    values["trainyard:gpuPools"] = []
    values["trainyard:jobs"].pop("fsdp", None)
    write_stack(project_copy, "tpu-only", values)
    result = run_preflight("--stack", "tpu-only", cwd=project_copy)
    assert result.returncode == 0, result.stderr
    assert "Plan for trainyard/tpu-only" in result.stdout and "a4-highgpu-8g" not in result.stdout


def test_missing_stack_file_exits_2():
    result = run_preflight("--stack", "nope")
    assert result.returncode == 2
    assert "Pulumi.nope.yaml does not exist" in result.stderr


def test_secure_config_values_are_masked(project_copy):
    values = dev_config_values()
    values["trainyard:hfToken"] = {"secure": "v1:abc"}
    write_stack(project_copy, "secret", values)
    result = run_preflight("--stack", "secret", "--json", str(project_copy / "p.json"), cwd=project_copy)
    # Unknown keys are refused; the message must not echo the ciphertext either.
    assert result.returncode == 2
    assert "trainyard:hfToken: is not a known key" in result.stderr
    assert "v1:abc" not in result.stderr


def test_mandatory_policy_violation_exits_1_naming_the_rule(project_copy):
    values = dev_config_values()
    values["trainyard:network"]["mtu"] = 1500
    write_stack(project_copy, "mtu1500", values)
    out = project_copy / "plan.json"
    result = run_preflight("--stack", "mtu1500", "--json", str(out), cwd=project_copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "accelerator-vpc-mtu" in result.stdout
    plan = json.loads(out.read_text())
    violations = {(v["policy"], v["level"]) for v in plan["policies"]}
    assert ("accelerator-vpc-mtu", "mandatory") in violations
    assert plan["cost"]["maxUsdPerHour"] > plan["cost"]["minUsdPerHour"] > 0


def test_a_lone_copy_checks_every_custom_resource_with_its_own_schemas(project_copy):
    write_stack(project_copy, "dev", dev_config_values())
    result = run_preflight(
        "--stack", "dev", "--strict-schemas", "--json", str(project_copy / "p.json"), cwd=project_copy
    )
    assert result.returncode == 0, result.stdout + result.stderr
    plan = json.loads((project_copy / "p.json").read_text())
    assert plan["schemaProblems"] == [] and plan["schemaUnchecked"] == []
    assert "Not schema-checked" not in result.stdout


def test_without_schemas_preflight_names_what_it_left_unchecked_and_passes(project_copy, tmp_path):
    write_stack(project_copy, "dev", dev_config_values())
    out = project_copy / "p.json"
    result = run_preflight("--stack", "dev", "--json", str(out), cwd=project_copy, crd_dir=tmp_path / "empty")
    assert result.returncode == 0, result.stdout + result.stderr
    plan = json.loads(out.read_text())
    pinned_groups = {relative.split("/")[0] for relative in pinned_schema_files()}
    custom = [m for m in plan["manifests"] if m["apiVersion"].split("/")[0] in pinned_groups]
    assert len(plan["schemaUnchecked"]) == len(custom) > 0
    assert "Not schema-checked (" in result.stdout and "RayJob trainyard/llama3-8b" in result.stdout
    assert "make schemas" in result.stdout and CRD_DIR_ENV in result.stdout


def test_strict_schemas_turns_unchecked_custom_resources_into_exit_1(project_copy, tmp_path):
    write_stack(project_copy, "dev", dev_config_values())
    result = run_preflight("--stack", "dev", "--strict-schemas", cwd=project_copy, crd_dir=tmp_path / "empty")
    assert result.returncode == 1
    assert "an error (--strict-schemas)" in result.stdout and "trainyard: FAILED" in result.stdout


def test_dev_plan_passes_every_check(dev_run):
    result, plan = dev_run
    assert result.returncode == 0, result.stdout + result.stderr
    assert plan["schemaProblems"] == [] and plan["schemaUnchecked"] == []
    assert not [v for v in plan["policies"] if v["level"] == "mandatory"]
    assert {m["kind"] for m in plan["manifests"]} >= {"ClusterQueue", "RayJob", "Job", "GKENetworkParamSet"}


def test_a_minimal_stack_file_plans_and_passes(project_copy):
    minimal = {
        "gcp:project": "my-proj-1",
        "gcp:region": "us-east5",
        "trainyard:zone": "us-east5-b",
        "trainyard:tpuSlices": [{"name": "v6e", "topology": "2x4"}],
    }
    write_stack(project_copy, "mini", minimal)
    out = project_copy / "p.json"
    result = run_preflight("--stack", "mini", "--json", str(out), cwd=project_copy)
    assert result.returncode == 0, result.stdout + result.stderr
    bucket = next(r for r in json.loads(out.read_text())["resources"] if r["type"] == "gcp:storage/bucket:Bucket")
    assert bucket["inputs"]["name"] == "my-proj-1-mini-data"


def test_a_stack_file_that_is_not_yaml_exits_2_without_a_traceback(project_copy):
    (project_copy / "Pulumi.bad.yaml").write_text(
        "config:\n  gcp:project: x\n  trainyard:tpuSlices: [\n    - name: a\n"
    )
    result = run_preflight("--stack", "bad", cwd=project_copy)
    assert result.returncode == 2
    assert "Pulumi.bad.yaml:4:5: " in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 2


def test_the_report_fits_100_columns_and_ends_with_one_verdict_line(dev_run):
    result, plan = dev_run
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert re.fullmatch(
        r"trainyard: OK — \d+ resources, \d+ objects, 0 problems, \$[\d,]+\.\d\d–\$[\d,]+\.\d\d/h", lines[-1]
    )
    replicas = next(m for m in plan["manifests"] if m["kind"] == "RayJob")["spec"]["rayClusterSpec"][
        "workerGroupSpecs"
    ][0]["replicas"]
    assert replicas == 2 and isinstance(replicas, int)  # integral numbers as the provider writes them


def test_a_failure_ends_with_the_failure_verdict_on_the_reports_stream(project_copy):
    values = dev_config_values()
    values["trainyard:jobs"]["ray"]["headCpu"] = "8"
    write_stack(project_copy, "fat-head", values)
    result = run_preflight("--stack", "fat-head", cwd=project_copy)
    assert result.returncode == 1
    assert re.search(r"trainyard: FAILED — \d+ resources, \d+ objects, 1 problem \(1 placement\), \$", result.stdout)


def test_a_key_given_twice_exits_2_in_one_line_as_the_cli_would_refuse_it(project_copy):
    zones = "  trainyard:zone: us-east5-b\n  trainyard:zone: us-east5-c\n"
    (project_copy / "Pulumi.twice.yaml").write_text("config:\n  gcp:project: x\n  gcp:region: us-east5\n" + zones)
    result = run_preflight("--stack", "twice", cwd=project_copy)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert 'Pulumi.twice.yaml:5:3: duplicate key "trainyard:zone" (in the mapping at line 2)' in result.stderr
    assert len(result.stderr.strip().splitlines()) == 2
