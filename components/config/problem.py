"""One problem in a stack config: the key path, the value, and what is wrong with it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import Any

UNSET = object()  # a problem about a key that has no value (missing, unknown)


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
        return json.dumps(value, ensure_ascii=False)
    except TypeError:
        return repr(value)


def reason(error: Exception, value: Any) -> str:
    """topology's messages start with the value; the problem prints it already."""
    return str(error).removeprefix(repr(value)).strip()
