"""Matrix FLOPs of an HLO instruction, counted as XLA's HloCostAnalysis counts them.

`dot` and `convolution` (TPU lowers MaxText's matmuls to convolutions): two FLOPs per multiply-add, and for
a convolution only the window positions that fall inside its input. Element-wise work runs beside the
matrix units and is left out.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from tools.maxtext_fit.hlo_module import Instruction, array_dims


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
