"""Fit-check every MaxText job a stack would start, from preflight's plan JSON.

    python -m preflight --stack dev --json .cache/plan-dev.json
    python -m tools.maxtext_fit.fit_plan .cache/plan-dev.json

Each RayJob in the plan's manifests that runs `workloads.maxtext.train` is compiled by `tools.maxtext_fit.fit`
with the same slice facts and MaxText arguments, one at a time, in its own process (compiles hold GBs).
Each verdict is kept in .cache/fit-check/ (tools/maxtext_fit/fit_cache.py), where preflight finds it for the
job's forecast. Exit 0 when every job fits, 1 when one does not (or its compile fails), 2 when the plan has
none or cannot be read.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tools.maxtext_fit.fit_cache import CACHE_DIR, fit_and_cache
from workloads.maxtext.cli import add_slice_flags, split_maxtext_args

TRAINER_MODULE = "workloads.maxtext.train"


def maxtext_jobs(plan: Mapping[str, Any]) -> Iterator[tuple[str, list[str]]]:
    """(job name, `fit` argv) for each RayJob that runs the MaxText trainer."""
    for manifest in plan.get("manifests", []):
        if manifest.get("kind") != "RayJob":
            continue
        command = shlex.split(manifest.get("spec", {}).get("entrypoint", ""))
        if TRAINER_MODULE not in command:
            continue
        name = manifest.get("metadata", {}).get("name", "maxtext")
        yield name, fit_argv(command, name)


def fit_argv(command: list[str], name: str) -> list[str]:
    """The fit check's arguments for a trainer command line (`python -m workloads.maxtext.train ...`)."""
    flags, maxtext_args = split_maxtext_args(command[command.index(TRAINER_MODULE) + 1 :])
    return [*_slice_flags(flags), "--name", name, "--", *maxtext_args]


def _slice_flags(flags: list[str]) -> list[str]:
    """The trainer's flags that describe the slices; the others (storage, retries) do not change memory."""
    parser = argparse.ArgumentParser(add_help=False)
    add_slice_flags(parser)
    known, _ = parser.parse_known_args(flags)
    kept = []
    for name, value in vars(known).items():
        if value is not None:
            kept += [f"--{name.replace('_', '-')}", str(value)]
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.maxtext_fit.fit_plan", description=__doc__.splitlines()[0])
    parser.add_argument("plan", type=Path, help="plan JSON written by `python -m preflight --json`")
    parser.add_argument("--cache", type=Path, default=CACHE_DIR, help=f"where verdicts are kept (default {CACHE_DIR})")
    args = parser.parse_args(argv)
    try:
        jobs = list(maxtext_jobs(json.loads(args.plan.read_text())))
    except (OSError, json.JSONDecodeError) as error:
        print(f"fit-check: cannot read the plan {args.plan}: {error}", file=sys.stderr)
        return 2
    if not jobs:
        print(f"fit-check: {args.plan} has no enabled MaxText job (trainyard:jobs.maxtext)", file=sys.stderr)
        return 2
    failed = []
    for name, fit_argv in jobs:
        print(f"fit-check: compiling {name} ...", flush=True)
        status, _ = fit_and_cache(fit_argv, Path.cwd(), args.cache)
        if status != 0:
            failed.append(name)
    print(
        f"fit-check: {len(jobs) - len(failed)} of {len(jobs)} jobs fit"
        + (f"; not: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
