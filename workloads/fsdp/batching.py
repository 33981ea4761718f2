"""Rows, micro-batches and the data position.

A *row* is one sequence of ``max_len`` tokens holding one sample (padding) or several (packing).
Each epoch's rows are planned identically on every rank from the sample lengths alone, so a
step's rows, its target-token count and the data position (rows consumed in the epoch) are
global facts: a checkpoint resumes on any world size at the same row.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import torch

from workloads.fsdp.distributed import from_rank_zero
from workloads.fsdp.packing import assign_samples, plan_row_lengths

IGNORE_INDEX = -100


def fill_epoch_rows(
    lengths: Sequence[int], row_lengths: Sequence[Sequence[int]] | None, seed: int, epoch: int
) -> list[list[int]]:
    """The epoch's rows of sample indices: the packed rows' lengths filled in the epoch's shuffled order, or
    (``row_lengths`` None) one sample per padded row."""
    rng = random.Random(seed * 100_003 + epoch)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    if row_lengths is None:
        return [[index] for index in order]
    rows = assign_samples(row_lengths, lengths, order)
    rng.shuffle(rows)
    return rows


def padding_fraction(rows: Sequence[Sequence[int]], lengths: Sequence[int], max_len: int) -> float:
    used = sum(lengths[i] for row in rows for i in row)
    return 1.0 - used / (len(rows) * max_len)


@dataclass
class MicroBatch:
    input_ids: torch.Tensor  # [rows, max_len]
    targets: torch.Tensor  # next token per position, IGNORE_INDEX where there is none
    position_ids: torch.Tensor | None  # packing: restart at 0 per sample (keeps attention inside it)
    attention_mask: torch.Tensor | None  # padding: 1 for real tokens
    sample_lengths: list[int]  # every sample's token count, for useful tokens and FLOPs

    def model_inputs(self, device: torch.device) -> dict[str, torch.Tensor | bool]:
        # No KV cache: with one, transformers skips the packed-sequence mask and samples see each other.
        inputs: dict[str, torch.Tensor | bool] = {
            "input_ids": self.input_ids.to(device, non_blocking=True),
            "use_cache": False,
        }
        if self.position_ids is not None:
            inputs["position_ids"] = self.position_ids.to(device, non_blocking=True)
        if self.attention_mask is not None:
            inputs["attention_mask"] = self.attention_mask.to(device, non_blocking=True)
        return inputs

    @property
    def target_tokens(self) -> int:
        return sum(length - 1 for length in self.sample_lengths)


def collate(rows: Sequence[Sequence[Sequence[int]]], max_len: int, pad_id: int, packing: bool) -> MicroBatch:
    """``rows`` holds, per row, the token ids of its samples (an empty row is all padding)."""
    count = max(len(rows), 1)
    input_ids = torch.full((count, max_len), pad_id, dtype=torch.long)
    targets = torch.full((count, max_len), IGNORE_INDEX, dtype=torch.long)
    position_ids = torch.zeros((count, max_len), dtype=torch.long)
    attention_mask = torch.zeros((count, max_len), dtype=torch.long)
    lengths: list[int] = []
    for row_index, samples in enumerate(rows):
        start = 0
        for ids in samples:
            end = start + len(ids)
            sample = torch.tensor(ids, dtype=torch.long)
            input_ids[row_index, start:end] = sample
            targets[row_index, start : end - 1] = sample[1:]  # the last token predicts nothing in its sample
            position_ids[row_index, start:end] = torch.arange(len(ids))
            attention_mask[row_index, start:end] = 1
            lengths.append(len(ids))
            start = end
        # Padding gets its own run of positions, so it reads as a separate (ignored) sequence.
        position_ids[row_index, start:] = torch.arange(max_len - start)
    for row_index in range(len(rows), count):
        position_ids[row_index] = torch.arange(max_len)
    attention_mask[attention_mask.sum(dim=1) == 0, 0] = 1  # an all-padding row must not be fully masked (NaN)
    if packing:
        return MicroBatch(input_ids, targets, position_ids, None, lengths)
    return MicroBatch(input_ids, targets, None, attention_mask, lengths)


@dataclass
class DataPosition:
    epoch: int = 0
    rows_consumed: int = 0  # global rows of this epoch already trained on

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "rows_consumed": self.rows_consumed}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.rows_consumed = int(state["epoch"]), int(state["rows_consumed"])


class BatchPlanner:
    """Hands each rank its micro-batches of a step; rank r takes rows [r*B, (r+1)*B) of each global micro-batch."""

    def __init__(
        self,
        samples: Sequence[Sequence[int]],
        max_len: int,
        rows_per_device: int,
        world_size: int,
        rank: int,
        pad_id: int,
        packing: bool,
        seed: int,
    ):
        self.samples, self.max_len, self.pad_id, self.packing, self.seed = samples, max_len, pad_id, packing, seed
        self.lengths = [len(sample) for sample in samples]
        self.rows_per_device, self.world_size, self.rank = rows_per_device, world_size, rank
        self._epoch_rows: dict[int, list[list[int]]] = {}

    @cached_property
    def _row_lengths(self) -> list[list[int]] | None:
        """Planned on rank 0 for everyone: a rank on another CPU must not pack differently."""
        return from_rank_zero(lambda: plan_row_lengths(self.lengths, self.max_len)) if self.packing else None

    def rows_for_epoch(self, epoch: int) -> list[list[int]]:
        if epoch not in self._epoch_rows:
            self._epoch_rows = {epoch: fill_epoch_rows(self.lengths, self._row_lengths, self.seed, epoch)}
        return self._epoch_rows[epoch]

    def rows_per_step(self, accumulation: int) -> int:
        return self.rows_per_device * self.world_size * accumulation

    def steps_per_epoch(self, accumulation: int) -> int:
        return len(self.rows_for_epoch(0)) // self.rows_per_step(accumulation)

    def _micro_batch(self, rows: Sequence[Sequence[int]], global_start: int) -> MicroBatch:
        mine = rows[
            global_start + self.rank * self.rows_per_device : global_start + (self.rank + 1) * self.rows_per_device
        ]
        return collate([[self.samples[i] for i in row] for row in mine], self.max_len, self.pad_id, self.packing)

    def step_batches(self, position: DataPosition, accumulation: int) -> tuple[list[MicroBatch], int]:
        """This rank's micro-batches for the step at ``position`` and the step's global target-token count."""
        rows = self.rows_for_epoch(position.epoch)
        start, global_rows = position.rows_consumed, self.rows_per_device * self.world_size
        step_rows = rows[start : start + self.rows_per_step(accumulation)]
        global_targets = sum(self.lengths[i] - 1 for row in step_rows for i in row)
        batches = [self._micro_batch(rows, start + k * global_rows) for k in range(accumulation)]
        return batches, global_targets

    def eval_batches(self, max_batches: int) -> list[MicroBatch]:
        """Every held-out row once; a rank past the end gets an all-padding row so collectives stay matched."""
        rows = self.rows_for_epoch(0)
        global_rows = self.rows_per_device * self.world_size
        count = -(-len(rows) // global_rows)
        if max_batches:
            count = min(count, max_batches)
        return [self._micro_batch(rows, k * global_rows) for k in range(count)]

    def advance(self, position: DataPosition, accumulation: int) -> None:
        position.rows_consumed += self.rows_per_step(accumulation)
        if position.rows_consumed + self.rows_per_step(accumulation) > len(self.rows_for_epoch(position.epoch)):
            position.epoch, position.rows_consumed = position.epoch + 1, 0
