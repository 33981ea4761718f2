"""Preflight's speed: cold CLI run against its import floor (and what the difference is made of), the program alone
after imports, a 64-slice stack vs dev, the cost of each added slice, each check's share.

Run: .venv/bin/python benchmarks/preflight.py
Targets: cold <= 8 s and <= 1.2 x the floor (a fresh interpreter importing exactly the SDK modules a cold run
executes, the list read from the run's own sys.modules), the cost per added slice flat (the same from 8 to 64 slices
as from 64 to 128), program <= 3 s, 64-slice / dev <= 2, placement and provider-input checks <= 5% of the cold run,
the Kueue admission check (first call, as in a CLI run; and on the 64-slice stack) <= 10% of the cold run.
"""

from __future__ import annotations

import gc
import itertools
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_DIR))

import yaml

from components.config.load import load_stack_config
from preflight.checks import policy_runner
from preflight.checks.admission import check_admission
from preflight.checks.kube_schemas import check_manifests
from preflight.checks.placement import check_placement
from preflight.checks.provider_inputs import check_provider_inputs, fields_of
from preflight.engine.plan import plan_config, plan_stack
from preflight.engine.stack_files import read_stack_files
from preflight.verdict import check

COLD_REPEATS = 3
REPEATS = 7  # in-process timings are short: take the best of more runs
FLOOR_TARGET = 1.2
SLICES = (8, 68, 128)  # the cost per added slice: from each stack to the next, over the slices added
SLICE_REPEATS = 9  # differences of a few ms per slice: CPU seconds (steadier on shared cores), best of more runs


# Runs a cold `python -m preflight --stack dev` in this process and, as it exits, writes the modules it executed, in
# the order they were imported. A provider SDK registers each of its submodules as a lazy module and executes it on
# first use: a registered, never-used one is still of the lazy type, so only executed ones are plain modules.
LIST_EXECUTED = """
import atexit, contextlib, io, json, os, runpy, sys, types
def executed():
    names = [n for n, m in list(sys.modules.items()) if type(m) is types.ModuleType and n != "__main__"]
    os.write(1, json.dumps(names).encode())
atexit.register(executed)
sys.argv = ["preflight", "--stack", "dev"]
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    runpy.run_module("preflight", run_name="__main__", alter_sys=True)
"""
# A floor: import each module and touch it, which executes a lazily registered one; then say how many of them ended
# up executed, so the floor is checked to execute the cold run's modules, all of them. "lean": with the cyclic
# collector off from the start, and ending without the interpreter's teardown, as a cold plan does (cli/main.py).
IMPORT_ONLY = """
import gc, importlib, json, os, sys, types
lean = sys.argv[2] == "lean"
if lean:
    gc.disable()
names = json.loads(sys.argv[1])
for name in names:
    getattr(importlib.import_module(name), "_", None)
print(sum(1 for name in names if type(sys.modules.get(name)) is types.ModuleType), flush=True)
if lean:
    os._exit(0)
"""
# `python -m preflight --stack dev` with the cyclic collector off from the start.
COLD_COLLECTOR_OFF = """
import gc, runpy, sys
gc.disable()
sys.argv = ["preflight", "--stack", "dev"]
runpy.run_module("preflight", run_name="__main__", alter_sys=True)
"""


def is_sdk(module: str) -> bool:
    """The Pulumi SDK and its providers' SDKs (what they import comes with them)."""
    return module.split(".")[0] == "pulumi" or module.startswith("pulumi_")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_child(arguments: list[str]) -> tuple[float, float, str]:
    """(wall, CPU seconds, stdout) of a fresh interpreter: on shared cores the CPU seconds are the steadier figure."""
    start, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run([sys.executable, *arguments], cwd=PROJECT_DIR, check=True, capture_output=True, text=True)
    return time.perf_counter() - start, _children_cpu() - cpu, done.stdout


def cold_cli(collector: str = "as is") -> tuple[float, float]:
    arguments = ["-c", COLD_COLLECTOR_OFF] if collector == "off" else ["-m", "preflight", "--stack", "dev"]
    wall, cpu, _ = timed_child(arguments)
    return wall, cpu


def executed_modules() -> list[str]:
    return json.loads(timed_child(["-c", LIST_EXECUTED])[2])


