"""`python -m preflight --stack dev [--json FILE]`: plan a stack offline, check it, and print the verdict.

`python -m preflight diff --base REF` prints what a change does to a stack (see preflight/diff.py).
Exit codes: 0 planned and every check passed, 1 a check failed (schema or mandatory policy),
2 the stack config, a stack file or the policy pack config is invalid.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components import cost
from components.config import ConfigError, load_stack_config
from preflight import policy_runner
from preflight.kube_schemas import SchemaProblem, check_manifests
from preflight.plan import Plan, plan_stack
from preflight.render import render_plan
from preflight.stack_files import StackFileError, find_project_dir

EXIT_OK, EXIT_CHECK_FAILED, EXIT_INVALID_CONFIG = 0, 1, 2


@dataclass
class Verdict:
    """Everything preflight concludes about a plan."""

    schema_problems: list[SchemaProblem]
    policies: list[policy_runner.Verdict]
    cost: cost.StackCost

    @property
    def failed(self) -> bool:
        return bool(self.schema_problems) or policy_runner.has_mandatory(self.policies)

    def to_json(self) -> dict[str, Any]:
        return {
            "schemaProblems": [{"object": p.obj, "path": p.path, "reason": p.reason} for p in self.schema_problems],
            "policies": [verdict.to_json() for verdict in self.policies],
            "cost": self.cost.to_json(),
        }


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m preflight", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="dev", help="stack name: reads Pulumi.<stack>.yaml (default: dev)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the plan and its verdict as JSON to FILE")
    parser.add_argument("--project-dir", type=Path, default=None, help="folder with Pulumi.yaml (default: found from cwd)")
    parser.add_argument("--pack-config", type=Path, default=None,
                        help="policy pack config JSON (default: policies/config.<stack>.json when it exists)")
    return parser.parse_args(argv)


def check(plan: Plan, pack_config: dict[str, Any]) -> Verdict:
    plan_json = plan.to_json()
    version = load_stack_config(plan.config).cluster.version
    return Verdict(
        schema_problems=check_manifests(plan.manifests, version),
        policies=policy_runner.evaluate(plan_json, pack_config),
        cost=cost.estimate(plan_json["resources"]),
    )


def print_report(plan: Plan, verdict: Verdict) -> None:
    print(render_plan(plan.project, plan.stack, plan.resources))
    print(f"\nSchema check: {len(plan.manifests)} Kubernetes objects, {len(verdict.schema_problems)} problems")
    for problem in verdict.schema_problems:
        print(f"  {problem}")
    print("\nPolicies:")
    print(policy_runner.render_table(verdict.policies))
    print("\nCost (USD per hour):")
    print(cost.render_table(verdict.cost))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["diff"]:
        from preflight import diff

        return diff.main(argv[1:])
    args = parse_args(argv)
    try:
        project_dir = (args.project_dir or find_project_dir(Path.cwd())).resolve()
        plan = plan_stack(args.stack, project_dir)
        pack_config = (policy_runner.load_pack_config(args.pack_config) if args.pack_config
                       else policy_runner.pack_config_for_stack(args.stack, project_dir))
        verdict = check(plan, pack_config)
    except (ConfigError, StackFileError, policy_runner.PackConfigError) as error:
        print(f"preflight: invalid stack config for {args.stack!r}:\n{error}", file=sys.stderr)
        return EXIT_INVALID_CONFIG
    print_report(plan, verdict)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**plan.to_json(), **verdict.to_json()}, indent=2) + "\n")
        print(f"\nPlan written to {args.json}")
    if verdict.failed:
        print("\npreflight: FAILED (see the schema problems and mandatory policies above)", file=sys.stderr)
        return EXIT_CHECK_FAILED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
