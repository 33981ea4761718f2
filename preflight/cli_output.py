"""How every verb writes to a terminal: lines within 100 columns, and a word on stderr while it works."""

from __future__ import annotations

import sys
import textwrap
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TextIO

WIDTH = 100  # every verb's text fits a 100-column terminal; the JSON keeps every message whole
PROGRESS_AFTER_SECONDS = 1.0


def say(text: str, file: TextIO | None = None) -> None:
    """Print `text` within WIDTH columns: a longer line wraps, its continuation indented."""
    for line in text.splitlines() or [""]:
        indent = " " * (len(line) - len(line.lstrip()) + 4)
        wrapped = textwrap.wrap(line, WIDTH, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False)
        print("\n".join(wrapped) if wrapped else "", file=file or sys.stdout)


def say_each(items: Iterable[object], file: TextIO | None = None) -> None:
    for item in items:
        say(f"  {item}", file)


@contextmanager
def progress(doing: str) -> Iterator[None]:
    """Say on stderr what preflight is doing, if it takes longer than about a second."""
    timer = threading.Timer(PROGRESS_AFTER_SECONDS, lambda: print(f"preflight: {doing}…", file=sys.stderr, flush=True))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
