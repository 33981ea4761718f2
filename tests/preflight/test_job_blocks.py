"""The plan's last words: one short block per enabled job, read from the objects the plan would apply, so a
change to the stack file shows in what the job became (slices, hosts, chips, mesh, GPUs, world size)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from components.config.load import load_stack_config
from preflight.checks.admission import AdmissionProblem
from preflight.report import forecast_summary, job_inputs, render_jobs
from preflight.verdict import check
from tests.helpers.plans import PROJECT_DIR


def blocks(plan) -> list[str]:
    verdict = check(plan, {})
    forecasts = [f.to_json() for f in verdict.forecast]
    inputs = job_inputs(load_stack_config(plan.config, plan.stack))
    return render_jobs(plan.manifests, verdict.admitted, verdict.admission, forecasts, inputs)


def block_of(lines: list[str], job: str) -> list[str]:
    start = next(index for index, line in enumerate(lines) if line.startswith(f"{job}: "))
    end = next((index for index, line in enumerate(lines) if index > start and not line.startswith(" ")), len(lines))
    return lines[start:end]


def test_the_dev_jobs_say_where_they_run_their_size_image_queue_and_forecast(dev_plan):
    lines = blocks(dev_plan)
    maxtext = block_of(lines, "llama3-8b")
    assert maxtext[0].startswith("llama3-8b: RayJob trainyard/llama3-8b-") and maxtext[0].endswith(" (MaxText)")
    assert "  runs on   2 slices of group v6e-16 (tpu-v6e-slice 4x4): 4 hosts x 4 chips each, 32 chips" in maxtext
    assert "  mesh      ici fsdp=4 x tensor=4; dcn data=2" in maxtext
    image = next(m for m in dev_plan.manifests if m["kind"] == "RayJob")["spec"]["rayClusterSpec"]["headGroupSpec"]
    tag = image["template"]["spec"]["containers"][0]["image"].rpartition("/")[2][: len("maxtext:") + 16]
    assert any(line.startswith(f"  image     {tag}@sha256:") for line in maxtext)
    assert "  queue     trainyard: admitted on system (head), v6e-16 (v6e-16), system (submitter)" in maxtext
    assert any(line.startswith("  forecast  ") for line in maxtext)
    fsdp = block_of(lines, "llama31-70b-fsdp")
    assert "  runs on   pool gpu-nodepool-dws: 2 pods x 8 nvidia-b200 = 16 GPUs" in fsdp
    assert "  world     16 processes (2 nodes x 8, torchrun)" in fsdp
    assert "  queue     trainyard: admitted on gpu-nodepool-dws (main)" in fsdp
    assert any(line.startswith("  forecast  step ") and "MFU" in line for line in fsdp)
    assert max(len(line) for line in lines) <= 98  # the report indents them by 2


def test_a_third_slice_reaches_the_rayjob_and_its_mesh(plan_with):
    def three_slices(values):
        values["trainyard:tpuSlices"][0]["count"] = 3

    maxtext = block_of(blocks(plan_with(three_slices)), "llama3-8b")
    assert "  runs on   3 slices of group v6e-16 (tpu-v6e-slice 4x4): 4 hosts x 4 chips each, 48 chips" in maxtext
    assert "  mesh      ici fsdp=4 x tensor=4; dcn data=3" in maxtext


def test_four_nodes_reach_the_torchrun_job(plan_with):
    def four_nodes(values):
        values["trainyard:jobs"]["fsdp"][0]["nodes"] = 4

    fsdp = block_of(blocks(plan_with(four_nodes)), "llama31-70b-fsdp")
    assert "  runs on   pool gpu-nodepool-dws: 4 pods x 8 nvidia-b200 = 32 GPUs" in fsdp
    assert "  world     32 processes (4 nodes x 8, torchrun)" in fsdp


def test_a_workload_kueue_would_not_admit_says_so_and_what_to_change(dev_plan):
    job = next(m for m in dev_plan.manifests if m["kind"] == "Job")
    workload = f"Job trainyard/{job['metadata']['name']}"
    problem = AdmissionProblem(workload, "main", "insufficient quota for nvidia.com/gpu", "trainyard:gpuPools[0]")
    lines = render_jobs([job], [], [problem], [])
    queue = next(line for line in lines if line.startswith("  queue"))
    assert queue.startswith("  queue     trainyard: NOT ADMITTED: insufficient quota for nvidia.com/gpu")
    assert "(change trainyard:gpuPools[0])" in " ".join(" ".join(lines).split())
    assert "  runs on   2 pods x 8 nvidia-b200 = 16 GPUs" in lines  # no flavor was assigned


@pytest.mark.parametrize(
    ("forecast", "summary"),
    [
        ({"job": "a", "none": "no fit-check result yet", "cannotRun": False}, "none: no fit-check result yet"),
        ({"job": "a", "none": "needs 40 GB of 32 GB", "cannotRun": True}, "DOES NOT FIT: needs 40 GB of 32 GB"),
        (
            {"job": "a", "stepSeconds": 2.014, "mfu": 0.4293, "steps": 100, "usdPerRun": 4.81},
            "step 2.0 s, MFU 42.9%, 100 steps $4.81",
        ),
        (
            {
                "job": "a",
                "stepSeconds": 21.36,
                "mfu": 0.287,
                "priceEstimated": True,
                "windowSeconds": 7200,
                "stepsInWindow": 337,
                "usdPerWindow": 210.8,
            },
            "step 21.4 s, MFU 28.7%, 2 h window: 337 steps ~$211",
        ),
    ],
)
def test_a_forecast_in_one_line(forecast, summary):
    assert forecast_summary(forecast) == summary


@pytest.mark.parametrize("stack_file", sorted(PROJECT_DIR.glob("Pulumi.*.yaml")), ids=lambda path: path.name)
def test_every_stack_of_the_repository_plans_within_100_columns_ending_with_its_jobs(stack_file):
    stack = stack_file.name.removeprefix("Pulumi.").removesuffix(".yaml")
    command = [sys.executable, "-m", "preflight", "plan", "--stack", stack]
    result = subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True, check=False, timeout=300)
    assert result.returncode in (0, 1), result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    if "\nJobs (" in result.stdout:
        jobs = result.stdout.split("\nJobs (", 1)[1].splitlines()[1:]
        assert all(line.startswith(("  ", "trainyard: ")) or line == "" for line in jobs)
