"""What every verb's parser shares: help that keeps its examples and fits 100 columns, the stack options spelled
the same in each verb, `--json FILE`, the name the command was invoked by, and how a refused stack config ends."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from cli.output import WIDTH
from components.config.load import ConfigError
from preflight.engine.config_lines import located

EXIT_INVALID_CONFIG = 2  # every verb's exit code for a stack config it refuses

Verbs = argparse._SubParsersAction  # what `add_subparsers` returns; each verb module's `add` takes it


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


def add_verb(
    verbs: Verbs,
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


def prog_name() -> str:
    invoked = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return "python -m preflight" if invoked in ("", "__main__.py", "-c") else invoked


def refuse_config(verb: str, stack: str, error: Exception, project_dir: Path) -> int:
    """A stack config the verb refused: one line per problem on stderr (a config problem with its line in the stack
    file), and the exit code that says so."""
    where = located(error.problems, project_dir / f"Pulumi.{stack}.yaml") if isinstance(error, ConfigError) else error
    print(f"{verb}: invalid stack config for {stack!r}:\n{where}", file=sys.stderr)
    return EXIT_INVALID_CONFIG
