"""What one chip does per step, read from the compiled program's HLO text: matrix FLOPs, HBM traffic, collectives.

Every computation counts as often as it runs (tools/maxtext_fit/hlo_module.py: XLA's cost_analysis counts a
scanned layer once).
- FLOPs: `dot` and `convolution` as XLA counts them (tools/maxtext_fit/hlo_flops.py); attention that runs in
  Pallas kernels has none in the HLO and is counted as kernels (the fit check adds MaxText's own count).
- Collectives within a slice (ICI): all-gather, reduce-scatter, all-reduce, all-to-all and collective
  permute, with the bytes each chip sends over its links in a ring of the group's size.
- Across slices (DCN): libtpu lowers a cross-slice collective to host transfers tagged
  `_xla_megascale_transfer_type`; each `send` is one transfer of its operand.
- HBM traffic: the operands and results of every instruction of a non-fused computation (a fusion reads
  what it slices of its inputs and writes its result once; asynchronous copies and collectives are left out).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tools.maxtext_fit.hlo_flops import matmul_flops
from tools.maxtext_fit.hlo_module import (
    Computation,
    Instruction,
    array_bytes,
    callee,
    executions,
    parse_module,
)

ICI_COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute")
# Opcodes that move no data through HBM of their own.
_NO_TRAFFIC = {
    "parameter", "constant", "get-tuple-element", "tuple", "bitcast", "while", "call", "conditional",
    "after-all", "send", "recv", "send-done", "recv-done", "opt-barrier", "partition-id", "replica-id",
}  # fmt: skip


@dataclass(frozen=True)
class Collective:
    kind: str  # all-gather, reduce-scatter, all-reduce, all-to-all, collective-permute
    network: str  # "ici" (within a slice) or "dcn" (across slices)
    operand_bytes: float  # per chip and execution
    group_size: int  # chips (ICI) or slices (DCN) taking part; 0 when not stated
    executions: int  # per step

    @property
    def link_bytes(self) -> float:
        """Bytes each chip sends per step, as a ring of `group_size` moves them."""
        n = max(self.group_size, 1)
        per_execution = {
            "all-gather": self.operand_bytes * (n - 1),
            "reduce-scatter": self.operand_bytes * (n - 1) / n,
            "all-reduce": 2 * self.operand_bytes * (n - 1) / n,
            "all-to-all": self.operand_bytes * (n - 1) / n,
        }.get(self.kind, self.operand_bytes)
        return per_execution * self.executions


@dataclass(frozen=True)
class StepCost:
    """Per chip and step."""

    matmul_flops: float
    hbm_bytes: float
    collectives: tuple[Collective, ...]
    unknown_trip_counts: int  # while loops counted once because their trip count was not found
    attention_kernels: int = 0  # Pallas attention kernels run per step: their FLOPs are not in the HLO

    def link_bytes(self, network: str) -> float:
        return sum(c.link_bytes for c in self.collectives if c.network == network)


@dataclass(frozen=True)
class StepWork:
    """Per chip and step: the compiled step's cost with MaxText's own counts beside it (the fit check's `cost`)."""

    matmul_flops: float  # as compiled: rematerialized forward passes included
    hbm_bytes: float
    ici_bytes: float  # sent over ICI links
    dcn_bytes: float  # sent over the data-center network, to other slices
    model_flops: float  # MaxText's own count (forward and backward), what MFU divides
    tokens: int
    steps: int  # the job's configured steps
    unknown_trip_counts: int = 0

    @classmethod
    def from_json(cls, cost: Mapping[str, Any]) -> StepWork:
        return cls(**{name: cost[name] for name in cls.__dataclass_fields__ if name in cost})


def step_cost(hlo_text: str, slices: int = 1) -> StepCost:
    """Matrix FLOPs, HBM bytes and collectives of one chip's step, from the compiled module's text.

    The module is one slice's program; `slices` is how many run it, the group of its DCN transfers."""
    computations, entry = parse_module(hlo_text)
    counts, unknown = executions(computations, entry)
    flops = hbm = 0.0
    kernels = 0
    collectives: list[Collective] = []
    for computation in computations.values():
        runs = counts.get(computation.name, 0)
        if runs == 0:
            continue
        shapes = {name: instruction.shape for name, instruction in computation.instructions.items()}
        for instruction in computation.instructions.values():
            flops += runs * matmul_flops(instruction, shapes)
            kernels += runs * _is_attention_kernel(instruction)
            if not computation.fused and instruction.opcode not in _NO_TRAFFIC:
                hbm += runs * _traffic(instruction, shapes, computations)
            collective = _collective(instruction, computation, shapes, runs, slices)
            if collective is not None:
                collectives.append(collective)
    return StepCost(flops, hbm, tuple(collectives), unknown, kernels)


def _is_attention_kernel(instruction: Instruction) -> bool:
    """A Mosaic (Pallas) kernel MaxText's flash attention runs: splash attention's forward or backward."""
    return 'custom_call_target="tpu_custom_call"' in instruction.attributes and (
        "splash" in instruction.name or "flash" in instruction.name
    )


def _traffic(instruction: Instruction, shapes: dict[str, str], computations: dict[str, Computation]) -> float:
    """HBM bytes one run of an unfused instruction reads and writes."""
    if instruction.opcode.endswith(("-start", "-done")):
        return 0.0  # asynchronous: collectives (counted as network) and transfers to and from host memory
    if instruction.opcode == "dynamic-update-slice":  # in place: reads and writes only the update
        return 2 * array_bytes(shapes.get(instruction.operands[1], ""))
    if instruction.opcode == "dynamic-slice":
        return 2 * array_bytes(instruction.shape)
    fused = computations.get(callee(instruction, "calls")) if instruction.opcode == "fusion" else None
    if fused is not None:
        return _fusion_traffic(instruction, shapes, fused)
    read = sum(array_bytes(shapes.get(operand, "")) for operand in instruction.operands)
    return read + array_bytes(instruction.shape)


def _fusion_traffic(fusion: Instruction, shapes: dict[str, str], fused: Computation) -> float:
    """A fusion reads only the slices it takes of an operand, and updates in place only what it writes: a scanned
    layer's fusion takes its layer of the stacked weights, not all of them."""
    parameters = {
        int(instruction.arguments): name for name, instruction in fused.instructions.items()
        if instruction.opcode == "parameter" and instruction.arguments.strip().isdigit()
    }  # fmt: skip
    consumers: dict[str, list[Instruction]] = defaultdict(list)
    for instruction in fused.instructions.values():
        for operand in instruction.operands:
            consumers[operand].append(instruction)
    root = list(fused.instructions.values())[-1]
    roots = [fused.instructions[name] for name in root.operands] if root.opcode == "tuple" else [root]
    updates = [r for r in roots if r.opcode == "dynamic-update-slice"]
    in_place = {update.operands[0] for update in updates}
    read = 0.0
    for index, operand in enumerate(fusion.operands):
        parameter = parameters.get(index, "")
        users = consumers.get(parameter, [])
        if parameter in in_place:
            continue
        if users and all(user.opcode in ("dynamic-slice", "slice", "gather") for user in users):
            read += sum(array_bytes(user.shape) for user in users)
        else:
            read += array_bytes(shapes.get(operand, ""))
    written = array_bytes(fusion.shape)
    written -= sum(array_bytes(u.shape) - array_bytes(fused.instructions[u.operands[1]].shape) for u in updates)
    return read + written


def _collective(
    instruction: Instruction, computation: Computation, shapes: dict[str, str], runs: int, slices: int
) -> Collective | None:
    operand_bytes = sum(array_bytes(shapes.get(operand, "")) for operand in instruction.operands)
    if instruction.opcode == "send":
        transfer = re.search(r'_xla_megascale_transfer_type="(\w+)"', instruction.attributes)
        if transfer is None:
            return None
        data = array_bytes(shapes.get(instruction.operands[0], ""))
        return Collective(transfer.group(1).lower().replace("_", "-"), "dcn", data, slices, runs)
    kind = instruction.opcode.removesuffix("-start")
    if kind not in ICI_COLLECTIVES:
        return None
    if kind == "all-reduce" and computation.name.startswith("all-reduce-scatter"):
        kind = "reduce-scatter"  # libtpu's reduce-scatter: an all-reduce fused with the slicing of its result
    return Collective(kind, "ici", operand_bytes, _group_size(instruction.attributes), runs)


def _group_size(attributes: str) -> int:
    listed = re.search(r"replica_groups=\{\{([\d,]*)\}", attributes)
    if listed:
        return len(listed.group(1).split(","))
    iota = re.search(r"replica_groups=\[(\d+),(\d+)\]<=", attributes)
    if iota:
        return int(iota.group(2))
    # Named mesh axes: `mesh['data'=2,'fsdp'=4] {'fsdp'}` groups the chips along the axes in braces.
    mesh = re.search(r"replica_groups=mesh\[([^\]]*)\] \{([^}]*)\}", attributes)
    if mesh is None:
        return 0
    sizes = {name: int(size) for name, size in re.findall(r"'([^']+)'=(\d+)", mesh.group(1))}
    return math.prod(sizes.get(name, 1) for name in re.findall(r"'([^']+)'", mesh.group(2)))
