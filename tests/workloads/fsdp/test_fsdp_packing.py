"""Packing: rows fill up (waste < 5%), every sample trains once per epoch, and attention never crosses samples."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from workloads.fsdp.batching import (
    IGNORE_INDEX,
    BatchPlanner,
    DataPosition,
    collate,
    padding_fraction,
)
from workloads.fsdp.data import encode_sample
from workloads.fsdp.sample_data import generate_samples


@pytest.fixture(scope="module")
def lengths(tiny) -> list[int]:
    tokenizer = AutoTokenizer.from_pretrained(tiny.model_dir)
    return [len(encode_sample(tokenizer, sample)) for sample in generate_samples(600, seed=0)]


def planner_for(lengths: list[int], packing: bool) -> BatchPlanner:
    return BatchPlanner(
        [[1] * n for n in lengths], 512, rows_per_device=1, world_size=1, rank=0, pad_id=0, packing=packing, seed=1
    )


def test_packing_wastes_under_5_percent_where_padding_wastes_half(lengths):
    packed = planner_for(lengths, packing=True).rows_for_epoch(0)
    padded = planner_for(lengths, packing=False).rows_for_epoch(0)
    assert padding_fraction(packed, lengths, 512) < 0.05
    assert padding_fraction(padded, lengths, 512) > 0.4
    assert all(sum(lengths[i] for i in row) <= 512 for row in packed)


def test_each_epoch_uses_every_sample_once_in_a_new_arrangement(lengths):
    planner = planner_for(lengths, packing=True)
    epochs = [planner.rows_for_epoch(epoch) for epoch in (0, 1)]
    for rows in epochs:
        assert sorted(i for row in rows for i in row) == list(range(len(lengths)))
    assert epochs[0] != epochs[1]


def test_collate_masks_sample_boundaries_and_padding():
    batch = collate([[[5, 6, 7], [8, 9]]], max_len=8, pad_id=0, packing=True)
    assert batch.input_ids.tolist() == [[5, 6, 7, 8, 9, 0, 0, 0]]
    # 7 must not predict 8 (different samples); padding predicts nothing.
    assert batch.targets.tolist() == [[6, 7, IGNORE_INDEX, 9, IGNORE_INDEX, IGNORE_INDEX, IGNORE_INDEX, IGNORE_INDEX]]
    assert batch.position_ids.tolist() == [[0, 1, 2, 0, 1, 0, 1, 2]]
    assert batch.attention_mask is None and batch.sample_lengths == [3, 2] and batch.target_tokens == 3
    padded = collate([[[5, 6, 7]]], max_len=5, pad_id=0, packing=False)
    assert padded.attention_mask.tolist() == [[1, 1, 1, 0, 0]] and padded.position_ids is None


def test_a_step_holds_the_same_rows_on_any_world_size(lengths):
    samples = [[1] * length for length in lengths]
    common = {"max_len": 512, "pad_id": 0, "packing": True, "seed": 3}
    one = BatchPlanner(samples, rows_per_device=2, world_size=1, rank=0, **common)
    two = [BatchPlanner(samples, rows_per_device=2, world_size=2, rank=r, **common) for r in (0, 1)]
    position = DataPosition(epoch=0, rows_consumed=8)
    single, single_targets = one.step_batches(position, accumulation=4)
    split = [planner.step_batches(position, accumulation=2) for planner in two]
    assert single_targets == split[0][1] == split[1][1]
    single_lengths = sorted(n for batch in single for n in batch.sample_lengths)
    split_lengths = sorted(n for batches, _ in split for batch in batches for n in batch.sample_lengths)
    assert single_lengths == split_lengths


def test_data_position_rolls_into_the_next_epoch(lengths):
    planner = BatchPlanner([[1] * n for n in lengths], 512, 4, 1, 0, 0, True, 0)
    per_epoch = planner.steps_per_epoch(accumulation=2)
    position = DataPosition()
    for _ in range(per_epoch):
        planner.advance(position, accumulation=2)
    assert position == DataPosition(epoch=1, rows_consumed=0)


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_packed_row_gives_each_sample_the_logits_it_gets_alone(tiny, attn):
    tokenizer = AutoTokenizer.from_pretrained(tiny.model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny.model_dir, attn_implementation=attn, dtype=torch.float32)
    model.eval()
    samples = [encode_sample(tokenizer, sample) for sample in generate_samples(3, seed=7)]
    row_len = sum(map(len, samples)) + 5  # some padding at the end too
    packed = collate([samples], max_len=row_len, pad_id=tokenizer.pad_token_id, packing=True)
    with torch.no_grad():
        packed_logits = model(**packed.model_inputs(torch.device("cpu"))).logits[0]
        start = 0
        for ids in samples:
            alone = model(input_ids=torch.tensor([ids])).logits[0]
            torch.testing.assert_close(packed_logits[start : start + len(ids)], alone, rtol=1e-4, atol=1e-4)
            start += len(ids)
        # Control: without per-sample positions the second sample would see the first one.
        leaky = model(input_ids=packed.input_ids).logits[0]
        second = slice(len(samples[0]), len(samples[0]) + len(samples[1]))
        assert not torch.allclose(leaky[second], packed_logits[second], atol=1e-3)
