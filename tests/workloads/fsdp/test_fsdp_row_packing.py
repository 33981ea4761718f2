"""The row packer: valid rows, every sample once, and (nearly) the fewest rows possible."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from workloads.fsdp import batching, packing
from workloads.fsdp.data import encode_sample
from workloads.fsdp.packing import arc_flow_rows, fewest_rows_bound, pack_rows
from workloads.fsdp.sample_data import generate_samples


@pytest.fixture(scope="module")
def text_to_sql_lengths(tiny) -> list[int]:
    tokenizer = AutoTokenizer.from_pretrained(tiny.model_dir)
    return [len(encode_sample(tokenizer, sample)) for sample in generate_samples(1200, seed=3)]


def assert_valid_rows(rows: list[list[int]], lengths: list[int], capacity: int) -> None:
    assert sorted(index for row in rows for index in row) == list(range(len(lengths)))
    assert all(row and sum(lengths[index] for index in row) <= capacity for row in rows)


def test_exact_fills_that_best_fit_decreasing_misses():
    # Best-fit-decreasing needs 4 rows here; 12+5+3, 12+4+4 and 11+6+3 fill 3 rows exactly.
    lengths = [12, 12, 11, 6, 5, 4, 4, 3, 3]
    rows = pack_rows(lengths, 20, order=range(len(lengths)))
    assert_valid_rows(rows, lengths, 20)
    assert len(rows) == 3


def martello_toth_bound(lengths: list[int], capacity: int) -> int:
    """L2 (Martello & Toth, 1990): samples over half a row need a row each; the smaller ones fill what is left."""
    best = 0
    for threshold in {0} | {length for length in lengths if length <= capacity // 2}:
        alone = sum(1 for length in lengths if length > capacity - threshold)
        big = [length for length in lengths if capacity // 2 < length <= capacity - threshold]
        small = sum(length for length in lengths if threshold <= length <= capacity // 2)
        spill = max(0, -(-(small - (len(big) * capacity - sum(big))) // capacity))
        best = max(best, alone + len(big) + spill)
    return best


def test_text_to_sql_rows_are_within_one_of_the_fewest_possible(text_to_sql_lengths):
    order = list(range(len(text_to_sql_lengths)))
    rows = pack_rows(text_to_sql_lengths, 512, order)
    assert_valid_rows(rows, text_to_sql_lengths, 512)
    # Best-fit-decreasing used 10 rows (2%) more than this bound on these lengths.
    assert len(rows) <= martello_toth_bound(text_to_sql_lengths, 512) + 1


@pytest.mark.parametrize("seed", range(5))
def test_random_lengths_pack_validly_with_and_without_the_lp(seed, monkeypatch):
    rng = random.Random(seed)
    capacity = rng.choice([16, 64, 512])
    lengths = [rng.choice([1, capacity, rng.randint(1, capacity)]) for _ in range(rng.randint(1, 300))]
    with_lp = pack_rows(lengths, capacity, order=range(len(lengths)))
    monkeypatch.setattr(packing, "MAX_ARC_FLOW_ARCS", 0)
    without_lp = pack_rows(lengths, capacity, order=range(len(lengths)))
    for rows in (with_lp, without_lp):
        assert_valid_rows(rows, lengths, capacity)
        assert len(rows) >= fewest_rows_bound(lengths, capacity)


def test_a_graph_over_the_limit_leaves_everything_to_mbs(monkeypatch):
    monkeypatch.setattr(packing, "MAX_ARC_FLOW_ARCS", 0)
    rows, left = arc_flow_rows(Counter([5, 5, 3]), 10)
    assert rows == [] and left == Counter([5, 5, 3])


def test_order_decides_neighbours_not_the_shape_of_rows(text_to_sql_lengths):
    lengths = text_to_sql_lengths[:300]
    forward, backward = (pack_rows(lengths, 512, order) for order in (range(300), range(299, -1, -1)))
    assert forward != backward
    shapes = [sorted(sorted(lengths[index] for index in row) for row in rows) for rows in (forward, backward)]
    assert shapes[0] == shapes[1]
    assert pack_rows(lengths, 512, range(300)) == forward


def test_a_sample_longer_than_the_row_is_refused():
    with pytest.raises(ValueError, match="sample 1 has 9 tokens, more than the row length 8"):
        pack_rows([3, 9], 8, order=[0, 1])


def test_another_process_plans_the_same_rows(text_to_sql_lengths):
    # Ranks plan independently, so the LP's answer must not depend on the process that solved it.
    script = (
        "import json, sys; from workloads.fsdp.packing import pack_rows; lengths = json.load(sys.stdin); "
        "print(json.dumps(pack_rows(lengths, 512, range(len(lengths)))))"
    )
    other = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(text_to_sql_lengths),
        text=True,
        capture_output=True,
        check=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert json.loads(other.stdout) == pack_rows(text_to_sql_lengths, 512, range(len(text_to_sql_lengths)))


def test_an_lp_that_stops_early_leaves_every_row_to_mbs(text_to_sql_lengths, monkeypatch):
    monkeypatch.setattr(packing, "LP_ITERATION_LIMIT", 1)
    with pytest.warns(RuntimeWarning, match="the packing LP stopped .*minimum bin slack plans every row"):
        rows, left = arc_flow_rows(Counter(text_to_sql_lengths), 512)
    assert rows == [] and left == Counter(text_to_sql_lengths)
    with pytest.warns(RuntimeWarning):
        assert_valid_rows(
            pack_rows(text_to_sql_lengths, 512, range(len(text_to_sql_lengths))), text_to_sql_lengths, 512
        )


def test_rows_are_planned_once_per_run_and_refilled_each_epoch(text_to_sql_lengths, monkeypatch):
    plans = []

    def counted_plan(lengths, capacity):
        plans.append(capacity)
        return packing.plan_row_lengths(lengths, capacity)

    monkeypatch.setattr(batching, "plan_row_lengths", counted_plan)
    samples = [[7] * length for length in text_to_sql_lengths]
    planner = batching.BatchPlanner(
        samples, 512, rows_per_device=4, world_size=1, rank=0, pad_id=0, packing=True, seed=0
    )
    epochs = [planner.rows_for_epoch(epoch) for epoch in range(3)]
    assert plans == [512], "the LP ran once; later epochs reuse its rows"
    assert epochs[0] != epochs[1] != epochs[2], "each epoch places the samples anew"
    shapes = [sorted(sorted(text_to_sql_lengths[index] for index in row) for row in rows) for rows in epochs]
    assert shapes[0] == shapes[1] == shapes[2]
    for rows in epochs:
        assert_valid_rows(rows, text_to_sql_lengths, 512)
