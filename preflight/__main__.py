"""`python -m preflight --stack dev [--json FILE]`: plan a stack offline, check it, and print the verdict.

`python -m preflight diff --base REF` prints what a change does to a stack (see preflight/diff.py).
Exit codes: 0 planned and every check passed, 1 a check failed (schema or mandatory policy; with
--strict-schemas also a custom resource left unchecked for want of its schema), 2 the stack config, a stack
file or the policy pack config is invalid.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.config.load import ConfigError, load_stack_config
from components.facts import cost
from preflight import policy_runner
from preflight.crd_schemas import HOW_TO_GET_SCHEMAS
from preflight.kube_schemas import SchemaCheck, check_manifests
from preflight.placement import PlacementProblem, check_placement
from preflight.plan import Plan, plan_stack
from preflight.provider_inputs import ProviderInputProblem, check_provider_inputs
from preflight.render import render_plan
from preflight.stack_files import StackFileError, find_project_dir

EXIT_OK, EXIT_CHECK_FAILED, EXIT_INVALID_CONFIG = 0, 1, 2


@dataclass
class Verdict:
    """Everything preflight concludes about a plan."""

    schemas: SchemaCheck
    placement: list[PlacementProblem]
    pod_templates: int
    provider_inputs: list[ProviderInputProblem]
    policies: list[policy_runner.Verdict]
    cost: cost.StackCost
    strict_schemas: bool = False

    @property
    def failed(self) -> bool:
        unchecked_fails = self.strict_schemas and bool(self.schemas.unchecked)
        return (bool(self.schemas.problems) or unchecked_fails or bool(self.placement) or bool(self.provider_inputs)
                or policy_runner.has_mandatory(self.policies))

    def to_json(self) -> dict[str, Any]:
        return {
            "schemaProblems": [{"object": p.obj, "path": p.path, "reason": p.reason} for p in self.schemas.problems],
            "schemaUnchecked": self.schemas.unchecked,
            "providerInputProblems": [{"resource": p.resource, "path": p.path, "reason": p.reason}
                                      for p in self.provider_inputs],
            "placementProblems": [{"workload": p.workload, "where": p.where, "reason": p.reason} for p in self.placement],
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
    parser.add_argument("--strict-schemas", action="store_true",
                        help="fail (exit 1) when a custom resource cannot be schema-checked for want of its schema")
    return parser.parse_args(argv)


def check(plan: Plan, pack_config: dict[str, Any], strict_schemas: bool = False) -> Verdict:
    plan_json = plan.to_json()
    version = load_stack_config(plan.config, plan.stack).cluster.version
    pod_templates, placement = check_placement(plan_json["resources"])
    return Verdict(
        schemas=check_manifests(plan.manifests, version),
        placement=placement,
        pod_templates=pod_templates,
        provider_inputs=check_provider_inputs(plan_json["resources"]),
        policies=policy_runner.evaluate(plan_json, pack_config),
        cost=cost.estimate(plan_json["resources"]),
        strict_schemas=strict_schemas,
    )


def print_report(plan: Plan, verdict: Verdict) -> None:
    print(render_plan(plan.project, plan.stack, plan.resources))
    schemas = verdict.schemas
    print(f"\nSchema check: {len(plan.manifests)} Kubernetes objects, {len(schemas.problems)} problems")
    for problem in schemas.problems:
        print(f"  {problem}")
    if schemas.unchecked:
        outcome = "an error (--strict-schemas)" if verdict.strict_schemas else "not an error"
        print(f"Not schema-checked ({len(schemas.unchecked)} custom resources; metadata checked; {outcome}):")
        for line in schemas.unchecked:
            print(f"  {line}")
        print(f"  To check them: {HOW_TO_GET_SCHEMAS}.")
    gcp_resources = sum(1 for resource in plan.resources if resource.type.startswith("gcp:") and resource.custom)
    print(f"\nProvider inputs: {gcp_resources} GCP resources, {len(verdict.provider_inputs)} problems")
    for problem in verdict.provider_inputs:
        print(f"  {problem}")
    print(f"\nPlacement check: {verdict.pod_templates} pod templates, {len(verdict.placement)} that fit no node")
    for problem in verdict.placement:
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
        verdict = check(plan, pack_config, args.strict_schemas)
    except (ConfigError, StackFileError, policy_runner.PackConfigError) as error:
        print(f"preflight: invalid stack config for {args.stack!r}:\n{error}", file=sys.stderr)
        return EXIT_INVALID_CONFIG
    print_report(plan, verdict)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**plan.to_json(), **verdict.to_json()}, indent=2) + "\n")
        print(f"\nPlan written to {args.json}")
    if verdict.failed:
        print("\npreflight: FAILED (see the schema, provider input, placement and mandatory policy problems above)",
              file=sys.stderr)
        return EXIT_CHECK_FAILED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
