"""Slice facts: the numbers the stack derives once and hands to the trainer as flags.

The trainer never derives them itself (it must not import the Pulumi code); it only checks that the
facts it was given agree with each other, so a mistyped flag fails before any worker starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

CPU_ACCELERATOR = "CPU"


class SliceFactsError(ValueError):
    """Slice facts that contradict each other, naming the flag, its value and what is allowed."""


def chips_in_topology(topology: str) -> int:
    """`4x4` -> 16, `2x2x4` -> 16; the flag name is in the error because users type this string."""
    dims = topology.lower().split("x")
    if not all(dim.isdigit() and int(dim) > 0 for dim in dims):
        raise SliceFactsError(
            f"--topology {topology!r} is not a TPU topology: allowed are positive integers joined by 'x', "
            "such as 2x2, 4x4 or 2x2x4"
        )
    return math.prod(int(dim) for dim in dims)


def slice_range(slices: int, min_slices: int | None = None, max_slices: int | None = None) -> tuple[int, int]:
    """(fewest, most) slices a job runs on: it starts with `slices`; elastic bounds widen the range.

    The one definition: the stack's config checks and RayJob (loaded by path, see
    components/facts/maxtext.py) and the trainer's flags all use it.
    """
    return (slices if min_slices is None else min_slices, slices if max_slices is None else max_slices)


@dataclass(frozen=True)
class SliceFacts:
    """What one MaxText job runs on: `slices` slices of `hosts_per_slice` VMs with `chips_per_host` each, every chip
    `devices_per_chip` JAX devices (TPU7x's two TensorCores are two devices; the mesh counts devices).

    `min_slices`/`max_slices` make the job elastic: Ray Train runs between that many whole slices.
    On `CPU` every "host" is one Ray worker process and every "chip" one JAX CPU device.
    """

    accelerator_type: str
    topology: str
    slices: int
    hosts_per_slice: int
    chips_per_host: int
    min_slices: int | None = None
    max_slices: int | None = None
    devices_per_chip: int = 1

    def __post_init__(self) -> None:
        for flag, value in (
            ("--slices", self.slices),
            ("--hosts-per-slice", self.hosts_per_slice),
            ("--chips-per-host", self.chips_per_host),
            ("--devices-per-chip", self.devices_per_chip),
            ("--min-slices", self.lowest_slices),
            ("--max-slices", self.highest_slices),
        ):
            if value < 1:
                raise SliceFactsError(f"{flag} {value}: allowed is a positive integer")
        topology_chips = chips_in_topology(self.topology)
        if self.hosts_per_slice * self.chips_per_host != topology_chips:
            raise SliceFactsError(
                f"--hosts-per-slice {self.hosts_per_slice} x --chips-per-host {self.chips_per_host} = "
                f"{self.hosts_per_slice * self.chips_per_host} chips, but --topology {self.topology} has "
                f"{topology_chips}: allowed are host and chip counts whose product is {topology_chips}"
            )
        if not self.lowest_slices <= self.slices <= self.highest_slices:
            raise SliceFactsError(
                f"--slices {self.slices} lies outside --min-slices {self.lowest_slices} .. "
                f"--max-slices {self.highest_slices}: allowed is min <= slices <= max"
            )
        if self.is_cpu and self.highest_slices != 1:
            raise SliceFactsError(
                f"--slices/--max-slices {self.highest_slices} with --accelerator-type {CPU_ACCELERATOR}: "
                "CPU devices carry no slice index, so MaxText sees one slice; allowed is 1"
            )

    @property
    def is_cpu(self) -> bool:
        return self.accelerator_type.upper() == CPU_ACCELERATOR

    @property
    def lowest_slices(self) -> int:
        return slice_range(self.slices, self.min_slices, self.max_slices)[0]

    @property
    def highest_slices(self) -> int:
        return slice_range(self.slices, self.min_slices, self.max_slices)[1]

    @property
    def is_elastic(self) -> bool:
        return self.lowest_slices != self.highest_slices

    @property
    def chips_per_slice(self) -> int:
        return self.hosts_per_slice * self.chips_per_host

    @property
    def devices_per_slice(self) -> int:
        """JAX devices of one slice: what MaxText's ICI mesh divides."""
        return self.chips_per_slice * self.devices_per_chip

    @property
    def slice_counts(self) -> range:
        """Every slice count the job may run on (one, unless elastic)."""
        return range(self.lowest_slices, self.highest_slices + 1)

    @property
    def num_workers(self) -> int | tuple[int, int]:
        """Ray Train workers: one per host, and only whole slices when elastic."""
        if self.is_elastic:
            return (self.lowest_slices * self.hosts_per_slice, self.highest_slices * self.hosts_per_slice)
        return self.slices * self.hosts_per_slice
