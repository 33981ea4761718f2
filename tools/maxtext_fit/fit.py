"""Fit check before launch: compile a MaxText job for its TPU slices here, and compare HBM per chip.

    python -m tools.maxtext_fit.fit --accelerator-type TPU-V6E --topology 4x4 --slices 2 \\
        --hosts-per-slice 4 --chips-per-host 4 [--hbm-bytes-per-chip 32e9] [--name llama3-8b] [--json] \\
        -- model_name=llama3-8b per_device_batch_size=4 max_target_length=4096 \\
           ici_fsdp_parallelism=4 ici_tensor_parallelism=4

Exit 0 when the job fits, 1 when it does not (or libtpu's compiler runs out of HBM), 2 when its
arguments are refused before compiling. An elastic job is compiled at its fewest slices, where each
chip holds the most (DCN-sharded state is split over fewer slices). Compiling a large model takes minutes
and several GB of RAM: run one at a time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from tools.maxtext_fit.compile_memory import (
    CompilerOutOfMemory,
    FitCheckError,
    compile_executable,
    compile_topology_name,
    hbm_need,
)
from tools.maxtext_fit.hlo_cost import StepWork, step_cost
from workloads.maxtext.cli import add_slice_flags, slice_facts_from, split_maxtext_args
from workloads.maxtext.parallelism import MeshShape, ParallelismError, check_parallelism, parse_overrides
from workloads.maxtext.slices import SliceFacts, SliceFactsError

# HBM per chip a compiled program may use: for v6e, what libtpu grants ("exceeds available HBM (31.24G)", the same
# figure as components/facts/topology.py's usable_hbm_bytes_per_chip; tests/components/facts/test_topology.py);
# for the others, the published figure in decimal GB.
HBM_BYTES_PER_CHIP: dict[str, float] = {
    "TPU-V4": 32e9,
    "TPU-V5LITEPOD": 16e9,
    "TPU-V5P": 95e9,
    "TPU-V6E": 31.24 * 2**30,
    # A TPU7x chip is two JAX devices of 96 GiB each, and a program runs per device: v6e's usable share of that, an
    # assumption until libtpu states it (docs/cloud-facts.md: TPU7x figures that are assumptions).
    "TPU-V7X": 96 * 2**30 * 31.24 / 32,
}
EXIT_FITS, EXIT_DOES_NOT_FIT, EXIT_REFUSED = 0, 1, 2
GB, GIB = 1e9, 2**30
# Arguments the fit check sets itself from the slice facts.
_OWN_ARGUMENTS = ("compile_topology", "compile_topology_num_slices")


@dataclass(frozen=True)
class FitVerdict:
    name: str
    target: str
    slices: int
    needed_bytes: int | None
    available_bytes: float
    compile_seconds: float
    compiler_error: str | None = None
    cost: StepWork | None = None  # what each chip does per step, for the forecast; None when it did not compile

    @property
    def fits(self) -> bool:
        return self.needed_bytes is not None and self.needed_bytes <= self.available_bytes


def parse_flags(flags: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tools.maxtext_fit.fit", description="Does a MaxText job fit its TPU slices' HBM?"
    )
    add_slice_flags(parser)
    parser.add_argument("--hbm-bytes-per-chip", type=float, help="HBM per chip (default: the published figure)")
    parser.add_argument("--name", default="maxtext", help="job name for the report")
    parser.add_argument("--json", action="store_true", help="also print the verdict as one JSON line")
    return parser.parse_args(flags)


def available_hbm(accelerator_type: str, override: float | None) -> float:
    if override is not None:
        if override <= 0:
            raise FitCheckError(f"--hbm-bytes-per-chip {override}: allowed is a positive number of bytes")
        return override
    if accelerator_type.upper() not in HBM_BYTES_PER_CHIP:
        raise FitCheckError(
            f"--accelerator-type {accelerator_type}: no published HBM figure; allowed are "
            f"{', '.join(HBM_BYTES_PER_CHIP)}, or pass --hbm-bytes-per-chip"
        )
    return HBM_BYTES_PER_CHIP[accelerator_type.upper()]


def compile_argv(facts: SliceFacts, maxtext_args: Sequence[str]) -> tuple[list[str], MeshShape]:
    """MaxText's arguments for compiling at the fewest slices, after the same checks the trainer makes."""
    overrides = parse_overrides(maxtext_args)
    for key in _OWN_ARGUMENTS:
        if key in overrides:
            raise FitCheckError(f"{key}={overrides[key]}: set by the fit check from the slice facts; leave it out")
    mesh = check_parallelism(overrides, facts.devices_per_slice, facts.lowest_slices)  # the mesh counts JAX devices
    target = compile_topology_name(facts.accelerator_type, facts.topology)
    own = [f"compile_topology={target}", f"compile_topology_num_slices={facts.lowest_slices}"]
    if "base_output_directory" not in overrides:
        own.append("base_output_directory=/tmp/trainyard-fit-check")
    return [*maxtext_args, *own], mesh