def import_floor(modules: list[str], how: str = "plain") -> tuple[float, float]:
    wall, cpu, executed = timed_child(["-c", IMPORT_ONLY, json.dumps(modules), how])
    if int(executed) != len(modules):
        raise SystemExit(f"the floor executed {executed} of the cold run's {len(modules)} modules")
    return wall, cpu


def best_of(action) -> float:
    timings = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        action()
        timings.append(time.perf_counter() - start)
    return min(timings)


def cpu_best_of(action: Callable[[], object]) -> float:
    """CPU seconds, best of SLICE_REPEATS, each run as `python -m preflight` runs it: with the cyclic collector off
    (cli/main.py), and started once what the runs before it left is collected."""
    timings = []
    for _ in range(SLICE_REPEATS):
        gc.collect()
        gc.disable()
        start = time.process_time()
        try:
            action()
        finally:
            timings.append(time.process_time() - start)
            gc.enable()
    return min(timings)


def big_stack_config(slices: int) -> dict[str, str]:
    values = yaml.safe_load((PROJECT_DIR / "Pulumi.dev.yaml").read_text())["config"]
    values["trainyard:tpuSlices"][0]["count"] = slices
    values["trainyard:network"]["podRange"] = "10.64.0.0/14"
    values["trainyard:network"]["serviceRange"] = "10.68.0.0/19"
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in values.items()}


def slice_timings(project: str, main: Path, slices: int) -> dict[str, float]:
    """On a stack of `slices` slices (cpu_best_of): the program, the policy pack, and the whole run after imports (the
    program and every check, as `python -m preflight` runs them)."""
    config = big_stack_config(slices)
    plan_json = plan_config(project, "big", main, config).to_json()
    policy_runner.evaluate(plan_json)  # warm-up
    return {
        "program": cpu_best_of(lambda: plan_config(project, "big", main, config)),
        "pack": cpu_best_of(lambda: policy_runner.evaluate(plan_json)),
        "run": cpu_best_of(lambda: check(plan_config(project, "big", main, config), {})),
    }


def per_added_slice(project: str, main: Path) -> list[tuple[int, int, dict[str, float]]]:
    """Seconds each added slice costs, from each of the SLICES stacks to the next."""
    timings = [slice_timings(project, main, slices) for slices in SLICES]
    return [
        (few, many, {part: (after[part] - before[part]) / (many - few) for part in before})
        for (few, before), (many, after) in itertools.pairwise(zip(SLICES, timings, strict=True))
    ]


def cold_against_floor() -> float:
    """The cold CLI against its floor, and what the difference is made of; each run alternated with the others so
    all see the same load on the cores. The cold run's median wall seconds."""
    everything = executed_modules()
    sdk = [name for name in everything if is_sdk(name)]
    commands = {
        "cold": lambda: cold_cli(),
        "floor": lambda: import_floor(sdk),
        "cold, collector off from the start": lambda: cold_cli("off"),
        "floor, lean (collector off, no teardown)": lambda: import_floor(sdk, "lean"),
        "every module the run executes, lean": lambda: import_floor(everything, "lean"),
    }
    cold_off, floor_lean, imports_lean = list(commands)[2:]
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(COLD_REPEATS):
        for name, command in commands.items():
            runs[name].append(command())
    wall = {name: statistics.median(w for w, _ in timings) for name, timings in runs.items()}
    cpu = {name: statistics.median(c for _, c in timings) for name, timings in runs.items()}
    packages = sorted({name.split(".")[0] for name in sdk})
    print(f"floor: a fresh interpreter importing the {len(sdk)} SDK modules a cold run executes")
    print(f"  (of {', '.join(packages)}, with what they import); every module the run executes: {len(everything)}")
    for name, timings in runs.items():
        detail = ", ".join(f"{w:.2f}/{c:.2f}" for w, c in timings)
        print(f"{name}: median {wall[name]:.2f} s wall, {cpu[name]:.2f} s CPU (runs, wall/CPU: {detail})")
    ratios = (wall["cold"] / wall["floor"], cpu["cold"] / cpu["floor"])
    met = "met" if max(ratios) <= FLOOR_TARGET else "NOT met"
    print(f"cold / floor: {ratios[0]:.2f} wall, {ratios[1]:.2f} CPU (target <= {FLOOR_TARGET}: {met}; cold <= 8 s)")
    print(
        f"cold, collector off from the start / floor, lean: {cpu[cold_off] / cpu[floor_lean]:.2f} CPU (like for like)"
    )
    parts = {
        "the collector while the cold run imports, before the plan turns it off": cpu["cold"] - cpu[cold_off],
        "the collector and the teardown in the floor": cpu[floor_lean] - cpu["floor"],
        "importing other packages and the project": cpu[imports_lean] - cpu[floor_lean],
        "the run's own work: program under mocks, checks, report (and any teardown)": cpu[cold_off] - cpu[imports_lean],
    }
    print(f"cold - floor: {cpu['cold'] - cpu['floor']:+.2f} s CPU, made of")
    for part, seconds in parts.items():
        print(f"  {seconds:+.2f} s {part}")
    return wall["cold"]


