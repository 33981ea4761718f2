"""The installed torch wheel is the one `components/facts/gpu_software.FSDP_TORCH` describes (CUDA, NCCL)."""

from __future__ import annotations

import torch

from components.facts.gpu_software import FSDP_TORCH


def test_the_pinned_wheel_bundles_the_cuda_and_nccl_the_facts_state():
    assert torch.__version__.split("+")[0] == FSDP_TORCH.torch
    assert torch.version.cuda == FSDP_TORCH.cuda
    assert ".".join(map(str, torch.cuda.nccl.version())) == FSDP_TORCH.nccl
