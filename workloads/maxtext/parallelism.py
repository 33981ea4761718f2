"""Does a MaxText job's `ici_*`/`dcn_*` parallelism match the slices it is given?

Pure functions over plain values, with no MaxText or JAX import, so the infrastructure code can mirror
the check when it plans a job. The rules are MaxText 0.2.5's (`fill_unspecified_mesh_axes` and the
config validation in `configs/types.py`):

- the `ici_*` axes of MaxText's mesh multiply to the chips (devices) per slice;
- the `dcn_*` axes multiply to the number of slices (MaxText refuses DCN parallelism on one slice);
- at most one axis per kind may be -1, which MaxText fills with whatever the others leave over.

An elastic job must satisfy this for every slice count it may run on, so its DCN side needs a -1 axis.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# `<kind>_<name>_parallelism` -> the mesh axis MaxText feeds it to (types.py's ici_map/dcn_map).
MESH_AXIS_OF_NAME: dict[str, str] = {
    "diloco": "diloco",
    "data": "data",
    "pipeline": "stage",
    "fsdp": "fsdp",
    "fsdp_transpose": "fsdp_transpose",
    "sequence": "sequence",
    "context": "context",
    "context_usp_ulysses": "context_usp_ulysses",
    "context_autoregressive": "context_autoregressive",
    "tensor": "tensor",
    "tensor_sequence": "tensor_sequence",
    "expert": "expert",
    "autoregressive": "autoregressive",
}

# base.yml's `mesh_axes`; tests compare it (and the defaults below) with the installed MaxText.
DEFAULT_MESH_AXES: tuple[str, ...] = (
    "diloco", "data", "stage", "fsdp", "fsdp_transpose", "context", "context_usp_ulysses",
    "context_autoregressive", "tensor", "tensor_sequence", "expert", "autoregressive",
)  # fmt: skip

# base.yml's defaults: MaxText fills FSDP within a slice and data parallelism across slices.
DEFAULT_FILLED_AXIS: dict[str, str] = {"ici": "fsdp", "dcn": "data"}

KINDS: dict[str, str] = {"ici": "chips per slice", "dcn": "slices"}
_KEY_PATTERN = re.compile(r"^(ici|dcn)_([a-z_]+)_parallelism$")
FILL_IN = -1


class ParallelismError(ValueError):
    """A parallelism argument that cannot run on the given slices: names the argument, value, what's allowed."""


def default_parallelism() -> dict[str, int]:
    """MaxText 0.2.5's default for every `ici_*`/`dcn_*` parallelism key."""
    return {
        f"{kind}_{name}_parallelism": FILL_IN if DEFAULT_FILLED_AXIS[kind] == name else 1
        for kind in KINDS
        for name in MESH_AXIS_OF_NAME
    }


def parse_overrides(maxtext_args: Sequence[str]) -> dict[str, str]:
    """`key=value` MaxText arguments as a dict; a leading `*.yml` config path is skipped."""
    overrides: dict[str, str] = {}
    for position, arg in enumerate(maxtext_args):
        if position == 0 and arg.endswith(".yml"):
            continue
        key, separator, value = arg.partition("=")
        if not separator or not key:
            raise ParallelismError(f"MaxText argument {arg!r} is not key=value: allowed is key=value, e.g. steps=100")
        overrides[key.strip()] = value.strip()
    return overrides


@dataclass(frozen=True)
class MeshShape:
    """Mesh axis -> size (axes of size 1 left out), within a slice (`ici`) and across slices (`dcn`)."""

    ici: dict[str, int]
    dcn: dict[str, int]


def check_parallelism(overrides: Mapping[str, str], devices_per_slice: int, slices: int) -> MeshShape:
    """Resolve MaxText's mesh for `slices` slices of `devices_per_slice` JAX devices, or raise ParallelismError."""
    values = _parallelism_values(overrides)
    mesh_axes = _mesh_axes(overrides)
    _refuse_values_outside_the_mesh(values, mesh_axes)
    targets = {"ici": devices_per_slice, "dcn": slices}
    return MeshShape(
        **{kind: _resolve_kind(kind, values, mesh_axes, targets[kind]) for kind in KINDS},
    )


def check_elastic_parallelism(
    overrides: Mapping[str, str], devices_per_slice: int, slice_counts: Iterable[int]
) -> dict[int, MeshShape]:
    """The mesh for every slice count an (elastic) job may run on; raises naming the count that fails."""
    counts = list(slice_counts)
    shapes: dict[int, MeshShape] = {}
    for count in counts:
        try:
            shapes[count] = check_parallelism(overrides, devices_per_slice, count)
        except ParallelismError as error:
            if len(counts) == 1:
                raise
            raise ParallelismError(
                f"{error} (the job is elastic over {counts[0]}..{counts[-1]} slices and fails at {count}; "
                "leave one dcn_* axis at -1, as dcn_data_parallelism is by default, so MaxText fills it in "
                "for each slice count)"
            ) from error
    return shapes


