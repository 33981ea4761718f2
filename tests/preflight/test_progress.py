"""Progress on every long wait: rich's spinner on stderr with what is happening and the time it has taken, on a
terminal only; a pipe, a log or CI gets the output alone."""

from __future__ import annotations

import io
import sys
import time

from rich.console import Console

from cli import spinner as cli_run
from cli.output import progress


def terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, color_system=None, width=100), out


def test_a_slow_step_shows_what_it_does_and_its_elapsed_time_on_a_terminal():
    console, out = terminal()
    with progress("planning stack dev", console):
        time.sleep(1.3)
    shown = out.getvalue()
    assert "trainyard: planning stack dev" in shown and "0:00:01" in shown


def test_nothing_is_shown_when_stderr_is_not_a_terminal():
    out = io.StringIO()
    with progress("planning stack dev", Console(file=out)):
        time.sleep(0.2)
    assert out.getvalue() == ""


def test_each_step_of_a_long_command_gets_its_own_clock_and_the_output_scrolls_above():
    console, out = terminal()
    script = (
        "import time\n"
        "print('fit-check: compiling job-a ...', flush=True); time.sleep(1.3)\n"
        "print('job-a fits'); print('fit-check: compiling job-b ...', flush=True)\n"
        "raise SystemExit(3)\n"
    )
    status = cli_run.run_under_spinner([sys.executable, "-c", script], "fit-check: compiling", console)
    shown = out.getvalue()
    assert status == 3  # the command's own exit status
    assert "job-a fits" in shown and "fit-check: compiling job-b ..." in shown
    assert "fit-check: compiling job-a ... 0:00:01" in " ".join(shown.split())


def test_off_a_terminal_the_command_runs_as_it_is(capfd):
    status = cli_run.main(["--step", "x", "--", sys.executable, "-c", "print('plain'); raise SystemExit(4)"])
    assert status == 4
    assert capfd.readouterr().out == "plain\n"


def _pip_line_as_echo() -> str:
    """`make preflight`'s pip install line as make runs it, with pip replaced by echo."""
    import subprocess

    from tests.helpers.plans import PROJECT_DIR

    shown = subprocess.run(
        ["make", "-n", "-B", ".venv/.preflight"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    (line,) = [line for line in shown.splitlines() if "pip install" in line and "requirements-preflight" in line]
    return line.replace(".venv/bin/pip install", "echo pip-args:")


def test_pip_shows_its_own_progress_on_a_terminal_and_one_line_in_a_log():
    """The Makefile once asked `test -t 1` inside $(...), where standard output is always a pipe: pip was quiet
    even on a terminal, ~100 s of silence on the first `make preflight`."""
    import os
    import subprocess

    line = _pip_line_as_echo()
    piped = subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=30, check=True).stdout
    assert piped.strip() == "pip-args: --quiet -r requirements-preflight.txt"
    leader, follower = os.openpty()
    try:
        subprocess.run(["sh", "-c", line], stdout=follower, timeout=30, check=True)
        on_terminal = os.read(leader, 4096).decode()
    finally:
        os.close(leader)
        os.close(follower)
    assert on_terminal.strip() == "pip-args: -r requirements-preflight.txt"


NOISY = (
    "import sys\n"
    "print('fit-check: compiling llama3-8b ...')\n"
    "print('E0000 00:00:1764322800.123456   4242 common_lib.cc:612] Could not set metric server port: "
    "INVALID_ARGUMENT: Unknown parameter', file=sys.stderr)\n"
    "print('WARNING: All log messages before absl::InitializeLog() is called are written to STDERR')\n"
    "print('fit-check: llama3-8b fits: 19.9 GiB of 31.2')\n"
)


def test_fit_checks_library_noise_goes_to_the_log_it_names(tmp_path, capfd):
    """XLA and libtpu log by the dozen on a CPU before a compile's verdict; the verdict stays, the noise is kept."""
    log = tmp_path / "fit-check.log"
    assert cli_run.main(["--noise-log", str(log), "--", sys.executable, "-c", NOISY]) == 0
    shown = capfd.readouterr().out.splitlines()
    assert shown == [
        "fit-check: compiling llama3-8b ...",
        "fit-check: llama3-8b fits: 19.9 GiB of 31.2",
        f"2 library log lines (absl, XLA) kept in {log}",
    ]
    assert "INVALID_ARGUMENT" in log.read_text() and len(log.read_text().splitlines()) == 2
