"""The forecast of each job of a stack: its step, throughput, MFU, and what its run or DWS window costs.

FSDP jobs are forecast from their shape (preflight/forecast/fsdp_jobs.py); MaxText jobs from their architecture and
mesh at once, or from their compiled step once `make fit-check` has compiled them (preflight/forecast/maxtext_jobs.py).

.venv/bin/python -m preflight forecast [--stack dev]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components.config.load import ConfigError, load_stack_config
from components.config.models import StackConfig
from components.facts import cost
from preflight.engine.stack_files import read_stack_files
from preflight.forecast.fsdp_jobs import FsdpJobForecast, fsdp_forecasts
from preflight.forecast.maxtext_jobs import MaxTextJobForecast, maxtext_forecasts
from preflight.forecast.priced import NoForecast

AnyForecast = FsdpJobForecast | MaxTextJobForecast | NoForecast


def stack_forecasts(config: StackConfig, root: Path | None = None) -> list[AnyForecast]:
    """Every enabled job's forecast; MaxText jobs' compiled ones from the fit-check cache under `root` (default: this
    checkout, where `make fit-check` keeps it), instant ones where it has none."""
    prices = cost.load_prices()
    return [*fsdp_forecasts(config, prices), *maxtext_forecasts(config, prices, root or CHECKOUT)]


BUDGET_POLICY = "runs-within-budget"
CHECKOUT = Path(__file__).resolve().parents[2]


def pack_config_with_forecast(pack_config: Mapping[str, Any], forecasts: list[AnyForecast]) -> dict[str, Any]:
    """The policy pack config with the stack's forecast handed to the run budget policy (policies/stack_rules.py:
    runs_within_budget), which cannot compute it: a forecast is not a resource."""
    budget = dict(pack_config.get(BUDGET_POLICY) or {})
    budget["forecast"] = [result.to_json() for result in forecasts]
    return {**pack_config, BUDGET_POLICY: budget}


def plan_forecasts(plan_json: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The forecasts of a plan's FSDP jobs as JSON, from the config the plan was made with; none when that
    config no longer parses (an old base plan in a diff)."""
    try:
        config = load_stack_config(plan_json.get("config") or {}, str(plan_json.get("stack", "dev")))
    except ConfigError:
        return []
    return [result.to_json() for result in stack_forecasts(config)]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m preflight forecast", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="dev", help="stack name: reads Pulumi.<stack>.yaml (default: dev)")
    parser.add_argument(
        "--pack-config",
        type=Path,
        metavar="FILE",
        help="print FILE (a policy pack config) with the forecast added for runs-within-budget, as JSON for "
        "`pulumi preview --policy-pack-config`",
    )
    args = parser.parse_args(argv)
    files = read_stack_files(Path.cwd(), args.stack)
    forecasts = stack_forecasts(load_stack_config(files.config, args.stack))
    if args.pack_config is not None:
        pack_config = json.loads(args.pack_config.read_text()) if args.pack_config.is_file() else {}
        print(json.dumps(pack_config_with_forecast(pack_config, forecasts), indent=2))
        return 0
    for result in forecasts:
        print("\n".join(result.lines()))
    return 0
