"""`make fit-check STACK=...`: the plan's RayJobs become fit checks with the same slice facts and arguments."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

from tools.maxtext_fit.fit_cache import cache_key, cached_verdict
from tools.maxtext_fit.fit_plan import maxtext_jobs

TINY = [
    "base_emb_dim=64",
    "base_num_query_heads=4",
    "base_num_kv_heads=4",
    "base_mlp_dim=128",
    "base_num_decoder_layers=2",
    "head_dim=16",
    "enable_tensorboard=false",
    "vocab_size=256",
    "max_target_length=64",
]


def ray_job(name: str, slice_flags: str, maxtext_args: list[str]) -> dict:
    """A RayJob as components/jobs/ray_workloads.py renders it (the trainer's own flags included)."""
    entrypoint = (
        f"python -m workloads.maxtext.train {slice_flags} --max-failures 3 --storage-path /data/maxtext "
        f"--name {name} -- {shlex.join(maxtext_args)}"
    )
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name}, "spec": {"entrypoint": entrypoint}}


V6E_4 = "--accelerator-type TPU-V6E --topology 2x2 --slices 1 --hosts-per-slice 1 --chips-per-host 4"


def test_plan_jobs_keep_slice_facts_and_arguments_and_drop_the_rest():
    plan = {
        "manifests": [
            {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "fsdp"}, "spec": {}},
            ray_job(
                "elastic",
                "--accelerator-type TPU-V6E --topology 4x4 --slices 2 --hosts-per-slice 4 "
                "--chips-per-host 4 --min-slices 1 --max-slices 2",
                ["model_name=llama3-8b", "dcn_data_parallelism=-1"],
            ),
        ]
    }
    ((name, argv),) = list(maxtext_jobs(plan))
    assert name == "elastic"
    flags, args = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
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
        "--min-slices",
        "1",
        "--max-slices",
        "2",
        "--name",
        "elastic",
    ]
    assert args == ["model_name=llama3-8b", "dcn_data_parallelism=-1"]


def test_one_job_that_does_not_fit_fails_the_check_and_each_verdict_is_cached(repo_root, tmp_path):
    plan_json = {
        "manifests": [
            ray_job("small", V6E_4, [*TINY, "per_device_batch_size=2", "steps=40"]),
            ray_job(
                "huge",
                V6E_4,
                [*TINY[:-2], "vocab_size=131072", "max_target_length=8192", "per_device_batch_size=64"],
            ),
        ]
    }
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(plan_json))
    cache = tmp_path / "cache"
    run = subprocess.run(
        [sys.executable, "-m", "tools.maxtext_fit.fit_plan", str(plan), "--cache", str(cache)],
        cwd=repo_root,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert run.returncode == 1, run.stderr[-3000:]
    assert "fit-check small on 1 x v6e-4" in run.stdout and "fits" in run.stdout
    assert "fit-check: 1 of 2 jobs fit; not: huge" in run.stdout
    (_, small_argv), (_, huge_argv) = maxtext_jobs(plan_json)
    verdict = cached_verdict(cache, cache_key(small_argv, repo_root))
    assert verdict["fits"] and verdict["name"] == "small"
    work = verdict["cost"]
    # 2 rows of 64 tokens per chip; the compiled matrix work includes the rematerialized forward pass.
    assert work["tokens"] == 128 and work["steps"] == 40
    assert work["matmul_flops"] > work["model_flops"] > 0 and work["ici_bytes"] > 0 and work["dcn_bytes"] == 0
    refused = cached_verdict(cache, cache_key(huge_argv, repo_root))
    assert not refused["fits"] and refused["cost"] is None


def test_the_cache_key_follows_what_decides_the_compiled_step(repo_root):
    ((_, argv),) = maxtext_jobs({"manifests": [ray_job("a", V6E_4, [*TINY, "per_device_batch_size=2", "steps=4"])]})
    renamed = [("run-b" if word == "a" else word) for word in argv] + ["run_name=b", "checkpoint_period=7"]
    assert cache_key(renamed, repo_root) == cache_key(argv, repo_root)
    assert cache_key([word.replace("steps=4", "steps=99") for word in argv], repo_root) == cache_key(argv, repo_root)
    bigger = [word.replace("per_device_batch_size=2", "per_device_batch_size=4") for word in argv]
    assert cache_key(bigger, repo_root) != cache_key(argv, repo_root)
    other_topology = [word.replace("2x2", "2x4") for word in argv]
    assert cache_key(other_topology, repo_root) != cache_key(argv, repo_root)


def test_plan_without_maxtext_jobs_exits_2(repo_root, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"manifests": []}))
    run = subprocess.run(
        [sys.executable, "-m", "tools.maxtext_fit.fit_plan", str(plan)],
        cwd=repo_root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2 and "no enabled MaxText job" in run.stderr
