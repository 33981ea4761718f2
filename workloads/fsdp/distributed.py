"""Process-group setup: the same code under torchrun on 16 GPUs and as a lone process on a laptop."""

from __future__ import annotations

import contextlib
import gc
import os
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class DistInfo:
    rank: int
    local_rank: int
    world_size: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _default_single_process_env() -> None:
    """Without torchrun, act as rank 0 of a world of one (plain ``python -m``)."""
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("LOCAL_RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(_free_port()))


def init_distributed(timeout_s: int) -> DistInfo:
    if "RANK" not in os.environ:
        _default_single_process_env()
    local_rank = int(os.environ["LOCAL_RANK"])
    timeout = timedelta(seconds=timeout_s)
    if torch.cuda.is_available():
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        # cpu:gloo next to nccl lets CPU-side objects (barriers, async checkpoint staging) use gloo.
        dist.init_process_group("cpu:gloo,cuda:nccl", timeout=timeout, device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", timeout=timeout)
    return DistInfo(dist.get_rank(), local_rank, dist.get_world_size(), device)


def shutdown() -> None:
    """Every rank past its last collective, then the groups torn down while the interpreter is fully alive:
    gloo work still referencing tensors at interpreter exit aborts the process (seen once here under load as
    "terminate called without an active exception" after a finished run; pytorch/pytorch PR #179291)."""
    if dist.is_initialized():
        dist.barrier()
        gc.collect()
        dist.destroy_process_group()


def from_rank_zero[T](compute: Callable[[], T]) -> T:
    """Rank 0 computes, every rank receives its answer, so ranks cannot disagree (the resume step seen through a
    bucket mount, the packed rows). Call it on every rank; without a process group it just computes."""
    if not dist.is_initialized():
        return compute()
    answer = [compute() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(answer, src=0)
    return answer[0]


@contextlib.contextmanager
def main_process_first(info: DistInfo) -> Iterator[None]:
    """Rank 0 runs the block first (downloads, preprocessing); the others wait, then run it on the cache."""
    if not info.is_main:
        dist.barrier()
    yield
    # Only on success: if rank 0 raised, torchrun tears the group down instead of releasing the others.
    if info.is_main:
        dist.barrier()