def main() -> None:
    cold_median = cold_against_floor()
    files = read_stack_files(PROJECT_DIR, "dev")
    plan_stack("dev", PROJECT_DIR)  # warm-up: imports pulumi_gcp and the components
    dev_seconds = best_of(lambda: plan_stack("dev", PROJECT_DIR))
    big = big_stack_config(64)
    big_seconds = best_of(lambda: plan_config(files.project, "big", files.main, big))
    dev_plan = plan_stack("dev", PROJECT_DIR)
    version = load_stack_config(dev_plan.config, dev_plan.stack).cluster.version
    check_manifests(dev_plan.manifests, version)  # warm-up: schema loading is part of the cold run above
    schema_seconds = best_of(lambda: check_manifests(dev_plan.manifests, version))
    dev_json = dev_plan.to_json()
    # The provider-input check reads the SDK's Args metadata once per class: time that first call, as a CLI run has.
    fields_of.cache_clear()
    start = time.perf_counter()
    check_provider_inputs(dev_json["resources"])
    provider_seconds = time.perf_counter() - start
    placement_seconds = best_of(lambda: check_placement(dev_json["resources"]))
    start = time.perf_counter()
    check_admission(dev_json["resources"])  # first call: what a CLI run pays
    admission_first = time.perf_counter() - start
    admission_seconds = best_of(lambda: check_admission(dev_json["resources"]))
    big_json = plan_config(files.project, "big", files.main, big).to_json()
    admission_big = best_of(lambda: check_admission(big_json["resources"]))
    policy_runner.evaluate(dev_json)  # warm-up: imports the pack
    policy_seconds = best_of(lambda: policy_runner.evaluate(dev_json))
    big_count = len(plan_config(files.project, "big", files.main, big).resources)
    slice_seconds = per_added_slice(files.project, files.main)

    print(
        f"program alone after imports, dev ({len(dev_plan.resources)} resources): {dev_seconds:.3f} s (target <= 3 s)"
    )
    print(f"program alone, 64-slice stack ({big_count} resources): {big_seconds:.3f} s")
    print(f"64-slice / dev: {big_seconds / dev_seconds:.2f} (target <= 2)")
    print(
        f"schema check of {len(dev_plan.manifests)} objects (warm): {schema_seconds * 1000:.1f} ms "
        f"= {100 * schema_seconds / cold_median:.1f}% of the cold run"
    )
    print(
        f"provider-input check of the GCP resources (first call, metadata read): {provider_seconds * 1000:.1f} ms "
        f"= {100 * provider_seconds / cold_median:.2f}% of the cold run (target <= 5%)"
    )
    print(
        f"placement check (warm): {placement_seconds * 1000:.1f} ms "
        f"= {100 * placement_seconds / cold_median:.2f}% of the cold run (target <= 5%)"
    )
    print(f"policy evaluation of {len(dev_plan.resources)} resources (warm): {policy_seconds:.3f} s (target <= 1 s)")
    print(
        f"Kueue admission check: first call {admission_first * 1000:.1f} ms "
        f"= {100 * admission_first / cold_median:.2f}% of the cold run (target <= 10%); "
        f"warm {admission_seconds * 1000:.1f} ms; "
        f"64-slice stack (warm) {admission_big * 1000:.1f} ms = {100 * admission_big / cold_median:.2f}%"
    )
    for few, many, cost in slice_seconds:
        print(
            f"each added slice, {few} -> {many} slices (CPU, best of {SLICE_REPEATS}): the whole run after imports "
            f"{cost['run'] * 1000:.2f} ms, of which the program {cost['program'] * 1000:.2f} ms and the policy pack "
            f"{cost['pack'] * 1000:.2f} ms ({100 * cost['pack'] / cost['run']:.0f}%)"
        )


if __name__ == "__main__":
    main()
