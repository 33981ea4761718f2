"""Where `make fit-check` keeps each job's verdict, so that preflight can show its forecast without compiling.

A verdict is keyed by what decides the compiled step: the slice facts, MaxText's arguments less those that
only name or schedule the run, libtpu's flags (LIBTPU_INIT_ARGS), the MaxText pin (requirements and
constraints) and the fit check's own code.
A change to any of them is a new key; an old verdict is never read for a changed job.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workloads.maxtext.cli import split_maxtext_args

CACHE_DIR = Path(".cache/fit-check")
# What the verdict depends on besides the job's arguments, relative to the repository root.
KEYED_FILES = (
    "workloads/maxtext/requirements.txt",
    "workloads/maxtext/constraints.txt",
    "tools/maxtext_fit/compile_memory.py",
    "tools/maxtext_fit/fit.py",
    "tools/maxtext_fit/hlo_cost.py",
    "tools/maxtext_fit/hlo_flops.py",
    "tools/maxtext_fit/hlo_module.py",
)
# MaxText arguments that name, place or schedule the run without changing its step.
_UNKEYED_ARGUMENTS = ("run_name", "base_output_directory", "checkpoint_period", "steps")
_UNKEYED_FLAGS = ("--name",)


def cache_key(fit_argv: Sequence[str], root: Path) -> str:
    flags, maxtext_args = split_maxtext_args(fit_argv)
    kept_flags = [flag for index, flag in enumerate(flags) if not _names_the_run(flags, index)]
    kept_args = sorted(arg for arg in maxtext_args if arg.split("=", 1)[0] not in _UNKEYED_ARGUMENTS)
    libtpu_flags = os.environ.get("LIBTPU_INIT_ARGS", "").split()
    digest = hashlib.sha256(json.dumps([kept_flags, kept_args, libtpu_flags]).encode())
    for name in KEYED_FILES:
        digest.update((root / name).read_bytes())
    return digest.hexdigest()[:20]


def _names_the_run(flags: Sequence[str], index: int) -> bool:
    return flags[index] in _UNKEYED_FLAGS or (index > 0 and flags[index - 1] in _UNKEYED_FLAGS)


def save_verdict(cache_dir: Path, key: str, verdict: Mapping[str, Any]) -> Path:
    path = cache_dir / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(verdict, indent=1) + "\n")
    return path


def cached_verdict(cache_dir: Path, key: str) -> dict[str, Any] | None:
    path = cache_dir / f"{key}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def fit_and_cache(fit_argv: Sequence[str], root: Path, cache_dir: Path, quiet: bool = False) -> tuple[int, dict | None]:
    """Runs the fit check (`python -m tools.maxtext_fit.fit ... --json`) in its own process (compiles hold GBs),
    prints its report, keeps its verdict in `cache_dir`; (exit status, verdict or None when it wrote none)."""
    flags, maxtext_args = split_maxtext_args(fit_argv)
    command = [sys.executable, "-m", "tools.maxtext_fit.fit", *flags, "--json", "--", *maxtext_args]
    stderr = subprocess.DEVNULL if quiet else None
    result = subprocess.run(command, check=False, cwd=root, stdout=subprocess.PIPE, stderr=stderr, text=True)
    verdict = None
    for line in result.stdout.splitlines():
        if line.startswith("{"):
            verdict = json.loads(line)
            save_verdict(cache_dir, cache_key(fit_argv, root), verdict)
        else:
            print(line, flush=True)
    return result.returncode, verdict
