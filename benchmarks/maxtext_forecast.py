"""The MaxText forecast (preflight/forecast/maxtext.py) against the published v6e runs, from their compiled steps.

Each anchor is a run AI-Hypercomputer/tpu-recipes publishes (training/trillium/Llama3.1-*-MaxText/<slice>/
README.md: the step log line and the MaxText configuration, `MaxText@tpu-recipes-v0.1.4`). This script
compiles each configuration for its slice here with the fit check (libtpu on this CPU, the recipe's libtpu
flags that this libtpu accepts), reads what each chip does per step, and forecasts it:
- the two v6e-256 runs calibrate v6e's MXU efficiency (the geometric mean of the efficiency each implies;
  preflight/forecast/calibration.py holds the figure in use);
- the v6e-8 and v6e-32 runs are the check, and since 2026-11-26 the v6e-16 and v6e-64 ones. MaxText 0.2.5 needs
  more HBM than the recipe's older MaxText: the v6e-8 run's batch of 3 does not compile in 32 GB here, so it is
  forecast at batch 2 (tokens/s per chip barely move with the batch once the matrices are this large: an
  approximation, said in the table).

Compiles take 5-11 minutes and 2-4 GB each; verdicts are cached in .cache/fit-check/ (make fit-check's cache),
so a second run only forecasts. --recompile ignores the cache. Each anchor's instant forecast (counted from the
architecture and mesh, no compile: preflight/forecast/maxtext_flops.py) is printed beside the compiled one.

--instant compiles nothing (and needs no MaxText): it prints the instant forecast and the instant HBM verdict of every
published recipe in benchmarks/maxtext_recipes.py beside the compiled forecast recorded there and the published step.

    .venv-maxtext/bin/python benchmarks/maxtext_forecast.py [--recompile] [--only '70B, v6e-32' ...]
    .venv/bin/python benchmarks/maxtext_forecast.py --instant
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from benchmarks.maxtext_recipes import LLAMA_8B_V6E_8_AT_BATCH_2, RECIPE_ARGS, RECIPES
from components.facts.maxtext import slice_flags
from components.facts.maxtext_memory import usable_hbm_bytes_per_chip
from components.facts.topology import TPU_GENERATIONS, TpuSlice, tpu_slice
from preflight.forecast.calibration import tpu_calibration
from preflight.forecast.maxtext import TpuForecast, forecast
from preflight.forecast.maxtext_flops import instant_work_for_fit_argv
from preflight.forecast.maxtext_hbm import NoEstimate, estimate_for_fit_argv, hbm_verdict
from tools.maxtext_fit.hlo_cost import StepWork

# The recipes' libtpu flags (benchmarks/xla_flags_library.py in AI-Hypercomputer/maxtext): dense VMEM limit,
# all-reduce-scatter layout, data-parallel overlap and host offload. Left out: continuation fusion for
# all-gather (this libtpu refuses it on v6e) and SparseCore all-reduce offload (its chip-config flag is internal).
RECIPE_LIBTPU_FLAGS = (
    "--xla_tpu_scoped_vmem_limit_kib=98304",
    "--xla_tpu_use_minor_sharding_for_major_trivial_input=true",
    "--xla_tpu_relayout_group_size_threshold_for_reduce_scatter=1",
    "--xla_tpu_assign_all_reduce_scatter_layout=true",
    "--xla_tpu_enable_data_parallel_all_reduce_opt=true",
    "--xla_tpu_data_parallel_opt_different_sized_ops=true",
    "--xla_tpu_enable_all_experimental_scheduler_features=true",
    "--xla_tpu_enable_scheduler_memory_pressure_tracking=true",
    "--xla_tpu_host_transfer_overlap_limit=24",
    "--xla_tpu_aggressive_opt_barrier_removal=ENABLED",
    "--xla_lhs_prioritize_async_depth_over_stall=ENABLED",
    "--xla_tpu_enable_ag_backward_pipelining=true",
    "--xla_should_allow_loop_variant_parameter_in_chain=ENABLED",
    "--xla_should_add_loop_invariant_op_in_chain=ENABLED",
    "--xla_max_concurrent_host_send_recv=100",
    "--xla_tpu_scheduler_percent_shared_memory_limit=100",
    "--xla_latency_hiding_scheduler_rerun=2",
)


@dataclass(frozen=True)
class Anchor:
    name: str
    topology: str  # one v6e slice, on the machine type topology.py picks for it
    args: tuple[str, ...]
    published_tokens: float  # tokens/s/device
    published_tflops: float  # TFLOP/s/device, by the recipe's MaxText count
    calibrates: bool
    note: str = ""

    @property
    def slice(self) -> TpuSlice:
        return tpu_slice("v6e", self.topology)

    def fit_argv(self) -> list[str]:
        return [*slice_flags(self.slice, 1), "--name", self.name, "--", *RECIPE_ARGS, *self.args]


ANCHORS = (
    Anchor(
        name="Llama 3.1 8B, v6e-256",
        topology="16x16",
        args=("model_name=llama3.1-8b", "per_device_batch_size=4", "out_proj=offload"),
        published_tokens=7207.3,
        published_tflops=417.4,
        calibrates=True,
    ),
    Anchor(
        name="Llama 3.1 70B, v6e-256",
        topology="16x16",
        args=("model_name=llama3.1-70b", "per_device_batch_size=5"),
        published_tokens=960.2,
        published_tflops=462.3,
        calibrates=True,
    ),
    Anchor(
        name="Llama 3.1 8B, v6e-8",
        topology="2x4",
        args=("model_name=llama3.1-8b", "per_device_batch_size=2", "out_proj=offload"),
        published_tokens=7138.9,
        published_tflops=413.4,
        calibrates=False,
        note="batch 2 (published: 3, which needs 34.3 GB per chip with MaxText 0.2.5)",
    ),
    Anchor(
        name="Llama 3.1 70B, v6e-32",
        topology="4x8",
        args=("model_name=llama3.1-70b", "per_device_batch_size=2", "weight_dtype=bfloat16"),
        published_tokens=921.0,
        published_tflops=443.4,
        calibrates=False,
    ),
    # Added 2026-11-26 (issue 28 item 2), checks only: training/trillium/Llama3.1-8B-MaxText/v6e-16 (the dev stack's
    # slice size; its recipe also disables collective matmul, a libtpu flag not passed here) and
    # training/trillium/Llama3.1-70B-MaxText/v6e-64 in tpu-recipes.
    Anchor(
        name="Llama 3.1 8B, v6e-16",
        topology="4x4",
        args=("model_name=llama3.1-8b", "per_device_batch_size=3", "out_proj=offload"),
        published_tokens=7243.4,
        published_tflops=419.5,
        calibrates=False,
    ),
    Anchor(
        name="Llama 3.1 70B, v6e-64",
        topology="8x8",
        args=("model_name=llama3.1-70b", "per_device_batch_size=2"),
        published_tokens=876.7,
        published_tflops=422.1,
        calibrates=False,
    ),
)


def step_work(anchor: Anchor, recompile: bool) -> StepWork | str:
    """The anchor's compiled step per chip, or why there is none."""
    from tools.maxtext_fit.fit_cache import CACHE_DIR, cache_key, cached_verdict, fit_and_cache

    argv = anchor.fit_argv()
    os.environ["LIBTPU_INIT_ARGS"] = " ".join(RECIPE_LIBTPU_FLAGS)
    key = cache_key(argv, REPO_ROOT)
    verdict = None if recompile else cached_verdict(REPO_ROOT / CACHE_DIR, key)
    if verdict is None:
        print(f"compiling {anchor.name} (minutes) ...", flush=True)
        status, verdict = fit_and_cache(argv, REPO_ROOT, REPO_ROOT / CACHE_DIR, quiet=True)
        if verdict is None:
            return f"the fit check failed (exit {status})"
    if verdict.get("cost") is None:
        return f"does not compile: {verdict.get('compiler_error')}"
    return StepWork.from_json(verdict["cost"])


