"""`trainyard VERB`: one command line for every verb (also `python -m preflight VERB`; no verb plans the stack).

`.venv/bin/trainyard` is the console script that `make preflight` installs (pyproject.toml: [project.scripts]);
it works without activating the venv. The verbs share their options: --stack, --project-dir and --json
(catalog, which reads no stack, takes --json).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from preflight import catalog, cli_forecast, cli_plan, cli_schema
from preflight.cli_output import WIDTH

DESCRIPTION = "Plan, check, forecast and compare trainyard stacks offline: no cloud, no credentials."
# The verb run when none is named, so `python -m preflight --stack dev` plans as it always has.
DEFAULT_VERB = "plan"
DIFF_VERB = "diff"
VERBS = ("plan", "diff", "forecast", "catalog", "schema")

TOP_EPILOG = """\
With no verb, trainyard plans: `trainyard --stack dev` is `trainyard plan --stack dev`.
`trainyard VERB --help` shows each verb's options and examples.

examples:
  .venv/bin/trainyard plan                    plan and check the dev stack (Pulumi.dev.yaml)
  .venv/bin/trainyard diff --base main        what this branch changes in the dev stack
  .venv/bin/trainyard forecast --stack dev    each job's step time, MFU and cost per run
  .venv/bin/trainyard catalog                 the TPU topologies, machines, capacities and prices
  .venv/bin/trainyard job --help              day 2: submit, list, status (why), logs and cancel jobs
  make preflight STACK=dev                    build .venv (first time), then plan
"""

PLAN_EPILOG = """\
exit codes: 0 every check passed, 1 a check failed, 2 the stack config or a stack file is invalid

examples:
  trainyard plan                              plan and check Pulumi.dev.yaml
  trainyard plan --stack dev --strict-schemas
                                              fail when a custom resource cannot be schema-checked
  trainyard plan --json .cache/plan.json      also write the plan and its verdict as JSON
  trainyard plan --json - | jq .cost          the JSON alone, on stdout
  make preflight STACK=dev                    the same as the first, building .venv first
"""

DIFF_EPILOG = """\
examples:
  trainyard diff                              this checkout against its merge base with main
  trainyard diff --base HEAD~1 --stack dev    against the previous commit
  trainyard diff --output preflight-diff.md   also write the Markdown (what CI posts on a PR)
  make diff BASE=main
"""

FORECAST_EPILOG = """\
MaxText jobs are forecast once `make fit-check STACK=<stack>` has compiled them.

examples:
  trainyard forecast                          every enabled job of the dev stack
  trainyard forecast --json -                 the forecasts as JSON, on stdout
  trainyard forecast --pack-config pack.json > pack-with-forecast.json
                                              the policy pack config with the forecast added
                                              (for `pulumi preview --policy-pack-config`)
  make forecast STACK=dev
"""

CATALOG_EPILOG = """\
examples:
  trainyard catalog                           every topology, machine, capacity mode and price
  trainyard catalog --region us-east5         prices in one region only
  trainyard catalog --json - | jq '.tpuTopologies[] | select(.vms > 1)'
                                              the multi-host slices, as JSON
  make catalog
"""

SCHEMA_EPILOG = """\
A stack file names it in its first line (docs/editor.md):
  # yaml-language-server: $schema=./docs/stack-schema.json

examples:
  trainyard schema > /tmp/stack-schema.json   print the schema
  trainyard schema --write                    rewrite docs/stack-schema.json (after a model changed)
  make stack-schema
