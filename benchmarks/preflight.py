"""Preflight's speed: cold CLI run, the program alone after imports, a 64-slice stack vs dev, each check's share.

Run: .venv/bin/python benchmarks/preflight.py
Targets: cold <= 8 s, program <= 3 s, 64-slice / dev <= 2, placement and provider-input checks <= 5% of the cold run,
the Kueue admission check (first call, as in a CLI run; and on the 64-slice stack) <= 10% of the cold run.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
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

COLD_REPEATS = 3
REPEATS = 7  # in-process timings are short: take the best of more runs


def cold_cli_seconds() -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "preflight", "--stack", "dev"], cwd=PROJECT_DIR, check=True, capture_output=True
    )
    return time.perf_counter() - start


def best_of(action) -> float:
    timings = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        action()
        timings.append(time.perf_counter() - start)
    return min(timings)


def big_stack_config(slices: int) -> dict[str, str]:
    values = yaml.safe_load((PROJECT_DIR / "Pulumi.dev.yaml").read_text())["config"]
    values["trainyard:tpuSlices"][0]["count"] = slices
    values["trainyard:network"]["podRange"] = "10.64.0.0/14"
    values["trainyard:network"]["serviceRange"] = "10.68.0.0/19"
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in values.items()}


def main() -> None:
    cold = [cold_cli_seconds() for _ in range(COLD_REPEATS)]
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

    cold_median = statistics.median(cold)
    print(
        f"cold `python -m preflight --stack dev`: median {cold_median:.2f} s "
        f"(runs: {', '.join(f'{c:.2f}' for c in cold)}; target <= 8 s)"
    )
    print(
        f"program alone after imports, dev ({len(dev_plan.resources)} resources): {dev_seconds:.3f} s (target <= 3 s)"
    )
    print(f"program alone, 64-slice stack ({big_count} resources): {big_seconds:.3f} s")
    print(f"64-slice / dev: {big_seconds / dev_seconds:.2f} (target <= 2)")
    print(
        f"schema check of {len(dev_plan.manifests)} objects (warm): {schema_seconds * 1000:.1f} ms "
        f"= {100 * schema_seconds / statistics.median(cold):.1f}% of the cold run"
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


if __name__ == "__main__":
    main()