def published_seconds(anchor: Anchor, work: StepWork) -> float:
    """The published step time for the batch compiled here: the published tokens/s per chip, at this batch."""
    return work.tokens / anchor.published_tokens


def chosen_anchors(only: list[str] | None) -> tuple[Anchor, ...]:
    if not only:
        return ANCHORS
    chosen = tuple(anchor for anchor in ANCHORS if any(name in anchor.name for name in only))
    if not chosen:
        sys.exit(f"--only {only}: no anchor matches; anchors: {', '.join(a.name for a in ANCHORS)}")
    return chosen


def instant(fit_argv: list[str], chips: int) -> TpuForecast:
    """The step counted from the architecture and mesh, at v6e's calibrated efficiency."""
    work, slices = instant_work_for_fit_argv(fit_argv, steps=15)
    return forecast(work, TPU_GENERATIONS["v6e"], chips * slices, tpu_calibration("v6e").efficiency)


def hbm_verdict_of(fit_argv: list[str]) -> str:
    usable = usable_hbm_bytes_per_chip("v6e")
    try:
        held = estimate_for_fit_argv(fit_argv, usable)
    except NoEstimate:
        return "no estimate (too close to call)"
    judged = "at least" if held.calibrated else "in full"
    return f"{hbm_verdict(held, usable)} ({held.judged / 2**30:.1f} GiB {judged})"


