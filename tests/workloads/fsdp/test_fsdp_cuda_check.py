"""A GPU pod on a node whose driver cannot run the image's CUDA stops at once, saying why, instead of training
on the CPU: the decision from its inputs, and the real check on this GPU-less machine."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from fsdp_helpers import OFFLINE_ENV, REPO_ROOT

from workloads.fsdp.cuda_check import DRIVER_EXIT_CODE, cuda_problem


def test_a_driver_of_an_older_cuda_major_is_refused_naming_both():
    problem = cuda_problem((12, 8), "13.0", gpus_seen=False)
    assert "runs CUDA up to 12.8" in problem and "built for CUDA 13.0" in problem


def test_a_newer_minor_runtime_runs_on_the_same_major():
    assert cuda_problem((13, 0), "13.2", gpus_seen=True) is None
    assert cuda_problem((13, 1), "13.0", gpus_seen=True) is None


def test_no_driver_a_cpu_build_or_no_visible_gpu_are_each_named():
    assert "no NVIDIA driver" in cuda_problem(None, "13.0", gpus_seen=False)
    assert "CPU build" in cuda_problem((13, 0), None, gpus_seen=False)
    assert "sees no GPU" in cuda_problem((13, 0), "13.0", gpus_seen=False)


def test_the_check_stops_a_gpu_pod_on_a_node_without_a_usable_driver():
    checked = subprocess.run(
        [sys.executable, "-m", "workloads.fsdp.cuda_check"],
        check=False,
        cwd=REPO_ROOT,
        env={**os.environ, **OFFLINE_ENV},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == DRIVER_EXIT_CODE, checked.stderr
    assert "trainyard: no NVIDIA driver is loaded on this node (libcuda.so.1 not found)" in checked.stderr
    assert "trainyard: NVIDIA driver unknown on this node" in checked.stdout


# Stand-ins for the two driver libraries the check loads through ctypes (no NVIDIA driver exists here): the
# entry points it calls, with the driver's C signatures, answering as a node with an R570 driver would.
FAKE_LIBCUDA = """
int cuDriverGetVersion(int *version) { *version = 12080; return 0; }
"""
FAKE_NVML = """
#include <string.h>
int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
int nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    strncpy(version, "570.133.20", length); return 0;
}
"""


def build_library(folder: Path, name: str, source: str) -> None:
    (folder / f"{name}.c").write_text(source)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", folder / name, folder / f"{name}.c"], check=True)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build the stand-in driver libraries")
def test_a_node_whose_driver_runs_an_older_cuda_major_is_refused_with_its_version(tmp_path):
    build_library(tmp_path, "libcuda.so.1", FAKE_LIBCUDA)
    build_library(tmp_path, "libnvidia-ml.so.1", FAKE_NVML)
    checked = subprocess.run(
        [sys.executable, "-m", "workloads.fsdp.cuda_check"],
        check=False,
        cwd=REPO_ROOT,
        env={**os.environ, **OFFLINE_ENV, "LD_LIBRARY_PATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == DRIVER_EXIT_CODE, checked.stderr
    assert "trainyard: NVIDIA driver 570.133.20 on this node" in checked.stdout
    wheel = f"this image's torch {torch.__version__} is built for CUDA {torch.version.cuda}"
    assert f"this node's NVIDIA driver runs CUDA up to 12.8; {wheel}" in checked.stderr
