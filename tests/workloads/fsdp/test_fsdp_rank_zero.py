"""Facts every rank must share are computed on rank 0 and broadcast: a real 2-process gloo group."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import torch.distributed as dist
import torch.multiprocessing as mp

from workloads.fsdp import packing
from workloads.fsdp.batching import BatchPlanner
from workloads.fsdp.distributed import from_rank_zero

LENGTHS = [40 + (index * 37) % 200 for index in range(300)]


def _share_from_rank_zero(rank: int, world_size: int, init_file: str, out_dir: str) -> None:
    dist.init_process_group(
        "gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size, timeout=timedelta(seconds=60)
    )
    calls: list[int] = []

    def plan() -> str:
        calls.append(rank)
        return f"rows planned by rank {rank}"

    answer = from_rank_zero(plan)
    if rank == 1:  # a rank whose own planning would differ (as on another CPU): minimum bin slack only
        packing.MAX_ARC_FLOW_ARCS = 0
    planner = BatchPlanner(
        [[1] * n for n in LENGTHS],
        512,
        rows_per_device=2,
        world_size=world_size,
        rank=rank,
        pad_id=0,
        packing=True,
        seed=0,
    )
    rows = planner.rows_for_epoch(0)
    Path(out_dir, f"{rank}.json").write_text(json.dumps({"answer": answer, "calls": calls, "rows": rows}))
    dist.destroy_process_group()


def test_rank_zeros_answer_reaches_every_rank_and_only_rank_zero_computes(tmp_path, monkeypatch):
    with_lp = packing.plan_row_lengths(LENGTHS, 512)
    monkeypatch.setattr(packing, "MAX_ARC_FLOW_ARCS", 0)
    assert sorted(with_lp) != sorted(packing.plan_row_lengths(LENGTHS, 512)), "the two ranks would plan apart"
    mp.spawn(_share_from_rank_zero, args=(2, str(tmp_path / "init"), str(tmp_path)), nprocs=2, join=True)
    results = [json.loads((tmp_path / f"{rank}.json").read_text()) for rank in range(2)]
    assert [result["answer"] for result in results] == ["rows planned by rank 0"] * 2
    assert [result["calls"] for result in results] == [[0], []]
    assert results[0]["rows"] == results[1]["rows"], "rank 1 packs by rank 0's plan"


def test_without_a_process_group_it_just_computes():
    assert from_rank_zero(lambda: 42) == 42
