"""The GPU software that goes together on A4: the trainer's torch wheel, the gIB NCCL plugin, the NVIDIA driver.

One CUDA major runs through all three (docs/cloud-facts.md: the A4 GPU software stack):
- the FSDP image's torch wheel from PyPI bundles the CUDA runtime and NCCL the trainer runs;
- the gIB plugin the installer DaemonSet copies onto each A4 host is built against one CUDA runtime and
  accepts an application NCCL from a minimum version on (the application brings its own NCCL);
- the node's driver must be at least what that CUDA major needs and what the plugin's release asks for.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


def version_key(version: str) -> tuple[int, ...]:
    """`580.95.05` -> (580, 95, 5): versions compare numerically, part by part."""
    return tuple(int(part) for part in version.split("."))


def at_least(version: str, minimum: str) -> bool:
    return version_key(version) >= version_key(minimum)


def cuda_major(cuda: str) -> int:
    return version_key(cuda)[0]


# NVIDIA's minor-version compatibility: a CUDA 13.x runtime needs a driver of branch 580 or newer, 12.x 525.
MIN_DRIVER_FOR_CUDA_MAJOR: dict[int, str] = {12: "525", 13: "580"}


@dataclass(frozen=True)
class TorchWheel:
    """What a pinned torch wheel bundles; `tests/workloads/fsdp` checks it against the wheel installed in .venv-fsdp."""

    torch: str
    cuda: str
    nccl: str

    @property
    def min_driver(self) -> str:
        """The oldest driver branch that runs the wheel's CUDA (NVIDIA's minor-version compatibility)."""
        return MIN_DRIVER_FOR_CUDA_MAJOR[cuda_major(self.cuda)]


@dataclass(frozen=True)
class GibRelease:
    """One NCCL/gIB release for x86 (A3 Ultra, A4): its installer image and what it asks of the node and job."""

    version: str
    image: str
    digest: str
    cuda: str  # the CUDA runtime it is built with, and the oldest a job may run with it
    min_app_nccl: str  # the oldest NCCL an application may load the plugin into
    min_driver: str

    @property
    def reference(self) -> str:
        return f"{self.image}:{self.version}@{self.digest}"


# torch 2.14.1 from PyPI (workloads/fsdp/requirements.txt): torch.version.cuda and torch.cuda.nccl.version().
FSDP_TORCH = TorchWheel(torch="2.14.1", cuda="13.0", nccl="2.30.7")

GIB = GibRelease(
    version="v1.1.2",
    image="us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib",
    digest="sha256:b71627dcf88862cd0e64434dfd0224441960db58f2022f94b5f56123659c207e",
    cuda="13.0",
    min_app_nccl="2.25",
    min_driver="580.95.05",
)

# The same release for Arm hosts (A4X): its own image, the same floors (docs/cloud-facts.md: A4X).
GIB_ARM64 = dataclasses.replace(
    GIB,
    image="us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-arm64",
    digest="sha256:6b7950cac6e6833661d4206920f5633b6e361b18bfd5315b63f9bf4a4b84a80e",
)
GIB_BY_ARCH = {"amd64": GIB, "arm64": GIB_ARM64}


def stack_problems(wheel: TorchWheel, gib: GibRelease = GIB) -> list[str]:
    """Why a job's wheel and the host's gIB plugin do not go together; empty when they do."""
    plugin, torch = f"gIB {gib.version}", f"torch {wheel.torch}"
    problems = []
    if version_key(wheel.cuda) < version_key(gib.cuda):
        problems.append(f"{plugin} is built with CUDA {gib.cuda}; {torch} bundles CUDA {wheel.cuda}")
    if not at_least(wheel.nccl, gib.min_app_nccl):
        problems.append(f"{plugin} needs NCCL >= {gib.min_app_nccl}; {torch} bundles {wheel.nccl}")
    return problems
