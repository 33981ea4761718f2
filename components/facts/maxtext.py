"""MaxText's mesh rules and a job's slice range, from the trainer's own pure modules.

`workloads/maxtext/parallelism.py` (MaxText's `ici_*`/`dcn_*` rules, compared with the installed MaxText by
its tests) and `workloads/maxtext/slices.py` (the slice range) are the one definition. They import only the
standard library, so the program loads the two files by path instead of importing the `workloads` package,
whose other modules need Ray and JAX. The config checks, the RayJob and the trainer therefore apply the
same rule; the trainer receives the numbers as flags and never imports the program.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

from components.facts.topology import TpuSlice

TRAINER_DIR = Path(__file__).resolve().parents[2] / "workloads" / "maxtext"
PURE_TRAINER_MODULES = ("parallelism", "slices")


def _load_trainer_module(name: str) -> ModuleType:
    qualified = f"trainyard_maxtext_rules.{name}"
    if qualified in sys.modules:
        return sys.modules[qualified]
    spec = importlib.util.spec_from_file_location(qualified, TRAINER_DIR / f"{name}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the trainer's {name}.py from {TRAINER_DIR}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


parallelism = _load_trainer_module("parallelism")
slices = _load_trainer_module("slices")

MAXTEXT_AXES: tuple[str, ...] = tuple(parallelism.MESH_AXIS_OF_NAME)  # `<kind>_<name>_parallelism` names
PARALLELISM_ARGUMENT = parallelism._KEY_PATTERN  # `ici_<name>_parallelism` / `dcn_<name>_parallelism`
ICI_FILL_AXIS: str = parallelism.DEFAULT_FILLED_AXIS["ici"]  # takes the chips the other ici axes leave
DCN_FILL_AXIS: str = parallelism.DEFAULT_FILLED_AXIS["dcn"]  # takes the slices the other dcn axes leave
FILL_IN: int = parallelism.FILL_IN


def slice_flags(tpu: TpuSlice, slices: int) -> list[str]:
    """The trainer's and the fit check's flags for `slices` slices of one shape (workloads/maxtext/cli.py)."""
    return [
        "--accelerator-type", tpu.generation.ray_accelerator_type, "--topology", tpu.topology,
        "--slices", str(slices), "--hosts-per-slice", str(tpu.vms), "--chips-per-host", str(tpu.chips_per_vm),
    ]  # fmt: skip


def job_slice_range(group_slices: int, min_slices: int | None, max_slices: int | None) -> tuple[int, int]:
    """A stack job's (fewest, most) slices: it starts on maxSlices, or on every slice of its group."""
    return slices.slice_range(group_slices if max_slices is None else max_slices, min_slices, max_slices)


def mesh_sizes(sizes: Mapping[str, int], fill_axis: str, target: int | None) -> dict[str, int]:
    """The configured axes plus the fill axis sized to what is left; None leaves it to MaxText (-1)."""
    resolved = dict(sizes)
    if fill_axis not in resolved:
        resolved[fill_axis] = FILL_IN if target is None else target // math.prod(sizes.values())
    return resolved


def parallelism_arguments(
    ici: Mapping[str, int], dcn: Mapping[str, int], chips_per_slice: int, slice_range: tuple[int, int]
) -> dict[str, int]:
    """MaxText's `<kind>_<axis>_parallelism` arguments; an elastic job's DCN fill axis stays -1."""
    lowest, highest = slice_range
    ici_sizes = mesh_sizes(ici, ICI_FILL_AXIS, chips_per_slice)
    dcn_sizes = mesh_sizes(dcn, DCN_FILL_AXIS, highest if lowest == highest else None)
    return {
        **{f"ici_{axis}_parallelism": size for axis, size in sorted(ici_sizes.items())},
        **{f"dcn_{axis}_parallelism": size for axis, size in sorted(dcn_sizes.items())},
    }


def mesh_errors(
    ici: Mapping[str, int],
    dcn: Mapping[str, int],
    extra_args: Mapping[str, str],
    chips_per_slice: int,
    slice_range: tuple[int, int],
) -> dict[str, str]:
    """Why the trainer's own check (MaxText's rules) refuses each kind of the mesh ("ici", "dcn") on some
    slice count of the range; empty when it accepts both. Each kind is checked with the other left at
    MaxText's defaults (one axis at -1, which fits any count), so a message belongs to one config key."""
    configured = {"ici": mesh_sizes(ici, ICI_FILL_AXIS, None), "dcn": mesh_sizes(dcn, DCN_FILL_AXIS, None)}
    lowest, highest = slice_range
    errors: dict[str, str] = {}
    for kind, sizes in configured.items():
        overrides = dict(extra_args) | {f"{kind}_{axis}_parallelism": str(size) for axis, size in sizes.items()}
        try:
            parallelism.check_elastic_parallelism(overrides, chips_per_slice, range(lowest, highest + 1))
        except parallelism.ParallelismError as error:
            errors[kind] = str(error)
    return errors
