"""What the pods will do, run for real here: Ray unpacks the code archive from a file:// working_dir and
imports the trainer package; the NCCL smoke script all-gathers correctly (gloo on CPU, two ranks); the FSDP pod's
driver check fails the Job on a node without a usable driver.

These run in the trainers' venvs (.venv-maxtext has Ray, .venv-fsdp has torch), built by `make test`;
without them the tests are skipped and say which venv is missing.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from components.jobs.smoke_workloads import ALLGATHER_SCRIPT
from components.kube import workload_code
from tests.helpers.plans import PROJECT_DIR, manifest

RAY_PYTHON = PROJECT_DIR / ".venv-maxtext" / "bin" / "python"
TORCHRUN = PROJECT_DIR / ".venv-fsdp" / "bin" / "torchrun"
FSDP_BIN = TORCHRUN.parent

RAY_CHECK = """
import sys, ray
ray.init(num_cpus=1, include_dashboard=False, runtime_env={"working_dir": sys.argv[1]})

@ray.remote
def facts():
    import os
    from workloads.maxtext.slices import chips_in_topology
    return chips_in_topology("4x4"), sorted(os.listdir("."))

print(ray.get(facts.remote()))
"""


@pytest.mark.skipif(not RAY_PYTHON.exists(), reason="needs .venv-maxtext (make test builds it)")
def test_ray_imports_the_trainer_from_the_archive(tmp_path):
    archive = workload_code.build_archive("maxtext", PROJECT_DIR)
    zip_path = tmp_path / "workloads.zip"
    zip_path.write_bytes(archive.data)
    result = subprocess.run(
        [str(RAY_PYTHON), "-c", RAY_CHECK, f"file://{zip_path}"],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "(16, ['workloads'])" in result.stdout


@pytest.mark.skipif(not TORCHRUN.exists(), reason="needs .venv-fsdp (make test builds it)")
def test_allgather_smoke_script_checks_every_rank(tmp_path):
    script = tmp_path / "allgather.py"
    script.write_text(ALLGATHER_SCRIPT)
    env = {
        **os.environ,
        "SMOKE_BACKEND": "gloo",
        "SMOKE_MEGABYTES": "1",
        "SMOKE_ITERATIONS": "3",
        "OMP_NUM_THREADS": "1",
    }
    result = subprocess.run(
        [
            str(TORCHRUN),
            "--nnodes=1",
            "--nproc_per_node=2",
            "--rdzv_backend=c10d",
            "--rdzv_endpoint=127.0.0.1:0",
            str(script),
        ],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "all_gather: world 2, 2 MiB gathered" in result.stdout


@pytest.mark.skipif(not TORCHRUN.exists(), reason="needs .venv-fsdp (make test builds it)")
def test_the_fsdp_pods_driver_check_exits_with_the_code_that_fails_the_job(dev_plan):
    spec = manifest(dev_plan, "Job", "llama31-70b-fsdp")["spec"]
    script = spec["template"]["spec"]["containers"][0]["args"][0].splitlines()
    check = script[script.index(next(line for line in script if line.startswith("exec torchrun"))) - 1]
    (fail_job,) = [rule for rule in spec["podFailurePolicy"]["rules"] if rule["action"] == "FailJob"]
    # This machine has no NVIDIA driver: what a pod sees on a node whose driver cannot run the image.
    result = subprocess.run(
        ["bash", "-c", check],
        check=False,
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATH": f"{FSDP_BIN}:{os.environ['PATH']}"},
    )
    assert result.returncode in fail_job["onExitCodes"]["values"], result.stderr[-2000:]
    assert "no NVIDIA driver is loaded" in result.stderr
