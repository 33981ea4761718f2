"""Fault injection: one worker dies abruptly once MaxText reports step N, once per run.

It exists so tests and demos can prove that Ray Train's FailureConfig restarts the worker group and
that MaxText resumes from its own checkpoint. The worker is killed from inside MaxText's step loop (a
logging handler on the "completed step" line) so the failure lands at the same step every time; a
marker file created with O_EXCL makes it happen once per run, however many times the group restarts.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path

INJECTED_FAILURE_EXIT_CODE = 75
_STEP_LINE = re.compile(r"completed step: (\d+),")


class _DieAtStep(logging.Handler):
    def __init__(self, step: int, marker: Path) -> None:
        super().__init__(level=logging.INFO)
        self.step = step
        self.marker = marker

    def emit(self, record: logging.LogRecord) -> None:
        match = _STEP_LINE.search(record.getMessage())
        if not match or int(match.group(1)) < self.step:
            return
        if claim_failure(self.marker):
            print(f"trainyard: injected failure of this worker after step {match.group(1)}", flush=True)
            sys.stderr.flush()
            os._exit(INJECTED_FAILURE_EXIT_CODE)


def claim_failure(marker: Path) -> bool:
    """True for the first caller ever (per marker path); the marker outlives restarts of the group."""
    marker.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def install_failure_at_step(step: int, marker: Path, logger_name: str = "absl") -> None:
    """Make this process exit abruptly when `logger_name` logs "completed step: M" with M >= step."""
    if marker.exists():
        return
    logging.getLogger(logger_name).addHandler(_DieAtStep(step, marker))
