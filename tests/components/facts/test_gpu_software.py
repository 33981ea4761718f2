"""The A4 GPU software facts: version order, what a wheel and the gIB plugin need of each other and of the driver."""

from __future__ import annotations

import re

from components.facts.gpu_software import FSDP_TORCH, GIB, TorchWheel, at_least, stack_problems
from components.facts.images import pin_problem
from components.infra.source_tree import PROJECT_DIR


def test_versions_compare_part_by_part_not_as_text():
    assert at_least("580.95.05", "580.65.06")
    assert not at_least("570.133.20", "580")
    assert at_least("580.105.08", "580.95.05")  # "105" < "95" as text
    assert not at_least("2.9.1", "2.25")


def test_the_fsdp_wheel_and_the_gib_plugin_go_together():
    assert stack_problems(FSDP_TORCH) == []


def test_a_cuda_12_wheel_or_an_old_nccl_is_named_with_the_plugin():
    cuda12 = TorchWheel(torch="2.7.0", cuda="12.8", nccl="2.26.2")
    assert stack_problems(cuda12) == ["gIB v1.1.2 is built with CUDA 13.0; torch 2.7.0 bundles CUDA 12.8"]
    old_nccl = TorchWheel(torch="2.14.1", cuda="13.0", nccl="2.21.5")
    assert stack_problems(old_nccl) == ["gIB v1.1.2 needs NCCL >= 2.25; torch 2.14.1 bundles 2.21.5"]


def test_the_fsdp_wheel_fact_names_the_pinned_torch():
    requirements = (PROJECT_DIR / "workloads/fsdp/requirements.txt").read_text()
    assert re.search(r"^torch==(\S+)$", requirements, re.MULTILINE).group(1) == FSDP_TORCH.torch


def test_the_gib_installer_is_pinned_by_digest():
    assert pin_problem(GIB.reference) is None