"""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help, its examples kept as written, never wider than 100 columns."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=min(shutil.get_terminal_size().columns, WIDTH) - 2)


def shared_options() -> argparse.ArgumentParser:
    """The options every stack verb takes, spelled and meaning the same in each."""
    shared = argparse.ArgumentParser(add_help=False)
    shared.add_argument("--stack", default="dev", help="stack name: reads Pulumi.<stack>.yaml (default: dev)")
    shared.add_argument(
        "--project-dir", type=Path, metavar="DIR", help="folder with Pulumi.yaml (default: found from cwd)"
    )
    return shared


def json_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--json", type=Path, metavar="FILE", help=f"write {what} as JSON to FILE ('-': stdout only)")


def _verb(
    verbs: argparse._SubParsersAction,
    name: str,
    summary: str,
    epilog: str,
    run: Callable[[argparse.Namespace], int],
    parents: list[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    parser = verbs.add_parser(
        name,
        help=summary,
        description=summary,
        epilog=epilog,
        parents=parents,
        formatter_class=HelpFormatter,
    )
    parser.set_defaults(run=run)
    return parser


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description=DESCRIPTION, epilog=TOP_EPILOG, formatter_class=HelpFormatter
    )
    verbs = parser.add_subparsers(title="verbs", metavar="VERB", dest="verb")
    summary = "plan a stack under mocks and check it (the default verb)"
    plan = _verb(verbs, "plan", summary, PLAN_EPILOG, cli_plan.run, [shared_options()])
    json_option(plan, "the plan and its verdict")
    plan.add_argument(
        "--pack-config",
        type=Path,
        metavar="FILE",
        help="policy pack config JSON (default: policies/config.<stack>.json when it exists)",
    )
    plan.add_argument(
        "--strict-schemas",
        action="store_true",
        help="fail (exit 1) when a custom resource cannot be schema-checked for want of its schema",
    )
    # diff parses its own options (preflight/diff/revisions.py); this entry lists it and carries its examples.
    diff = verbs.add_parser(
        DIFF_VERB, help="what a change does to a stack: plans two git revisions and compares them", add_help=False
    )
    diff.add_argument("diff_args", nargs=argparse.REMAINDER)
    forecast = _verb(
        verbs,
        "forecast",
        "each job's step time, throughput, MFU and cost per run",
        FORECAST_EPILOG,
        cli_forecast.run,
        [shared_options()],
    )
    json_option(forecast, "the forecasts")
    forecast.add_argument(
        "--pack-config",
        type=Path,
        metavar="FILE",
        help="print FILE (a policy pack config) with the forecast added for runs-within-budget, as JSON for "
        "`pulumi preview --policy-pack-config`",
    )
    summary = "the topologies, machine types, capacity modes, zones and prices trainyard knows"
    catalog_verb = _verb(verbs, "catalog", summary, CATALOG_EPILOG, catalog.run, [])
    json_option(catalog_verb, "the catalog")
    catalog_verb.add_argument("--region", help="list the prices of REGION only (such as us-east5)")
    summary = "the JSON Schema of a stack file, for editors (yaml-language-server)"
    schema = _verb(verbs, "schema", summary, SCHEMA_EPILOG, cli_schema.run, [])
    schema.add_argument("--write", action="store_true", help=f"write it to {cli_schema.SCHEMA_PATH.name} in docs/")
    return parser


def with_verb(argv: list[str]) -> list[str]:
    """`argv` with the default verb in front when it names none (and asks for more than the top-level help)."""
    if argv[:1] and (argv[0] in VERBS or argv[0] in ("-h", "--help")):
        return argv
    return [DEFAULT_VERB, *argv]


def run_diff(diff_args: list[str]) -> int:
    from preflight.diff import revisions

    if {"-h", "--help"} & set(diff_args):
        try:
            revisions.main(["--help"])
        except SystemExit:
            pass
        print(f"\n{DIFF_EPILOG}", end="")
        return 0
    return revisions.main(diff_args)


def prog_name() -> str:
    invoked = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return "python -m preflight" if invoked in ("", "__main__.py", "-c") else invoked


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    argv = with_verb(argv)
    if argv[0] == DIFF_VERB:
        return run_diff(argv[1:])
    args = build_parser(prog_name()).parse_args(argv)
    return args.run(args)
