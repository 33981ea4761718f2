"""The instant MaxText HBM estimate (preflight/forecast/maxtext_hbm.py) beside the compiler's figure, job by job.

Jobs: the dev stack's two MaxText jobs (as `make fit-check STACK=dev` compiles them, the 70B included although
it is off) and the four tpu-recipes runs benchmarks/maxtext_forecast.py compiles, read from the fit-check cache
(.cache/fit-check/, keyed as preflight keys them). A job the compiler refused (libtpu: "the total memory required
for HLO temporaries (N G) exceeds available HBM") is compared on its temporaries: the estimate less the
arguments (weights and AdamW state). The 70B dev job cut to 8 layers was compiled with the same arguments plus
`override_model_config=true base_num_decoder_layers=8` (via tools.maxtext_fit.compile_memory, 2026-11-26): its
figure is recorded below. Nothing is compiled here; missing jobs are listed with the command that compiles them.

    .venv/bin/python benchmarks/maxtext_hbm.py
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))

from maxtext_forecast import ANCHORS, RECIPE_LIBTPU_FLAGS

from components.config.load import load_stack_config
from components.facts.maxtext_memory import usable_hbm_bytes_per_chip
from preflight.engine.stack_files import read_stack_files
from preflight.forecast.maxtext_hbm import HbmEstimate, estimate_for_fit_argv
from preflight.forecast.maxtext_jobs import fit_check_argv
from tools.maxtext_fit.fit_cache import CACHE_DIR, cache_key, cached_verdict

GIB = 2**30
USABLE = usable_hbm_bytes_per_chip("v6e")
TEMPORARIES = re.compile(r"HLO temporaries \(([\d.]+)G\)")
# The llama3-70b dev job with 8 layers, compiled on 2026-11-26 (libtpu's memory analysis): arguments 3.356 GB,
# temporaries 9.453 GB, generated code 0.266 GB; output aliased to the donated arguments.
SEVENTY_B_8_LAYERS_BYTES = 3.356e9 + 9.453e9 + 0.266e9
FITTED = ("llama3-8b (dev)", "llama3-70b (dev), 8 layers", "Llama 3.1 70B, v6e-256")  # the coefficients' runs


@dataclass(frozen=True)
class Row:
    job: str
    estimate: HbmEstimate
    compiled: float | None  # bytes per chip, arguments and temporaries
    temporaries_only: bool = False  # the compiler refused it and named only its temporaries

    def line(self) -> str:
        role = "fits the coefficients" if self.job in FITTED else "check"
        estimated = self.estimate.total - (self.estimate.states if self.temporaries_only else 0)
        what = "temporaries" if self.temporaries_only else "total"
        if self.compiled is None:
            return f"| {self.job} | {role} | {estimated / GIB:.1f} | not compiled yet | — |"
        ratio = estimated / self.compiled
        verdict = "within ±15 %" if abs(ratio - 1) <= 0.15 else "MISS"
        return (
            f"| {self.job} | {role} | {estimated / GIB:.1f} ({what}) | {self.compiled / GIB:.1f} | "
            f"{ratio:.3f} ({verdict}) |"
        )


def compiled_bytes(verdict: dict | None) -> tuple[float | None, bool]:
    if verdict is None:
        return None, False
    if verdict.get("needed_bytes") is not None:
        return float(verdict["needed_bytes"]), False
    match = TEMPORARIES.search(verdict.get("compiler_error") or "")
    return (float(match.group(1)) * GIB, True) if match else (None, False)


def dev_rows() -> list[Row]:
    files = read_stack_files(REPO_ROOT, "dev")
    config = load_stack_config(files.config, "dev")
    rows = []
    os.environ.pop("LIBTPU_INIT_ARGS", None)  # make fit-check compiles with libtpu's defaults
    for job in config.jobs.maxtext:
        argv = fit_check_argv(config, job)
        compiled, temporaries_only = compiled_bytes(cached_verdict(REPO_ROOT / CACHE_DIR, cache_key(argv, REPO_ROOT)))
        rows.append(Row(f"{job.name} (dev)", estimate_for_fit_argv(argv, USABLE), compiled, temporaries_only))
        if job.model_name == "llama3-70b":
            cut = [*argv, "override_model_config=true", "base_num_decoder_layers=8"]
            rows.append(
                Row(f"{job.name} (dev), 8 layers", estimate_for_fit_argv(cut, USABLE), SEVENTY_B_8_LAYERS_BYTES)
            )
    return rows


def recipe_rows() -> list[Row]:
    os.environ["LIBTPU_INIT_ARGS"] = " ".join(RECIPE_LIBTPU_FLAGS)  # as benchmarks/maxtext_forecast.py compiles them
    rows = []
    for anchor in ANCHORS:
        argv = anchor.fit_argv()
        compiled, temporaries_only = compiled_bytes(cached_verdict(REPO_ROOT / CACHE_DIR, cache_key(argv, REPO_ROOT)))
        rows.append(Row(anchor.name, estimate_for_fit_argv(argv, USABLE), compiled, temporaries_only))
    return rows


def main() -> None:
    print(f"v6e usable HBM per chip: {USABLE / GIB:.2f} GiB")
    print("| job | role | estimate GiB/chip | compiled GiB/chip | estimate / compiled |")
    print("| --- | --- | ---: | ---: | --- |")
    rows = [*dev_rows(), *recipe_rows()]
    for row in rows:
        print(row.line())
    for row in rows:
        print(f"  {row.job}: {row.estimate.parts()}; needs at least {row.estimate.need / GIB:.1f}")
    missing = [row.job for row in rows if row.compiled is None]
    if missing:
        print(
            f"not compiled: {', '.join(missing)} (`make fit-check STACK=dev` for dev jobs, "
            "`.venv-maxtext/bin/python benchmarks/maxtext_forecast.py` for the recipes)"
        )


if __name__ == "__main__":
    main()
