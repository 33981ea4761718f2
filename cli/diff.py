"""`trainyard diff --base REF`: what a change does to a stack, for a terminal or a PR comment.

preflight/diff/revisions.py plans REF in a temporary git worktree and the working tree; compare.py compares the
two plans; this prints them as +/~/- lines on a terminal (terminal.py) or Markdown (markdown.py; always for
--output).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from cli.output import progress
from cli.parsing import Verbs, add_verb, shared_options
from preflight.checks import policy_runner
from preflight.diff.compare import compare
from preflight.diff.markdown import render_markdown
from preflight.diff.revisions import DiffError, checkout_root, pack_config_at, plan_revisions, resolve_base
from preflight.diff.terminal import print_terminal, terminal_lines

EXIT_OK, EXIT_REFUSED, EXIT_UNPLANNED = 0, 1, 2

SUMMARY = "what a change does to a stack: plans two git revisions and compares them"
EPILOG = """\
exit codes: 0 the diff printed, 1 printed, and an API would refuse the update (`pulumi up` fails),
2 a revision could not be resolved or the working tree not planned

examples:
  trainyard diff                              this checkout against its merge base with main
  trainyard diff --base HEAD~1 --stack dev    against the previous commit
  trainyard diff --output preflight-diff.md   also write the Markdown (what CI posts on a PR)
  make diff BASE=main
"""


def add(verbs: Verbs) -> None:
    diff = add_verb(verbs, "diff", SUMMARY, EPILOG, run, [shared_options()])
    diff.add_argument("--base", help="git revision to compare with (default: the merge base with main)")
    diff.add_argument("--output", type=Path, metavar="FILE", help="also write the Markdown to FILE")
    diff.add_argument(
        "--format",
        choices=("terminal", "markdown"),
        help="stdout as +/~/- lines (colour on a terminal) or Markdown for a PR (default: terminal on a terminal)",
    )
    diff.add_argument(
        "--pack-config",
        type=Path,
        metavar="FILE",
        help="policy pack config JSON for both sides (default: each side's own policies/config.<stack>.json)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        root = checkout_root(args.project_dir or Path.cwd())
        ref, label = resolve_base(root, args.base)
        if args.pack_config:  # one config, given for both sides
            config = base_config = policy_runner.load_pack_config(args.pack_config)
        else:
            config = policy_runner.pack_config_for_stack(args.stack, root)
            base_config = pack_config_at(root, ref, args.stack)
        with tempfile.TemporaryDirectory(prefix="trainyard-diff-") as tmp:
            base, head = plan_revisions(root, ref, label, args.stack, Path(tmp), progress)
    except (DiffError, policy_runner.PackConfigError) as error:
        print(f"trainyard diff: {error}", file=sys.stderr)
        return EXIT_UNPLANNED
    if head is None:
        return EXIT_UNPLANNED
    base_label = f"{ref} ({label})" if label != ref else ref
    with progress("comparing the two plans"):
        diff = compare(base or {}, head, config, base_config)
    markdown = render_markdown(diff, base_label)
    unplanned = f"The base `{ref}` could not be planned: every resource shows as added."
    if base is None:
        markdown += f"\n_{unplanned}_\n"
    if (args.format or ("terminal" if sys.stdout.isatty() else "markdown")) == "terminal":
        print_terminal(terminal_lines(diff, base_label) + ([("!", unplanned)] if base is None else []))
    else:
        print(markdown)
    if args.output:
        args.output.write_text(markdown)
    return EXIT_REFUSED if diff.refused else EXIT_OK
