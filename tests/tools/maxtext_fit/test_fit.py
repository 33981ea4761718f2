"""The fit check really compiles MaxText's train step for a TPU topology with libtpu, here on CPU."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tools.maxtext_fit import fit
from tools.maxtext_fit.compile_memory import FitCheckError, compile_topology_name
from workloads.maxtext.parallelism import ParallelismError

# One v6e-4 slice (2x2): a tiny model compiles for it in seconds.
V6E_4 = ["--accelerator-type", "TPU-V6E", "--topology", "2x2", "--slices", "1", "--hosts-per-slice", "1"]
V6E_4 += ["--chips-per-host", "4"]
TINY = [
    "base_emb_dim=64",
    "base_num_query_heads=4",
    "base_num_kv_heads=4",
    "base_mlp_dim=128",
    "base_num_decoder_layers=2",
    "head_dim=16",
    "enable_tensorboard=false",
]


def _fit(repo_root, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tools.maxtext_fit.fit", *args],
        check=False,
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _verdict(run: subprocess.CompletedProcess) -> dict:
    return json.loads(next(line for line in run.stdout.splitlines() if line.startswith("{")))


def test_tiny_model_fits_one_v6e_4_slice(repo_root):
    run = _fit(
        repo_root,
        *V6E_4,
        "--name",
        "tiny",
        "--json",
        "--",
        *TINY,
        "vocab_size=256",
        "per_device_batch_size=2",
        "max_target_length=64",
    )
    assert run.returncode == fit.EXIT_FITS, run.stderr[-3000:]
    verdict = _verdict(run)
    assert verdict["fits"] and verdict["target"] == "v6e-4"
    # Parameters and Adam moments alone are ~0.25 MB per chip; the step needs more, but far below 1 GB.
    assert 250_000 < verdict["needed_bytes"] < 1e9
    assert "fit-check tiny on 1 x v6e-4: HBM per chip needed" in run.stdout


def test_job_beyond_hbm_is_refused_by_the_compiler_with_non_zero_exit(repo_root):
    # 64 sequences of 8192 tokens over a 131072-token vocabulary: the logits alone need ~130 GB per chip.
    run = _fit(
        repo_root,
        *V6E_4,
        "--name",
        "huge",
        "--json",
        "--",
        *TINY,
        "vocab_size=131072",
        "per_device_batch_size=64",
        "max_target_length=8192",
    )
    assert run.returncode == fit.EXIT_DOES_NOT_FIT, run.stderr[-3000:]
    verdict = _verdict(run)
    assert not verdict["fits"]
    assert "RESOURCE_EXHAUSTED" in verdict["compiler_error"]
    assert "DOES NOT FIT" in run.stdout


def test_compiled_need_above_the_given_hbm_does_not_fit(capsys):
    exit_code = fit.main(
        [
            *V6E_4,
            "--hbm-bytes-per-chip",
            "1000",
            "--json",
            "--",
            *TINY,
            "vocab_size=256",
            "per_device_batch_size=2",
            "max_target_length=64",
        ]
    )
    assert exit_code == fit.EXIT_DOES_NOT_FIT
    verdict = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert verdict["needed_bytes"] > verdict["available_bytes"] == 1000


def test_mismatched_parallelism_is_refused_before_compiling(capsys):
    exit_code = fit.main([*V6E_4, "--", "ici_tensor_parallelism=8"])
    assert exit_code == fit.EXIT_REFUSED
    assert "ici_fsdp_parallelism=-1 cannot be filled in" in capsys.readouterr().err


def test_topology_names_follow_maxtexts_table():
    assert compile_topology_name("TPU-V6E", "4x4") == "v6e-16"
    assert compile_topology_name("TPU-V5P", "2x2x4") == "v5p-32"
    with pytest.raises(FitCheckError, match="--topology 3x3 for TPU-V6E"):
        compile_topology_name("TPU-V6E", "3x3")
    with pytest.raises(FitCheckError, match="--accelerator-type CPU"):
        compile_topology_name("CPU", "1x2")


def test_compile_arguments_come_from_the_facts_and_an_elastic_job_compiles_at_its_fewest_slices():
    elastic = ["--accelerator-type", "TPU-V6E", "--topology", "2x2", "--slices", "2", "--min-slices", "1"]
    elastic += ["--max-slices", "2", "--hosts-per-slice", "1", "--chips-per-host", "4"]
    facts = fit.slice_facts_from(fit.parse_flags(elastic))
    argv, _ = fit.compile_argv(facts, ["steps=1"])
    assert "compile_topology=v6e-4" in argv
    assert "compile_topology_num_slices=1" in argv
    with pytest.raises(FitCheckError, match="compile_topology=v5e-256: set by the fit check"):
        fit.compile_argv(facts, ["compile_topology=v5e-256"])


def test_a_tpu7x_mesh_counts_two_devices_a_chip():
    """The stack sizes a TPU7x job's ICI mesh in JAX devices (two a chip): 2x2x2 is 8 chips, 16 devices."""
    flags = ["--accelerator-type", "TPU-V7X", "--topology", "2x2x2", "--slices", "1", "--hosts-per-slice", "2"]
    facts = fit.slice_facts_from(fit.parse_flags([*flags, "--chips-per-host", "4", "--devices-per-chip", "2"]))
    argv, mesh = fit.compile_argv(facts, ["ici_fsdp_parallelism=4", "ici_tensor_parallelism=4"])
    assert mesh.ici == {"fsdp": 4, "tensor": 4}
    with pytest.raises(ParallelismError, match="multiplies to 16, but the job has 8"):
        fit.compile_argv(fit.slice_facts_from(fit.parse_flags([*flags, "--chips-per-host", "4"])), argv[:2])
