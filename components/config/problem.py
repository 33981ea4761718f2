"""One problem in a stack config: the key path, the value, and what is wrong with it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import Any

UNSET = object()  # a problem about a key that has no value (missing, unknown)
# A value is echoed up to this many characters: a 3,000-character name stays one readable line.
SHOWN_CHARACTERS = 80


@dataclass(frozen=True)
class ConfigProblem:
    path: str
    value: Any
    message: str

    def __str__(self) -> str:
        if self.value is UNSET:
            return f"{self.path}: {self.message}"
        return f"{self.path}: {show(self.value)} {self.message}"


def show(value: Any) -> str:
    if isinstance(value, IPv4Network):
        value = str(value)
    try:
        shown = json.dumps(value, ensure_ascii=False)
    except TypeError:
        shown = repr(value)
    if len(shown) <= SHOWN_CHARACTERS:
        return shown
    return f"{shown[: SHOWN_CHARACTERS - 20]}... ({len(shown):,} characters)"


def reason(error: Exception, value: Any) -> str:
    """topology's messages start with the value; the problem prints it already."""
    return str(error).removeprefix(repr(value)).strip()