def _parallelism_values(overrides: Mapping[str, str]) -> dict[str, int]:
    values = default_parallelism()
    for key, raw in overrides.items():
        match = _KEY_PATTERN.match(key)
        if not match:
            continue
        if match.group(2) not in MESH_AXIS_OF_NAME:
            allowed = ", ".join(f"{match.group(1)}_{name}_parallelism" for name in MESH_AXIS_OF_NAME)
            raise ParallelismError(f"{key}={raw}: MaxText 0.2.5 has no such argument; allowed are {allowed}")
        values[key] = _parse_size(key, raw)
    return values


def _parse_size(key: str, raw: str) -> int:
    try:
        size = int(raw)
    except ValueError:
        size = 0
    if size != FILL_IN and size < 1:
        raise ParallelismError(f"{key}={raw}: allowed is a positive integer, or -1 for MaxText to fill it in")
    return size


def _mesh_axes(overrides: Mapping[str, str]) -> tuple[str, ...]:
    raw = overrides.get("mesh_axes")
    if raw is None:
        return DEFAULT_MESH_AXES
    axes = tuple(axis.strip(" '\"") for axis in raw.strip("[]").split(",") if axis.strip(" '\""))
    if not axes:
        raise ParallelismError(f"mesh_axes={raw}: allowed is a list of axis names, e.g. [data,fsdp,tensor]")
    return axes


def _refuse_values_outside_the_mesh(values: Mapping[str, int], mesh_axes: Sequence[str]) -> None:
    """MaxText silently drops a size whose axis is not in `mesh_axes`; a job asking for one is a mistake."""
    for key, size in values.items():
        name = _name_of(key)
        if size != 1 and MESH_AXIS_OF_NAME[name] not in mesh_axes:
            raise ParallelismError(
                f"{key}={size}: MaxText's mesh_axes ({', '.join(mesh_axes)}) have no "
                f"'{MESH_AXIS_OF_NAME[name]}' axis, so MaxText would ignore it; allowed is 1"
                + (" (shard sequences with *_context_parallelism)" if name == "sequence" else "")
            )


def _resolve_kind(kind: str, values: Mapping[str, int], mesh_axes: Sequence[str], target: int) -> dict[str, int]:
    sizes = {
        key: size
        for key, size in values.items()
        if key.startswith(f"{kind}_") and MESH_AXIS_OF_NAME[_name_of(key)] in mesh_axes
    }
    filled = [key for key, size in sizes.items() if size == FILL_IN]
    if len(filled) > 1:
        raise ParallelismError(
            f"{' and '.join(f'{key}=-1' for key in filled)}: allowed is at most one {kind}_* axis at -1 "
            f"(MaxText fills a single one with the {KINDS[kind]} the others leave over)"
        )
    fixed = {key: size for key, size in sizes.items() if size != FILL_IN}
    fixed_product = math.prod(fixed.values())
    if filled:
        if target % fixed_product:
            raise ParallelismError(
                f"{filled[0]}=-1 cannot be filled in: {_describe(kind, fixed, 'other ')} "
                f"multiplies to {fixed_product}, "
                f"which does not divide the job's {target} {KINDS[kind]}; allowed are {kind}_* sizes whose "
                f"product divides {target}"
            )
        sizes[filled[0]] = target // fixed_product
    elif fixed_product != target:
        raise ParallelismError(
            f"{_describe(kind, fixed)} multiplies to {fixed_product}, but the job has {target} {KINDS[kind]}: "
            f"allowed are {kind}_* sizes whose product is {target}, or one {kind}_* axis at -1 for MaxText "
            "to fill in"
        )
    return {MESH_AXIS_OF_NAME[_name_of(key)]: size for key, size in sizes.items() if size != 1}


def _name_of(key: str) -> str:
    """`ici_fsdp_parallelism` -> `fsdp`."""
    return _KEY_PATTERN.match(key).group(2)


def _describe(kind: str, sizes: Mapping[str, int], other: str = "") -> str:
    """The sizes that matter to a message: those other than 1."""
    named = [f"{key}={size}" for key, size in sizes.items() if size != 1]
    return " x ".join(named) if named else f"every {other}{kind}_* axis at 1"
