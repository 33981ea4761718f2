"""Run a long command under a spinner: `python -m preflight.cli_run [--step PREFIX] -- COMMAND ...`.

The command's output (stdout and stderr, merged) scrolls above a spinner that shows the latest line starting
with PREFIX and the time since it appeared, so each step of a long run (`make fit-check`: "fit-check: compiling
<job> ...", minutes each) shows how long it has taken. When stdout or stderr is not a terminal the command runs
as it is, its output untouched. The exit status is the command's.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import TaskID

from preflight.cli_output import spinner


def run_under_spinner(command: Sequence[str], step: str, console: Console) -> int:
    unbuffered = {**os.environ, "PYTHONUNBUFFERED": "1"}  # a Python child's lines as they come, not at its exit
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1, env=unbuffered
    )
    assert process.stdout is not None
    with spinner(console) as bar:
        task: TaskID = bar.add_task(f"running {Path(command[0]).name} {shlex.join(command[1:])}"[:80], total=None)
        for line in process.stdout:
            text = line.rstrip("\n")
            bar.console.print(text, markup=False, highlight=False, soft_wrap=True)
            if step and text.startswith(step):
                bar.remove_task(task)
                task = bar.add_task(text.strip(), total=None)  # a new task: its clock starts now
    return process.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m preflight.cli_run", description=__doc__.splitlines()[0])
    parser.add_argument("--step", default="", help="a line starting with this begins a new step")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command and its arguments")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (after --)")
    console = Console(stderr=True)
    if not (console.is_terminal and sys.stdout.isatty()):
        return subprocess.call(command)
    return run_under_spinner(command, args.step, console)


if __name__ == "__main__":
    sys.exit(main())
