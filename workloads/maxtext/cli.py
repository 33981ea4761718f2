"""Command-line pieces shared by the trainer (`train`), the fit check (`fit`) and local mode (`local`).

Our flags come first, MaxText's `key=value` arguments after a `--`, exactly as MaxText takes them.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from workloads.maxtext.slices import SliceFacts


def split_maxtext_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(our flags, MaxText's arguments): everything after the first `--` belongs to MaxText."""
    args = list(argv)
    if "--" not in args:
        return args, []
    separator = args.index("--")
    return args[:separator], args[separator + 1 :]


def add_slice_flags(parser: argparse.ArgumentParser) -> None:
    facts = parser.add_argument_group("slice facts (from the stack; every number is an argument)")
    facts.add_argument(
        "--accelerator-type",
        required=True,
        help="Ray accelerator type, e.g. TPU-V6E; CPU runs Ray workers as JAX CPU processes",
    )
    facts.add_argument("--topology", required=True, help="chips of one slice, e.g. 4x4 (CPU: 1x2 for 2 devices)")
    facts.add_argument("--slices", type=int, required=True, help="slices the job starts with")
    facts.add_argument("--hosts-per-slice", type=int, required=True, help="VMs (Ray workers) per slice")
    facts.add_argument("--chips-per-host", type=int, required=True, help="chips per VM (Ray's TPU resource per worker)")
    facts.add_argument("--devices-per-chip", type=int, help="JAX devices per chip (default 1; TPU7x: 2)")
    facts.add_argument("--min-slices", type=int, help="elastic: fewest slices to run on (default --slices)")
    facts.add_argument("--max-slices", type=int, help="elastic: most slices to run on (default --slices)")


def slice_facts_from(namespace: argparse.Namespace) -> SliceFacts:
    return SliceFacts(
        accelerator_type=namespace.accelerator_type,
        topology=namespace.topology,
        slices=namespace.slices,
        hosts_per_slice=namespace.hosts_per_slice,
        chips_per_host=namespace.chips_per_host,
        devices_per_chip=namespace.devices_per_chip or 1,
        min_slices=namespace.min_slices,
        max_slices=namespace.max_slices,
    )
