"""Samples into rows with as little padding as bin packing allows.

Lengths are small integers with many repeats, so the rows are planned on the histogram of lengths:

1. the arc-flow LP (Valério de Carvalho, 1999) over the nodes 0..capacity, solved by HiGHS, gives row
   *patterns* (multisets of lengths) and how often to use each; its optimum is a lower bound on the rows;
2. each pattern is used as often as its whole count, then once more for the largest fractional parts while
   the samples last;
3. what is left is packed by minimum bin slack (MBS, Gupta & Ho, 1999).

Measured on text-to-SQL lengths at 512 tokens (benchmarks/README.md): the Martello-Toth lower bound or one row
above it, where best-fit-decreasing used 2-3% more rows. When the arc-flow graph would be too large (long rows
and many distinct lengths), MBS packs everything: with many samples per row it already leaves well under 1%.

Rows depend only on the histogram of lengths, so they are planned once per run (``plan_row_lengths``, on rank 0,
which shares them); each epoch's shuffled ``order`` only decides which of several equally long samples fills which
place (``assign_samples``). Every step is deterministic (HiGHS included, its work bounded by a count of
iterations, not a clock), so a resumed run plans the rows it checkpointed its position in.
"""

from __future__ import annotations

import bisect
import math
import warnings
from collections import Counter, defaultdict, deque
from collections.abc import Sequence

import numpy as np

# Once per run: 1.4 s at 48,000 arcs (512 tokens), 5 s at 81,000 (640), 9 s at 114,000 (768), 19 s at 181,000 (1024)
MAX_ARC_FLOW_ARCS = 120_000
LP_ITERATION_LIMIT = 100_000  # 2,600 at 512 tokens, 7,900 at 1024; past it MBS plans every row
MBS_SEARCH_BUDGET = 2000  # completions tried per row; counted, not timed, so a resume plans the same rows
FLOW_EPSILON = 1e-6


def pack_rows(lengths: Sequence[int], capacity: int, order: Sequence[int]) -> list[list[int]]:
    """Sample indices grouped into rows of at most ``capacity`` tokens."""
    return assign_samples(plan_row_lengths(lengths, capacity), lengths, order)


def plan_row_lengths(lengths: Sequence[int], capacity: int) -> list[list[int]]:
    """The rows as lists of sample lengths: what the LP and MBS decide, before any sample is placed."""
    for index, length in enumerate(lengths):
        if length > capacity:
            raise ValueError(f"sample {index} has {length} tokens, more than the row length {capacity}")
    rows, residual = arc_flow_rows(Counter(lengths), capacity)
    return rows + mbs_rows(residual, capacity)


def fewest_rows_bound(lengths: Sequence[int], capacity: int) -> int:
    """No packing needs fewer rows than the tokens fill (the LP bound is tighter; this one is free)."""
    return math.ceil(sum(lengths) / capacity)


# --- 1. and 2.: the arc-flow LP and its rounding -------------------------------------------------------------


def arc_flow_rows(counts: Counter[int], capacity: int) -> tuple[list[list[int]], Counter[int]]:
    """Rows (as lengths) from the rounded LP, and the lengths it left over; all left over if the LP is too big."""
    sizes = np.array(sorted(counts, reverse=True), dtype=np.int64)
    tails, heads, kinds = _arcs(sizes, capacity)
    if len(tails) > MAX_ARC_FLOW_ARCS or len(sizes) == 0:
        return [], Counter(counts)
    flows = _solve_arc_flow(tails, heads, kinds, sizes, counts, capacity)
    if flows is None:
        return [], Counter(counts)
    patterns = _decompose_into_patterns(tails, heads, kinds, flows, sizes, capacity)
    return _round_patterns(patterns, counts)


