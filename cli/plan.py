"""`trainyard plan` (also `trainyard` with no verb): plan a stack offline, check it (preflight/verdict.py), print
the report and one verdict line.

Exit codes: 0 planned and every check passed, 1 a check failed (schema or mandatory policy; with
--strict-schemas also a custom resource left unchecked for want of its schema), 2 the stack config, a stack
file or the policy pack config is invalid.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cli.output import counted, progress, say, say_each
from cli.parsing import EXIT_INVALID_CONFIG, Verbs, add_verb, json_option, refuse_config, shared_options
from components.config.load import ConfigError, load_stack_config
from components.config.tokens import TokenError
from components.facts import cost
from preflight.checks import policy_runner, provider_inputs
from preflight.checks.crd_schemas import HOW_TO_GET_SCHEMAS
from preflight.checks.kube_schemas import UnsupportedKubernetesVersion
from preflight.engine.plan import Plan, plan_stack
from preflight.engine.stack_files import StackFileError, find_project_dir
from preflight.report import job_inputs, render_jobs, render_plan
from preflight.verdict import Verdict, check

EXIT_OK, EXIT_CHECK_FAILED = 0, 1

SUMMARY = "plan a stack under mocks and check it (the default verb)"
EPILOG = """\
exit codes: 0 every check passed, 1 a check failed, 2 the stack config or a stack file is invalid

examples:
  trainyard plan                              plan and check Pulumi.dev.yaml
  trainyard plan --stack dev --strict-schemas
                                              fail when a custom resource cannot be schema-checked
  trainyard plan --json .cache/plan.json      also write the plan and its verdict as JSON
  trainyard plan --json - | jq .cost          the JSON alone, on stdout
  make preflight STACK=dev                    the same as the first, building .venv first
"""


def add(verbs: Verbs) -> None:
    plan = add_verb(verbs, "plan", SUMMARY, EPILOG, run, [shared_options()])
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


def print_report(plan: Plan, verdict: Verdict) -> None:
    say(render_plan(plan.project, plan.stack, plan.resources))
    schemas = verdict.schemas
    say(f"\nSchema check: {len(plan.manifests)} Kubernetes objects, {counted(len(schemas.problems), 'problem')}")
    say_each(schemas.problems)
    if schemas.unchecked:
        outcome = "an error (--strict-schemas)" if verdict.strict_schemas else "not an error"
        say(f"Not schema-checked ({len(schemas.unchecked)} custom resources; metadata checked; {outcome}):")
        say_each([*schemas.unchecked, f"To check them: {HOW_TO_GET_SCHEMAS}."])
    checked = sum(1 for resource in plan.resources if provider_inputs.is_checked(resource.type, resource.custom))
    say(f"\nProvider inputs: {checked} GCP and image resources, {counted(len(verdict.provider_inputs), 'problem')}")
    say_each(verdict.provider_inputs)
    say(f"\nPlacement check: {verdict.pod_templates} pod templates, {len(verdict.placement)} that fit no node")
    say_each(verdict.placement)
    queued = len(verdict.admitted) + len({p.workload for p in verdict.admission})
    problems = counted(len(verdict.admission), "problem")
    say(f"\nKueue admission (v0.19.2, as its code admits): {counted(queued, 'queued workload')}, {problems}")
    say_each([*(f"{a.workload}: admitted on {a.flavor_list}" for a in verdict.admitted), *verdict.admission])
    if verdict.gpu_software:
        say("\nGPU software (components/facts/gpu_software.py; docs/cloud-facts.md: the A4 GPU software stack):")
        say_each(verdict.gpu_software)
    say("\nPolicies:")
    say(policy_runner.render_table(verdict.policies))
    say("\nCost (USD per hour):")
    say(cost.render_table(verdict.cost))
    if verdict.forecast:
        say("\nForecast (trainyard forecast; benchmarks/README.md: FSDP and MaxText forecasts):")
        say_each(line for result in verdict.forecast for line in result.lines())
    forecasts = [r.to_json() for r in verdict.forecast]
    inputs = job_inputs(load_stack_config(plan.config, plan.stack))
    jobs = render_jobs(plan.manifests, verdict.admitted, verdict.admission, forecasts, inputs)
    if jobs:
        say("\nJobs (what each enabled job became; `--json FILE` has every field):")
        say_each(jobs)


def verdict_line(plan: Plan, verdict: Verdict) -> str:
    resources = sum(1 for resource in plan.resources if resource.custom)
    counts = {
        "schema": len(verdict.schemas.problems) + (len(verdict.schemas.unchecked) if verdict.strict_schemas else 0),
        "provider input": len(verdict.provider_inputs),
        "placement": len(verdict.placement),
        "admission": len(verdict.admission),
        "mandatory policy": sum(1 for v in verdict.policies if v.level == "mandatory"),
        "does not fit": sum(1 for result in verdict.forecast if result.cannot_run),
        "too close to call": sum(1 for result in verdict.forecast if result.undecided),
    }
    total = sum(counts.values())
    where = ", ".join(f"{count} {kind}" for kind, count in counts.items() if count)
    cost_range = verdict.cost.range_text
    problems = counted(total, "problem")
    summary = f"{resources} resources, {len(plan.manifests)} objects, {problems}{f' ({where})' if where else ''}"
    return f"trainyard: {'FAILED' if verdict.failed else 'OK'} — {summary}, {cost_range}"


def plan_and_verdict_json(plan: Plan, verdict: Verdict) -> dict[str, Any]:
    """What `--json` writes: the plan and its verdict (built only when asked for: a copy of every input)."""
    return {**plan.to_json(), **verdict.to_json()}


def run(args: argparse.Namespace) -> int:
    """Plan `args.stack`, check it, print the report (or the JSON, with `--json -`); the exit code."""
    try:
        project_dir = (args.project_dir or find_project_dir(Path.cwd())).resolve()
        with progress(f"planning stack {args.stack} (running the program under mocks)"):
            plan = plan_stack(args.stack, project_dir)
        pack_config = (
            policy_runner.load_pack_config(args.pack_config)
            if args.pack_config
            else policy_runner.pack_config_for_stack(args.stack, project_dir)
        )
        with progress("checking schemas, provider inputs, placement, policies and cost"):
            verdict = check(plan, pack_config, args.strict_schemas)
    except (ConfigError, StackFileError, TokenError, policy_runner.PackConfigError) as error:
        return refuse_config("trainyard", args.stack, error, project_dir)
    except UnsupportedKubernetesVersion as error:
        # The schemas preflight checks objects against bound the versions it can vouch for.
        print(
            f"trainyard: invalid stack config for {args.stack!r}:\ntrainyard:cluster.version: {error}", file=sys.stderr
        )
        return EXIT_INVALID_CONFIG
    if str(args.json) == "-":
        print(json.dumps(plan_and_verdict_json(plan, verdict), indent=2))
        say(verdict_line(plan, verdict), file=sys.stderr)
        return EXIT_CHECK_FAILED if verdict.failed else EXIT_OK
    print_report(plan, verdict)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(plan_and_verdict_json(plan, verdict), indent=2) + "\n")
        say(f"\nPlan written to {args.json}")
    # The verdict, OK or FAILED, on the report's stream, as its last line (the exit code says which).
    say(f"\n{verdict_line(plan, verdict)}")
    return EXIT_CHECK_FAILED if verdict.failed else EXIT_OK