def instant_table() -> None:
    """Every published recipe's instant forecast beside its compiled forecast (where recorded) and published step."""
    calibrating = set(tpu_calibration("v6e").calibrated_on)
    print(
        "| recipe | role | instant s | compiled s | published s | instant / compiled | instant / published "
        "| instant MFU (published) | compiled HBM | instant HBM verdict |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |")
    for recipe in (*RECIPES, LLAMA_8B_V6E_8_AT_BATCH_2):
        step = instant(recipe.fit_argv(), recipe.slice.chips)
        batch = recipe.args[1].split("=")[1]
        role = "calibrates" if f"tpu-recipes {recipe.name}" in calibrating else "check"
        compiled = recipe.compiled_seconds
        vs_compiled = f"{step.estimate_s / compiled:.3f}" if compiled else "—"
        compiled_s = f"{compiled:.2f}" if compiled else "—"
        vs_published = step.estimate_s / recipe.published_seconds
        mark = "" if abs(vs_published - 1) <= 0.15 else " (MISS)"
        hbm = f"{recipe.compiled} ({recipe.compiled_gib:.1f} GiB)" if recipe.compiled else "not compiled"
        print(
            f"| {recipe.name}, batch {batch} | {role} | {step.estimate_s:.2f} | {compiled_s} "
            f"| {recipe.published_seconds:.2f} | {vs_compiled} | {vs_published:.3f}{mark} "
            f"| {step.mfu():.1%} ({recipe.published_tflops / 918:.1%}) | {hbm} | {hbm_verdict_of(recipe.fit_argv())} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recompile", action="store_true", help="compile every anchor again")
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="the anchors whose name contains NAME (repeatable, e.g. --only '70B, v6e-32'); default: all",
    )
    parser.add_argument("--instant", action="store_true", help="compile nothing: the instant forecast of every recipe")
    args = parser.parse_args()
    if args.instant:
        instant_table()
        return
    v6e = TPU_GENERATIONS["v6e"]
    rows, implied = [], {}
    for anchor in chosen_anchors(args.only):
        work = step_work(anchor, args.recompile)
        if isinstance(work, str):
            print(f"{anchor.name}: {work}")
            continue
        result = forecast(work, v6e, anchor.slice.chips, tpu_calibration("v6e").efficiency)
        implied[anchor.name] = result.compute_s / published_seconds(anchor, work)
        rows.append((anchor, work, result))
    calibration = [implied[a.name] for a, _, _ in rows if a.calibrates]
    if calibration:
        fitted = math.exp(sum(map(math.log, calibration)) / len(calibration))
        print(
            f"calibration: compiled matrix FLOP/s over peak in the v6e-256 runs: "
            f"{', '.join(f'{e:.3f}' for e in calibration)}; geometric mean {fitted:.3f} "
            f"(in use: {tpu_calibration('v6e').efficiency}, {tpu_calibration('v6e').label})"
        )
    print(
        "| anchor | role | compiled TFLOP/chip/step | bound | lower bound s | estimate s | instant s | published s "
        "| forecast tokens/s/chip | published | ratio | MFU (MaxText 0.2.5 count) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for anchor, work, result in rows:
        role = "calibrates" if anchor.calibrates else "check"
        ratio = result.tokens_per_s_per_chip() / anchor.published_tokens
        verdict = "within ±20 %" if abs(ratio - 1) <= 0.2 else "MISS"
        published_s = published_seconds(anchor, work)
        bound_ok = "" if result.lower_bound_s <= published_s else " (ABOVE published)"
        note = f" — {anchor.note}" if anchor.note else ""
        print(
            f"| {anchor.name}{note} | {role} | {work.matmul_flops / 1e12:,.0f} | {result.bound} "
            f"| {result.lower_bound_s:.2f}{bound_ok} | {result.estimate_s:.2f} "
            f"| {instant(anchor.fit_argv(), anchor.slice.chips).estimate_s:.2f} | {published_s:.2f} "
            f"| {result.tokens_per_s_per_chip():,.0f} | {anchor.published_tokens:,.0f} | {ratio:.3f} ({verdict}) "
            f"| {result.mfu():.1%} (published {anchor.published_tflops / 918:.1%}) |"
        )


if __name__ == "__main__":
    main()
