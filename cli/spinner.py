"""Run a long command under a spinner: `python -m cli.spinner [--step PREFIX] -- COMMAND ...`.

The command's output (stdout and stderr, merged) scrolls above a spinner that shows the latest line starting
with PREFIX and the time since it appeared, so each step of a long run (`make fit-check`: "fit-check: compiling
<job> ...", minutes each) shows how long it has taken. When stdout or stderr is not a terminal the command runs
as it is. With --noise-log FILE, the libraries' own log lines (absl/glog lines such as `E0000 00:00:... ]
... INVALID_ARGUMENT`, which XLA and libtpu print by the dozen on a CPU) go to FILE instead, and one line at the
end says how many and where. The exit status is the command's.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import TaskID

from cli.output import spinner

# absl/glog's line prefix (severity, date, time, thread, file:line]) and absl's preamble: libraries' logging, not
# the command's own output.
NOISE = re.compile(r"^(?:[EWIF]\d{4} \d\d:\d\d:[\d.]+\s+\d+ [\w.-]+:\d+\]|WARNING: All log messages before absl::)")


class NoiseLog:
    """Where the libraries' log lines go: a file, counted; None keeps them in the output."""

    def __init__(self, path: Path | None):
        self.path, self.lines = path, 0
        self._file = path.open("w") if path else None

    def takes(self, line: str) -> bool:
        if self._file is None or not NOISE.match(line):
            return False
        self._file.write(line + "\n")
        self.lines += 1
        return True

    def close(self) -> str | None:
        if self._file is None:
            return None
        self._file.close()
        return f"{self.lines} library log lines (absl, XLA) kept in {self.path}" if self.lines else None


def _start(command: Sequence[str]) -> subprocess.Popen:
    unbuffered = {**os.environ, "PYTHONUNBUFFERED": "1"}  # a Python child's lines as they come, not at its exit
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1, env=unbuffered
    )


def run_under_spinner(command: Sequence[str], step: str, console: Console, noise: NoiseLog | None = None) -> int:
    noise = noise or NoiseLog(None)
    process = _start(command)
    assert process.stdout is not None
    with spinner(console) as bar:
        task: TaskID = bar.add_task(f"running {Path(command[0]).name} {shlex.join(command[1:])}"[:80], total=None)
        for line in process.stdout:
            text = line.rstrip("\n")
            if noise.takes(text):
                continue
            bar.console.print(text, markup=False, highlight=False, soft_wrap=True)
            if step and text.startswith(step):
                bar.remove_task(task)
                task = bar.add_task(text.strip(), total=None)  # a new task: its clock starts now
    return _finish(process, noise)


def run_filtered(command: Sequence[str], noise: NoiseLog) -> int:
    """No terminal: the command's lines as they come, the libraries' log lines to the noise log."""
    process = _start(command)
    assert process.stdout is not None
    for line in process.stdout:
        if not noise.takes(line.rstrip("\n")):
            print(line, end="", flush=True)
    return _finish(process, noise)


def _finish(process: subprocess.Popen, noise: NoiseLog) -> int:
    status = process.wait()
    if said := noise.close():
        print(said, flush=True)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cli.spinner", description=__doc__.splitlines()[0])
    parser.add_argument("--step", default="", help="a line starting with this begins a new step")
    parser.add_argument("--noise-log", type=Path, metavar="FILE", help="write the libraries' log lines here")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command and its arguments")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (after --)")
    console = Console(stderr=True)
    noise = NoiseLog(args.noise_log)
    if not (console.is_terminal and sys.stdout.isatty()):
        return run_filtered(command, noise) if args.noise_log else subprocess.call(command)
    return run_under_spinner(command, args.step, console, noise)


if __name__ == "__main__":
    sys.exit(main())
