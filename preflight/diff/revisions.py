"""`python -m preflight diff --base REF`: what a change does to a stack, as Markdown for a PR comment.

Plans REF in a temporary ``git worktree`` and the working tree (each with ``python -m preflight --stack S
--json FILE`` run in its own checkout by the current interpreter), compares the two plans
(``compare.compare``, pure) and prints them as Markdown (``markdown.render_markdown``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from preflight.checks import policy_runner
from preflight.diff.compare import compare
from preflight.diff.markdown import render_markdown


class DiffError(RuntimeError):
    """A git revision or a plan could not be produced."""


def _git(*args: str, cwd: Path) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise DiffError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def plan_checkout(checkout: Path, stack: str, out: Path) -> dict[str, Any] | None:
    """Plan ``stack`` in a checkout with this interpreter; None (with the reason on stderr) if it cannot."""
    result = subprocess.run(
        [sys.executable, "-m", "preflight", "--stack", stack, "--json", str(out)],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if not out.exists():
        print(
            f"preflight diff: {checkout} could not be planned (exit {result.returncode}):\n"
            f"{result.stderr.strip()[-2000:]}",
            file=sys.stderr,
        )
        return None
    return json.loads(out.read_text())


def plan_revision(root: Path, ref: str, stack: str, workdir: Path) -> dict[str, Any] | None:
    """Plan ``ref`` in a temporary git worktree (removed afterwards)."""
    tree = workdir / "base"
    _git("worktree", "add", "--detach", str(tree), ref, cwd=root)
    try:
        return plan_checkout(tree, stack, workdir / "base.json")
    finally:
        _git("worktree", "remove", "--force", str(tree), cwd=root)


def default_base(root: Path) -> str:
    return _git("merge-base", "main", "HEAD", cwd=root)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m preflight diff", description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="git revision to compare with (default: the merge base with main)")
    parser.add_argument("--stack", default="dev", help="stack name (default: dev)")
    parser.add_argument("--output", type=Path, help="also write the Markdown to FILE")
    parser.add_argument(
        "--pack-config", type=Path, help="policy pack config JSON (default: policies/config.<stack>.json)"
    )
    parser.add_argument("--project-dir", type=Path, default=Path.cwd(), help="the checkout to diff (default: cwd)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """0: Markdown printed; 2: a revision could not be resolved or the working tree not planned."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    root = Path(_git("rev-parse", "--show-toplevel", cwd=args.project_dir))
    try:
        config = (
            policy_runner.load_pack_config(args.pack_config)
            if args.pack_config
            else policy_runner.pack_config_for_stack(args.stack, root)
        )
        ref = args.base or default_base(root)
        label = _git("rev-parse", "--short", ref, cwd=root)
        with tempfile.TemporaryDirectory(prefix="trainyard-diff-") as tmp:
            base = plan_revision(root, ref, args.stack, Path(tmp))
            head = plan_checkout(root, args.stack, Path(tmp) / "head.json")
    except (DiffError, policy_runner.PackConfigError) as error:
        print(f"preflight diff: {error}", file=sys.stderr)
        return 2
    if head is None:
        return 2
    markdown = render_markdown(compare(base or {}, head, config), f"{ref} ({label})" if label != ref else ref)
    if base is None:
        markdown += f"\n_The base `{ref}` could not be planned: every resource shows as added._\n"
    print(markdown)
    if args.output:
        args.output.write_text(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
