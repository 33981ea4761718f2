"""Property values as a person reads them: whole, never cut; a long string or a list as a line diff."""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from preflight.engine.plan import integral_as_int

INLINE_LIMIT = 60  # longer values (and any with a newline) are shown as a line diff below the change


def shown(value: Any) -> str:
    """The whole value as JSON ('—' when absent)."""
    return "—" if value is None else json.dumps(integral_as_int(value), sort_keys=True, ensure_ascii=False)


WIDE = 100  # a longer line (a command with its flags) is shown one flag a line, so a changed flag stands out


def _split_flags(line: str) -> list[str]:
    if len(line) <= WIDE:
        return [line]
    first, *flags = re.split(r" (?=--?\w)", line)
    return [first, *(f"    {flag}" for flag in flags)]


def _lines(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [part for line in value.splitlines() or [""] for part in _split_flags(line)]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    return json.dumps(integral_as_int(value), sort_keys=True, indent=2, ensure_ascii=False).splitlines()


def is_long(old: Any, new: Any) -> bool:
    return any(
        isinstance(value, list) or "\n" in shown(value) or len(shown(value)) > INLINE_LIMIT for value in (old, new)
    )


def line_diff(old: Any, new: Any) -> list[str]:
    """Every line of both values, prefixed '-' (only in old), '+' (only in new) or ' ' (both): nothing left out,
    so two long argument strings that differ in one word show that word's line."""
    return [
        line
        for line in difflib.ndiff(_lines(old), _lines(new))
        if not line.startswith("?")  # ndiff's intraline hints: the +/- lines say it
    ]
