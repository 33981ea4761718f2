"""MaxText's mesh rules and a job's slice range, from the trainer's own pure modules.

`workloads/maxtext/parallelism.py` (MaxText's `ici_*`/`dcn_*` rules, compared with the installed MaxText by
its tests) and `workloads/maxtext/slices.py` (the slice range) are the one definition. They import only the
standard library (an import-linter contract in pyproject.toml), so importing them loads no JAX or Ray; this is
the one import of the trainers in components/ (that contract's ignore_imports entry). The config checks, the
RayJob and the trainer therefore apply the same rule; the trainer receives the numbers as flags and never
imports the program.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from components.facts.topology import TpuSlice
from workloads.maxtext.parallelism import (
    _KEY_PATTERN,
    DEFAULT_FILLED_AXIS,
    FILL_IN,
    MESH_AXIS_OF_NAME,
    ParallelismError,
    check_elastic_parallelism,
)
from workloads.maxtext.slices import slice_range

MAXTEXT_AXES: tuple[str, ...] = tuple(MESH_AXIS_OF_NAME)  # `<kind>_<name>_parallelism` names
PARALLELISM_ARGUMENT = _KEY_PATTERN  # `ici_<name>_parallelism` / `dcn_<name>_parallelism`
ICI_FILL_AXIS: str = DEFAULT_FILLED_AXIS["ici"]  # takes the chips the other ici axes leave
DCN_FILL_AXIS: str = DEFAULT_FILLED_AXIS["dcn"]  # takes the slices the other dcn axes leave


SETTINGS_FILE = Path(__file__).with_name("maxtext_settings.json")


@dataclass(frozen=True)
class MaxTextSettings:
    """What the pinned MaxText takes as `key=value` (components/facts/maxtext_settings.json, written from the installed
    MaxText by components/facts/gen_maxtext_settings.py and compared with it by tests/workloads/maxtext)."""

    version: str
    kinds: Mapping[str, list]  # setting -> the alternatives its type accepts (gen_maxtext_settings.describe)
    defaults: Mapping[str, object]  # base.yml's value of each setting, as MaxText loads it
    model_configs: Mapping[str, Mapping[str, object]]  # model -> what its configs/models/<model>.yml sets

    @property
    def model_names(self) -> frozenset[str]:
        """The model_name values MaxText's config accepts: any other is refused at start."""
        return frozenset(self.kinds["model_name"][0]["choices"])

    def model_config(self, model_name: str) -> Mapping[str, object]:
        """What the model's yml sets (MaxText reads an -Instruct model's architecture from its base model's file)."""
        return self.model_configs.get(model_name.replace("-Instruct", ""), {})


@cache
def maxtext_settings() -> MaxTextSettings:
    facts = json.loads(SETTINGS_FILE.read_text())
    return MaxTextSettings(facts["maxtext"], facts["settings"], facts["defaults"], facts["model_configs"])


def unknown_model(name: str) -> str | None:
    """Why MaxText would refuse `name` as its model_name, naming the closest models it knows, or None."""
    settings = maxtext_settings()
    if name in settings.model_names:
        return None
    close = difflib.get_close_matches(name, sorted(settings.model_names), n=4, cutoff=0.6)
    allowed = f"{', '.join(close)} or another model_name in" if close else "a model_name in"
    return (
        f"is not a model of MaxText {settings.version}, whose config refuses it at start "
        f"(allowed: {allowed} components/facts/maxtext_settings.json)"
    )


def slice_flags(tpu: TpuSlice, slices: int) -> list[str]:
    """The trainer's and the fit check's flags for `slices` slices of one shape (workloads/maxtext/cli.py)."""
    flags = {
        "--accelerator-type": tpu.generation.ray_accelerator_type,
        "--topology": tpu.topology,
        "--slices": str(slices),
        "--hosts-per-slice": str(tpu.vms),
        "--chips-per-host": str(tpu.chips_per_vm),
    }
    if tpu.generation.devices_per_chip != 1:
        flags["--devices-per-chip"] = str(tpu.generation.devices_per_chip)
    return [word for flag in flags.items() for word in flag]


def job_slice_range(group_slices: int, min_slices: int | None, max_slices: int | None) -> tuple[int, int]:
    """A stack job's (fewest, most) slices: it starts on maxSlices, or on every slice of its group."""
    return slice_range(group_slices if max_slices is None else max_slices, min_slices, max_slices)


def mesh_sizes(sizes: Mapping[str, int], fill_axis: str, target: int | None) -> dict[str, int]:
    """The configured axes plus the fill axis sized to what is left; None leaves it to MaxText (-1)."""
    resolved = dict(sizes)
    if fill_axis not in resolved:
        resolved[fill_axis] = FILL_IN if target is None else target // math.prod(sizes.values())
    return resolved


def parallelism_arguments(
    ici: Mapping[str, int], dcn: Mapping[str, int], devices_per_slice: int, slice_range: tuple[int, int]
) -> dict[str, int]:
    """MaxText's `<kind>_<axis>_parallelism` arguments; an elastic job's DCN fill axis stays -1."""
    lowest, highest = slice_range
    ici_sizes = mesh_sizes(ici, ICI_FILL_AXIS, devices_per_slice)
    dcn_sizes = mesh_sizes(dcn, DCN_FILL_AXIS, highest if lowest == highest else None)
    return {
        **{f"ici_{axis}_parallelism": size for axis, size in sorted(ici_sizes.items())},
        **{f"dcn_{axis}_parallelism": size for axis, size in sorted(dcn_sizes.items())},
    }


def mesh_errors(
    ici: Mapping[str, int],
    dcn: Mapping[str, int],
    extra_args: Mapping[str, str],
    devices_per_slice: int,
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
            check_elastic_parallelism(overrides, devices_per_slice, range(lowest, highest + 1))
        except ParallelismError as error:
            errors[kind] = str(error)
    return errors
