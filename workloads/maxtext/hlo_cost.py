"""What one chip does per step, read from the compiled program's HLO text: matrix FLOPs and collectives.

XLA's own `cost_analysis()` counts a while loop's body once, whatever its trip count (a `lax.scan` of
five matmuls reports one), and MaxText scans its decoder layers: the cost of a scanned model comes out
a fraction of the truth. So this module walks the scheduled HLO itself and weighs every computation by
how often it runs: a while body by its loop's trip count (the `compare(i, constant) LT` in its
condition, or XLA's `known_trip_count`), a fusion or call by its caller's count.

- FLOPs: `dot` and `convolution` (TPU lowers MaxText's matmuls to convolutions), counted as XLA's
  HloCostAnalysis counts them (two per multiply-add, only valid window positions). Element-wise work
  runs beside the matrix units and is left out.
- Collectives within a slice (ICI): all-gather, reduce-scatter, all-reduce, all-to-all and collective
  permute, with the bytes each chip sends over its links in a ring of the group's size.
- Across slices (DCN): libtpu lowers a cross-slice collective to host transfers tagged
  `_xla_megascale_transfer_type`; each `send` is one transfer of its operand.
- HBM traffic: the operands and results of every instruction of a non-fused computation (a fusion
  reads its inputs and writes its result once), the same approximation XLA's "bytes accessed" makes.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

BYTES_PER_ELEMENT = {
    "pred": 1, "s4": 0.5, "u4": 0.5, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "s32": 4, "u32": 4, "s64": 8, "u64": 8,
    "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "c64": 8, "c128": 16,
}  # fmt: skip
_ARRAY = re.compile(r"\b(pred|[su](?:4|8|16|32|64)|f8e\w+?|bf16|f16|f32|f64|c64|c128)\[([\d,]*)\]")
_COMPUTATION = re.compile(r"^(?:ENTRY )?%([\w.\-]+) ")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%([\w.\-]+) = ")
_CALLEES = re.compile(r"\b(calls|to_apply|body|condition|true_computation|false_computation)=%([\w.\-]+)")
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")
_OPERAND_NAME = re.compile(r"%([\w.\-]+)")
ICI_COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute")
# Opcodes that move no data through HBM of their own.
_NO_TRAFFIC = {
    "parameter", "constant", "get-tuple-element", "tuple", "bitcast", "while", "call", "conditional",
    "after-all", "send", "recv", "send-done", "recv-done", "opt-barrier", "partition-id", "replica-id",
}  # fmt: skip


@dataclass(frozen=True)
class Instruction:
    name: str
    shape: str
    opcode: str
    arguments: str  # the text between the opcode's parentheses: operand names, or a constant's literal
    attributes: str

    @property
    def operands(self) -> list[str]:
        return _OPERAND_NAME.findall(self.arguments)


@dataclass
class Computation:
    name: str
    instructions: dict[str, Instruction] = field(default_factory=dict)
    fused: bool = False  # called by a fusion: its instructions never touch HBM on their own


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


def array_bytes(shape: str) -> float:
    """Bytes of every array in a (possibly tuple) HLO shape; layouts and tiling are ignored."""
    return sum(_elements(dims) * _element_bytes(dtype) for dtype, dims in _ARRAY.findall(shape))


def array_dims(shape: str) -> list[int]:
    found = _ARRAY.search(shape)
    return [int(d) for d in found.group(2).split(",") if d] if found else []


def _elements(dims: str) -> int:
    return math.prod(int(d) for d in dims.split(",") if d)


def _element_bytes(dtype: str) -> float:
    return 1 if dtype.startswith("f8") else BYTES_PER_ELEMENT[dtype]


def parse_module(text: str) -> tuple[dict[str, Computation], str]:
    """The module's computations by name, and the entry computation's name."""
    computations: dict[str, Computation] = {}
    entry = ""
    current: Computation | None = None
    pending: list[str] = []  # one instruction's lines: a kernel's backend config may span several

    def flush() -> None:
        instruction = _parse_instruction("\n".join(pending)) if pending else None
        if current is not None and instruction is not None:
            current.instructions[instruction.name] = instruction
        pending.clear()

    for line in text.splitlines():
        if current is None:
            header = _COMPUTATION.match(line)
            if header and line.rstrip().endswith("{"):
                current = computations.setdefault(header.group(1), Computation(header.group(1)))
                entry = header.group(1) if line.startswith("ENTRY") else entry
        elif line.strip() == "}":
            flush()
            current = None
        elif _INSTRUCTION.match(line):
            flush()
            pending.append(line)
        elif pending:
            pending.append(line)
    for computation in computations.values():
        for instruction in computation.instructions.values():
            if instruction.opcode == "fusion":
                for _, callee in _CALLEES.findall(instruction.attributes):
                    if callee in computations:
                        computations[callee].fused = True
    return computations, entry


def _parse_instruction(line: str) -> Instruction | None:
    head = _INSTRUCTION.match(line)
    if head is None:
        return None
    rest = line[head.end() :]
    shape_end = _matching(rest, 0) + 1 if rest.startswith("(") else rest.index(" ")
    shape, rest = rest[:shape_end], rest[shape_end:].lstrip()
    open_paren = rest.find("(")
    if open_paren < 0:
        return None
    opcode = rest[:open_paren]
    close = _matching(rest, open_paren)
    return Instruction(head.group(1), shape, opcode, rest[open_paren + 1 : close], rest[close + 1 :])


def _matching(text: str, start: int) -> int:
    depth = 0
    for index in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return index
    return len(text) - 1


def executions(computations: dict[str, Computation], entry: str) -> tuple[dict[str, int], int]:
    """How often each computation runs per step, and how many while loops had no trip count to read."""
    callers: dict[str, list[tuple[str, int]]] = defaultdict(list)
    unknown = 0
    for computation in computations.values():
        for instruction in computation.instructions.values():
            trips = 1
            if instruction.opcode == "while":
                trips = _trip_count(instruction, computation, computations)
                unknown += trips == 0
                trips = max(trips, 1)
            callees = [callee for _, callee in _CALLEES.findall(instruction.attributes)]
            for branches in _BRANCHES.findall(instruction.attributes):
                callees += _OPERAND_NAME.findall(branches)
            for callee in callees:
                callers[callee].append((computation.name, trips))
    counts: dict[str, int] = {}

    def count(name: str) -> int:
        if name not in counts:
            counts[name] = 1 if name == entry else sum(count(caller) * trips for caller, trips in callers[name])
        return counts[name]

    for name in computations:
        count(name)
    return counts, unknown


def _trip_count(loop: Instruction, caller: Computation, computations: dict[str, Computation]) -> int:
    """Iterations of a counted loop: from its start to its bound by its step (XLA peels a first iteration out of
    some loops, and unrolls others: a windowed einsum's loop may take two steps per iteration)."""
    known = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', loop.attributes)
    if known:
        return int(known.group(1))
    condition = computations.get(_callee(loop, "condition"))
    if condition is None:
        return 0
    for compare in condition.instructions.values():
        if compare.opcode != "compare" or "direction=LT" not in compare.attributes or len(compare.operands) != 2:
            continue
        counter, bound = (condition.instructions.get(operand) for operand in compare.operands)
        limit = _constant(bound)
        if counter is None or limit is None or counter.opcode != "get-tuple-element":
            continue
        index = int(re.search(r"index=(\d+)", counter.attributes).group(1))
        step = _loop_step(computations.get(_callee(loop, "body")), index)
        return -(-(limit - (_loop_start(loop, caller, index) or 0)) // step)
    return 0


def _callee(instruction: Instruction, role: str) -> str:
    found = re.search(rf"\b{role}=%([\w.\-]+)", instruction.attributes)
    return found.group(1) if found else ""


def _constant(instruction: Instruction | None) -> int | None:
    if instruction is None or instruction.opcode != "constant":
        return None
    literal = instruction.arguments.strip()
    return int(literal) if literal.lstrip("-").isdigit() else None


def _loop_step(body: Computation | None, index: int) -> int:
    """What the body adds to the counter (element `index` of the loop state): `add(counter, constant)`, else 1."""
    if body is None or not body.instructions:
        return 1
    root = list(body.instructions.values())[-1]
    if root.opcode != "tuple" or index >= len(root.operands):
        return 1
    update = body.instructions.get(root.operands[index])
    if update is None or update.opcode != "add":
        return 1
    steps = [_constant(body.instructions.get(operand)) for operand in update.operands]
    return next((step for step in steps if step), 1)


def _loop_start(loop: Instruction, caller: Computation, index: int) -> int | None:
    """The counter's first value: element `index` of the loop's initial tuple, through copies."""
    tuple_ = caller.instructions.get(loop.operands[0]) if loop.operands else None
    if tuple_ is None or tuple_.opcode != "tuple" or index >= len(tuple_.operands):
        return None
    value = caller.instructions.get(tuple_.operands[index])
    while value is not None and value.opcode in ("copy", "bitcast") and value.operands:
        value = caller.instructions.get(value.operands[0])
    return _constant(value)


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
    fused = computations.get(_callee(instruction, "calls")) if instruction.opcode == "fusion" else None
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


def matmul_flops(instruction: Instruction, shapes: dict[str, str]) -> float:
    if instruction.opcode == "dot":
        contracting = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", instruction.attributes)
        lhs = array_dims(shapes.get(instruction.operands[0], ""))
        k = math.prod(lhs[int(d)] for d in contracting.group(1).split(",") if d) if contracting else 1
        return 2.0 * math.prod(array_dims(instruction.shape)) * k
    if instruction.opcode == "convolution":
        lhs, rhs = (array_dims(shapes.get(operand, "")) for operand in instruction.operands[:2])
        return 2.0 * _convolution_fmas(instruction, lhs, rhs, array_dims(instruction.shape))
    return 0.0


def _convolution_fmas(conv: Instruction, lhs: list[int], rhs: list[int], out: list[int]) -> int:
    """Multiply-adds of a convolution, as XLA's HloCostAnalysis::GetConvolutionFlops counts them."""
    labels = re.search(r"dim_labels=(\w+)_(\w+)->(\w+)", conv.attributes)
    if labels is None or not lhs or not rhs:
        return 0
    lhs_labels, rhs_labels, out_labels = labels.groups()
    feature_groups = _int_attribute(conv, "feature_group_count", 1)
    batch_groups = _int_attribute(conv, "batch_group_count", 1)
    fmas = (lhs[lhs_labels.index("f")] // feature_groups) * out[out_labels.index("f")]
    fmas *= lhs[lhs_labels.index("b")] // batch_groups
    window = _window(conv.attributes)
    for spatial, dim in enumerate(window):
        digit = str(spatial)
        fmas *= _valid_positions(lhs[lhs_labels.index(digit)], rhs[rhs_labels.index(digit)],
                                 out[out_labels.index(digit)], dim)  # fmt: skip
    return fmas


def _int_attribute(instruction: Instruction, name: str, default: int) -> int:
    found = re.search(rf"\b{name}=(\d+)", instruction.attributes)
    return int(found.group(1)) if found else default


@dataclass(frozen=True)
class _WindowDim:
    stride: int = 1
    pad_low: int = 0
    pad_high: int = 0
    base_dilation: int = 1
    window_dilation: int = 1


def _window(attributes: str) -> list[_WindowDim]:
    found = re.search(r"window=\{([^}]*)\}", attributes)
    if found is None:
        return []
    fields = dict(part.split("=", 1) for part in found.group(1).split())
    rank = len(fields["size"].split("x"))

    def each(key: str, default: str) -> list[str]:
        return fields.get(key, "x".join([default] * rank)).split("x")

    pads = [pad.split("_") for pad in each("pad", "0_0")]
    return [
        _WindowDim(int(stride), int(low), int(high), int(base), int(dilation))
        for stride, (low, high), base, dilation in zip(
            each("stride", "1"), pads, each("lhs_dilate", "1"), each("rhs_dilate", "1"), strict=True
        )
    ]


def _valid_positions(input_limit: int, kernel_limit: int, output_limit: int, dim: _WindowDim) -> int:
    valid = 0
    for kernel_index in range(kernel_limit):
        for output_index in range(output_limit):
            undilated = output_index * dim.stride - dim.pad_low + kernel_index * dim.window_dilation
            if undilated % dim.base_dilation:
                continue
            if 0 <= undilated // dim.base_dilation < input_limit:
                valid += 1
    return valid


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