def _arcs(sizes: np.ndarray, capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Item arcs (i, i + size) from every node a row can reach, then loss arcs (i, capacity); kind -1 is loss."""
    reachable = np.zeros(capacity + 1, dtype=bool)
    reachable[0] = True
    for node in range(capacity + 1):
        if reachable[node]:
            reachable[node + sizes[sizes <= capacity - node]] = True
    nodes = np.flatnonzero(reachable)
    node_index, kind_index = np.nonzero(nodes[:, None] + sizes[None, :] <= capacity)
    loss_nodes = nodes[(nodes > 0) & (nodes < capacity)]
    tails = np.concatenate([nodes[node_index], loss_nodes])
    heads = np.concatenate([nodes[node_index] + sizes[kind_index], np.full(len(loss_nodes), capacity)])
    kinds = np.concatenate([kind_index, np.full(len(loss_nodes), -1)])
    return tails, heads, kinds


def _solve_arc_flow(
    tails: np.ndarray, heads: np.ndarray, kinds: np.ndarray, sizes: np.ndarray, counts: Counter[int], capacity: int
) -> np.ndarray | None:
    """Minimise the rows (flow out of node 0) so that every length is used at least as often as it occurs.

    "At least" (rounding uses a pattern only while its samples last): with "exactly", HiGHS's dual simplex
    stalls on this degenerate LP (measured: no answer in 30 s, against 1.6 s). None if HiGHS gives up."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    arcs, rows_variable = len(tails), len(tails)
    item_arcs = np.flatnonzero(kinds >= 0)
    # Flow conservation per node (in - out; the row count leaves node 0 and enters node capacity) ...
    conservation = coo_matrix(
        (
            np.concatenate([np.ones(arcs), -np.ones(arcs), [1.0, -1.0]]),
            (
                np.concatenate([heads, tails, [0, capacity]]),
                np.concatenate([np.arange(arcs), np.arange(arcs), [rows_variable, rows_variable]]),
            ),
        ),
        shape=(capacity + 1, arcs + 1),
    ).tocsr()
    # ... and, per length, minus the arcs that carry it, at most minus its count.
    coverage = coo_matrix(
        (-np.ones(len(item_arcs)), (kinds[item_arcs], item_arcs)), shape=(len(sizes), arcs + 1)
    ).tocsr()
    demand = np.array([counts[int(size)] for size in sizes], dtype=float)
    cost = np.zeros(arcs + 1)
    cost[rows_variable] = 1.0
    result = linprog(
        cost,
        A_eq=conservation,
        b_eq=np.zeros(capacity + 1),
        A_ub=coverage,
        b_ub=-demand,
        bounds=(0, None),
        method="highs",
        options={"maxiter": LP_ITERATION_LIMIT},
    )
    if result.status != 0:
        warnings.warn(
            f"the packing LP stopped ({result.message}); minimum bin slack plans every row instead",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    return result.x[:arcs]


def _decompose_into_patterns(
    tails: np.ndarray, heads: np.ndarray, kinds: np.ndarray, flows: np.ndarray, sizes: np.ndarray, capacity: int
) -> list[tuple[float, list[int]]]:
    """Split the flow into paths 0 -> capacity; a path's item arcs are a row pattern, its bottleneck its weight."""
    leaving: dict[int, list[int]] = defaultdict(list)
    remaining = flows.copy()
    for arc in np.flatnonzero(flows > FLOW_EPSILON):
        leaving[int(tails[arc])].append(int(arc))
    patterns = []
    while True:
        node, path = 0, []
        while node != capacity:
            open_arcs = [arc for arc in leaving[node] if remaining[arc] > FLOW_EPSILON]
            if not open_arcs:
                return patterns  # what little flow is left stays fractional: MBS packs its samples
            arc = max(open_arcs, key=lambda candidate: (remaining[candidate], -candidate))
            path.append(arc)
            node = int(heads[arc])
        weight = float(min(remaining[path]))
        remaining[path] -= weight
        patterns.append((weight, [int(sizes[kinds[arc]]) for arc in path if kinds[arc] >= 0]))


def _round_patterns(
    patterns: list[tuple[float, list[int]]], counts: Counter[int]
) -> tuple[list[list[int]], Counter[int]]:
    left, rows = Counter(counts), []

    def use_if_available(pattern: list[int]) -> None:
        if not Counter(pattern) - left:
            rows.append(pattern)
            left.subtract(pattern)

    for weight, pattern in patterns:
        for _ in range(math.floor(weight + FLOW_EPSILON)):
            use_if_available(pattern)
    for weight, pattern in sorted(patterns, key=lambda item: math.floor(item[0] + FLOW_EPSILON) - item[0]):
        if weight - math.floor(weight + FLOW_EPSILON) > FLOW_EPSILON:
            use_if_available(pattern)
    return rows, +left


# --- 3.: minimum bin slack ------------------------------------------------------------------------------------


def mbs_rows(counts: Counter[int], capacity: int) -> list[list[int]]:
    """Each row: the longest length left, completed by the remaining lengths that leave the least room."""
    left, sizes, rows = Counter(counts), sorted(+counts), []
    while sizes:
        longest = sizes[-1]
        completion = _least_slack_completion(left - Counter([longest]), sizes, capacity - longest)
        row = [longest] + completion
        left.subtract(row)
        sizes = [size for size in sizes if left[size] > 0]
        rows.append(row)
    return rows


def _least_slack_completion(available: Counter[int], sizes: list[int], room: int) -> list[int]:
    """Depth-first over distinct lengths, longest first (its first answer is first-fit's); stops at an exact fill."""
    best: list[int] = []
    best_fill, tries, chosen, used = 0, 0, [], Counter()

    def search(highest_position: int, left: int) -> None:
        nonlocal best, best_fill, tries
        if room - left > best_fill:
            best, best_fill = list(chosen), room - left
        position = min(highest_position, bisect.bisect_right(sizes, left) - 1)
        while position >= 0 and best_fill < room and tries < MBS_SEARCH_BUDGET:
            length = sizes[position]
            if used[length] < available[length]:
                tries += 1
                chosen.append(length)
                used[length] += 1
                search(position, left - length)
                used[length] -= 1
                chosen.pop()
            position -= 1

    search(len(sizes) - 1, room)
    return best


# --- samples for the lengths ----------------------------------------------------------------------------------


def assign_samples(rows: Sequence[Sequence[int]], lengths: Sequence[int], order: Sequence[int]) -> list[list[int]]:
    """Sample indices for rows of lengths; among equally long samples, earlier in ``order`` goes first."""
    queues: dict[int, deque[int]] = defaultdict(deque)
    for index in order:
        queues[lengths[index]].append(index)
    return [[queues[length].popleft() for length in row] for row in rows]
