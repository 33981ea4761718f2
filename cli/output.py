"""How every verb writes to a terminal: lines within 100 columns, and a spinner on stderr while it works."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

WIDTH = 100  # every verb's text fits a 100-column terminal; the JSON keeps every message whole


def say(text: str, file: TextIO | None = None) -> None:
    """Print `text` within WIDTH columns: a longer line wraps, its continuation indented."""
    for line in text.splitlines() or [""]:
        indent = " " * (len(line) - len(line.lstrip()) + 4)
        wrapped = textwrap.wrap(line, WIDTH, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False)
        print("\n".join(wrapped) if wrapped else "", file=file or sys.stdout)


def say_each(items: Iterable[object], file: TextIO | None = None) -> None:
    for item in items:
        say(f"  {item}", file)


def spinner(console: Console) -> Progress:
    """rich's spinner with what is happening and the time it has taken, gone when done; the caller's stdout
    stays its own (only stderr passes through the console)."""
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    return Progress(*columns, console=console, transient=True, redirect_stdout=False)


@contextmanager
def progress(doing: str, console: Console | None = None) -> Iterator[None]:
    """A spinner on stderr saying what preflight is doing, with the time elapsed, while the block runs; nothing
    when stderr is not a terminal (a pipe, a log, CI)."""
    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield
        return
    with spinner(console) as bar:
        bar.add_task(f"trainyard: {doing}", total=None)
        yield


def counted(number: int, noun: str) -> str:
    """`1 problem`, `2 problems`, `0 problems`."""
    return f"{number} {noun}{'' if number == 1 else 's'}"
