"""`trainyard VERB`: the console script (pyproject.toml [project.scripts]; also `python -m preflight VERB`).

One module per verb, each thin: it adds its parser here (`add`), reads its arguments, calls preflight/ (the
offline engine) or runs/ (day 2, against a cluster), and prints. With no verb, trainyard plans. `job` parses its
own sub-verbs (cli/job.py). `.venv/bin/trainyard` works without activating the venv.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import difflib
import gc
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import NoReturn

from cli import catalog, diff, forecast, plan, schema
from cli.parsing import HelpFormatter, prog_name

DESCRIPTION = "Plan, check, forecast and compare trainyard stacks offline; run and watch their jobs."
# The verb run when none is named, so `trainyard --stack dev` plans as it always has.
DEFAULT_VERB = "plan"
JOB_VERB = "job"
VERB_MODULES = {"plan": plan, "diff": diff, "forecast": forecast, "catalog": catalog, "schema": schema}
VERBS = (*VERB_MODULES, JOB_VERB)
# Verbs that plan and end: run as the process's own command, they skip what only frees memory (run_then_exit).
PLANNING_VERBS = (DEFAULT_VERB, "diff")
EXIT_USAGE = 2

EPILOG = """\
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


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION, epilog=EPILOG, formatter_class=HelpFormatter)
    parser.add_argument("--version", action="store_true", help="the checkout's commit and the pinned SDKs")
    verbs = parser.add_subparsers(title="verbs", metavar="VERB", dest="verb")
    for module in VERB_MODULES.values():
        module.add(verbs)
    # job parses its own sub-verbs (cli/job.py); this entry lists it
    verbs.add_parser(JOB_VERB, help="day 2: submit, list, status (why), logs and cancel training jobs", add_help=False)
    return parser


def with_verb(argv: list[str]) -> list[str]:
    """`argv` with the default verb in front when it names none (and asks for more than the top-level help)."""
    if argv[:1] and (argv[0] in VERBS or argv[0] in ("-h", "--help", "--version")):
        return argv
    return [DEFAULT_VERB, *argv]


def main(argv: list[str] | None = None) -> int:
    own_command_line = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--version"]:
        print(version())
        return 0
    if argv[:1] == [JOB_VERB]:
        from cli import job  # the Kubernetes client loads only for day 2

        return job.main(argv[1:])
    if argv and not argv[0].startswith("-") and argv[0] not in VERBS:
        print(unknown_verb(argv[0]), file=sys.stderr)
        return EXIT_USAGE
    args = build_parser(prog_name()).parse_args(with_verb(argv))
    if own_command_line and args.verb in PLANNING_VERBS:
        run_then_exit(args)
    return args.run(args)


def run_then_exit(args: argparse.Namespace) -> NoReturn:
    """A plan (or a diff's two) run as this process's own command: the process ends with it, so what only frees
    memory is left undone. Calls with an argument list (tests, other code in a long-lived process) run as always.

    - The cyclic garbage collector stays off. Pulumi's SDK under mocks and the policy pack's analyzer allocate
      hundreds of thousands of objects, and each full collection walks the heap pulumi-gcp's modules fill: about a
      second of a cold `trainyard plan --stack dev`'s ~4.7 s of CPU. Pausing only around the work does not save it
      (re-enabled, the collector walks what the run left); left off, the run's cycles stay (peak RSS 258 -> 267 MB).
    - The interpreter is not torn down: with the streams flushed and the atexit functions run (logging's flush,
      the SDK's tracing shutdown), the process exits at once. Tearing down ~600,000 objects and modules took
      another ~1.2 s (benchmarks/README.md, Preflight)."""
    gc.disable()
    code = args.run(args)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: the report is lost either way
            stream.flush()
    atexit._run_exitfuncs()
    os._exit(code)


def unknown_verb(word: str) -> str:
    close = difflib.get_close_matches(word, VERBS, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return f"trainyard: {word!r} is not a verb ({hint}verbs: {', '.join(VERBS)}; `trainyard --help` says more)"


def version() -> str:
    """The checkout's commit and the pinned releases a plan depends on."""
    here = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "-C", str(here), "describe", "--always", "--dirty"],
            check=False,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except OSError:
        commit = ""
    pins = ", ".join(f"{name} {metadata.version(name)}" for name in ("pulumi", "pulumi-gcp", "pulumi-kubernetes"))
    return f"trainyard {commit or 'unknown commit'} ({pins})"


if __name__ == "__main__":
    sys.exit(main())
