"""The scheduled HLO module libtpu compiles, parsed: computations, instructions, and how often each runs.

XLA's own `cost_analysis()` counts a while loop's body once, whatever its trip count (a `lax.scan` of
five matmuls reports one), and MaxText scans its decoder layers. So `executions` weighs every computation by
how often it runs per step: a while body by its loop's trip count (from the counter's start to the bound of
the `compare(i, constant) LT` in its condition, by the step its body adds, or XLA's `known_trip_count`),
a fusion or call by its caller's count.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field

BYTES_PER_ELEMENT = {
    "pred": 1, "s4": 0.5, "u4": 0.5, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "s32": 4, "u32": 4, "s64": 8, "u64": 8,
    "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "c64": 8, "c128": 16,
}  # fmt: skip
_ARRAY = re.compile(r"\b(pred|[su](?:4|8|16|32|64)|f8e\w+?|bf16|f16|f32|f64|c64|c128)\[([\d,]*)\]")
_COMPUTATION = re.compile(r"^(?:ENTRY )?%([\w.\-]+) ")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%([\w.\-]+) = ")
_CALLEES = re.compile(r"\b(calls|to_apply|body|condition|true_computation|false_computation)=%([\w.\-]+)")
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")
OPERAND_NAME = re.compile(r"%([\w.\-]+)")
# A computation's closing brace; one that runs on another core (SparseCore) names its execution thread there.
_END = re.compile(r'^\}(, execution_thread="[^"]*")?\s*$')


@dataclass(frozen=True)
class Instruction:
    name: str
    shape: str
    opcode: str
    arguments: str  # the text between the opcode's parentheses: operand names, or a constant's literal
    attributes: str

    @property
    def operands(self) -> list[str]:
        return OPERAND_NAME.findall(self.arguments)


@dataclass
class Computation:
    name: str
    instructions: dict[str, Instruction] = field(default_factory=dict)
    fused: bool = False  # called by a fusion: its instructions never touch HBM on their own


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
        elif _END.match(line):
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
                callees += OPERAND_NAME.findall(branches)
            for callee in callees:
                callers[callee].append((computation.name, trips))
    counts: dict[str, int] = {}
    counting: set[str] = set()

    def count(name: str) -> int:
        if name in counting:  # HLO's call graph has no cycles: the text was split into computations wrongly
            raise ValueError(f"computation {name} calls itself: the HLO module's text did not parse")
        if name not in counts:
            counting.add(name)
            counts[name] = 1 if name == entry else sum(count(caller) * trips for caller, trips in callers[name])
            counting.discard(name)
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
    condition = computations.get(callee(loop, "condition"))
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
        step = _loop_step(computations.get(callee(loop, "body")), index)
        return -(-(limit - (_loop_start(loop, caller, index) or 0)) // step)
    return 0


def callee(instruction: Instruction, role: str) -> str:
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
