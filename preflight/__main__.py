"""`python -m preflight --stack dev [--json FILE]`: plan a stack offline and print it.

Exit codes: 0 planned and every check passed, 1 a check failed (schema), 2 the stack config is invalid.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from components.config import ConfigError, load_stack_config
from preflight.kube_schemas import check_manifests
from preflight.plan import plan_stack
from preflight.render import render_plan
from preflight.stack_files import StackFileError, find_project_dir

EXIT_OK, EXIT_CHECK_FAILED, EXIT_INVALID_CONFIG = 0, 1, 2


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m preflight", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="dev", help="stack name: reads Pulumi.<stack>.yaml (default: dev)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the plan as JSON to FILE")
    parser.add_argument("--project-dir", type=Path, default=None, help="folder with Pulumi.yaml (default: found from cwd)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        project_dir = (args.project_dir or find_project_dir(Path.cwd())).resolve()
        plan = plan_stack(args.stack, project_dir)
    except (ConfigError, StackFileError) as error:
        print(f"preflight: invalid stack config for {args.stack!r}:\n{error}", file=sys.stderr)
        return EXIT_INVALID_CONFIG
    print(render_plan(plan.project, plan.stack, plan.resources))
    schema_problems = check_manifests(plan.manifests, load_stack_config(plan.config).cluster.version)
    print(f"\nSchema check: {len(plan.manifests)} Kubernetes objects, {len(schema_problems)} problems")
    for problem in schema_problems:
        print(f"  {problem}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(plan.to_json(), indent=2) + "\n")
        print(f"\nPlan written to {args.json}")
    return EXIT_CHECK_FAILED if schema_problems else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
