"""`trainyard forecast`: every enabled job's step time, throughput, MFU and cost, from the stack config alone.

It reads what preflight/forecast/ computes (stack_forecasts, pack_config_with_forecast) and prints it within
100 columns, or as JSON.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from cli.output import progress, say
from cli.parsing import Verbs, add_verb, json_option, refuse_config, shared_options
from components.config.load import ConfigError, load_stack_config
from components.config.tokens import TokenError
from preflight.engine.stack_files import StackFileError, find_project_dir, read_stack_files
from preflight.forecast.report import pack_config_with_forecast, stack_forecasts

EXIT_OK = 0

SUMMARY = "each job's step time, throughput, MFU and cost per run"
EPILOG = """\
MaxText jobs are forecast once `make fit-check STACK=<stack>` has compiled them.

examples:
  trainyard forecast                          every enabled job of the dev stack
  trainyard forecast --json -                 the forecasts as JSON, on stdout
  trainyard forecast --pack-config pack.json > pack-with-forecast.json
                                              the policy pack config with the forecast added
                                              (for `pulumi preview --policy-pack-config`)
  make forecast STACK=dev
"""


def add(verbs: Verbs) -> None:
    forecast = add_verb(verbs, "forecast", SUMMARY, EPILOG, run, [shared_options()])
    json_option(forecast, "the forecasts")
    forecast.add_argument(
        "--pack-config",
        type=Path,
        metavar="FILE",
        help="print FILE (a policy pack config) with the forecast added for runs-within-budget, as JSON for "
        "`pulumi preview --policy-pack-config`",
    )


def run(args: argparse.Namespace) -> int:
    try:
        project_dir = (args.project_dir or find_project_dir(Path.cwd())).resolve()
        files = read_stack_files(project_dir, args.stack)
        config = load_stack_config(files.config, args.stack)
    except (ConfigError, StackFileError, TokenError) as error:
        return refuse_config("trainyard forecast", args.stack, error, project_dir)
    with progress(f"forecasting the jobs of stack {args.stack}"):
        forecasts = stack_forecasts(config)
    if args.pack_config is not None:
        pack_config = json.loads(args.pack_config.read_text()) if args.pack_config.is_file() else {}
        print(json.dumps(pack_config_with_forecast(pack_config, forecasts), indent=2))
        return EXIT_OK
    if args.json is not None:
        text = json.dumps({"stack": args.stack, "forecast": [result.to_json() for result in forecasts]}, indent=2)
        if str(args.json) == "-":
            print(text)
            return EXIT_OK
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    if not forecasts:
        print(f"Stack {args.stack} enables no job (trainyard:jobs): nothing to forecast.")
    for result in forecasts:
        say("\n".join(result.lines()))
    if args.json is not None:
        print(f"\nForecasts written to {args.json}")
    return EXIT_OK