def check_fit(name: str, facts: SliceFacts, maxtext_args: Sequence[str], available_bytes: float) -> FitVerdict:
    argv, _ = compile_argv(facts, maxtext_args)
    target = compile_topology_name(facts.accelerator_type, facts.topology)
    started = time.monotonic()
    try:
        compiled, config = compile_executable(argv)
    except CompilerOutOfMemory as error:
        return FitVerdict(name, target, facts.lowest_slices, None, available_bytes,
                          round(time.monotonic() - started, 1), str(error).strip().splitlines()[0])  # fmt: skip
    return FitVerdict(
        name=name,
        target=target,
        slices=facts.lowest_slices,
        needed_bytes=hbm_need(compiled.memory_analysis()).total_bytes,
        available_bytes=available_bytes,
        compile_seconds=round(time.monotonic() - started, 1),
        cost=step_work(compiled.as_text(), config, facts.lowest_slices),
    )


def step_work(hlo_text: str, config, slices: int) -> StepWork:
    """The compiled step's work per chip. Flash attention runs in Pallas kernels whose FLOPs the HLO does not
    show: where the step has them, MaxText's own attention FLOPs stand in for them."""
    from maxtext.utils import maxtext_utils

    cost = step_cost(hlo_text, slices)
    model_tflops, _, attention_tflops = maxtext_utils.calculate_tflops_training_per_device(config, log=False)
    kernel_flops = attention_tflops * 1e12 if cost.attention_kernels else 0.0
    return StepWork(
        matmul_flops=cost.matmul_flops + kernel_flops,
        hbm_bytes=cost.hbm_bytes,
        ici_bytes=cost.link_bytes("ici"),
        dcn_bytes=cost.link_bytes("dcn"),
        model_flops=model_tflops * 1e12,
        tokens=round(config.per_device_batch_size * config.max_target_length),
        steps=config.steps,
        unknown_trip_counts=cost.unknown_trip_counts,
    )


def describe(verdict: FitVerdict) -> str:
    where = f"{verdict.slices} x {verdict.target}"
    available = f"{verdict.available_bytes / GB:.1f} GB ({verdict.available_bytes / GIB:.1f} GiB)"
    if verdict.needed_bytes is None:
        return (
            f"fit-check {verdict.name} on {where}: DOES NOT FIT: libtpu's compiler ran out of HBM "
            f"(available {available} per chip): {verdict.compiler_error} [{verdict.compile_seconds:.0f} s]"
        )
    needed = f"{verdict.needed_bytes / GB:.1f} GB ({verdict.needed_bytes / GIB:.1f} GiB)"
    outcome = "fits" if verdict.fits else "DOES NOT FIT"
    return (
        f"fit-check {verdict.name} on {where}: HBM per chip needed {needed}, available {available}: "
        f"{outcome} [compiled in {verdict.compile_seconds:.0f} s]"
    )


def main(argv: Sequence[str] | None = None) -> int:
    flags, maxtext_args = split_maxtext_args(sys.argv[1:] if argv is None else argv)
    namespace = parse_flags(flags)
    try:
        facts = slice_facts_from(namespace)
        available = available_hbm(facts.accelerator_type, namespace.hbm_bytes_per_chip)
        compile_argv(facts, maxtext_args)
    except (SliceFactsError, ParallelismError, FitCheckError) as refusal:
        print(f"refused: {refusal}", file=sys.stderr)
        return EXIT_REFUSED
    verdict = check_fit(namespace.name, facts, maxtext_args, available)
    print(describe(verdict), flush=True)
    if namespace.json:
        print(json.dumps({**asdict(verdict), "fits": verdict.fits}), flush=True)
    return EXIT_FITS if verdict.fits else EXIT_DOES_NOT_FIT


if __name__ == "__main__":
    sys.exit(main())
