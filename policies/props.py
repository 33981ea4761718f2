"""Reading engine-shaped resource properties safely.

The engine hands a policy a read-only Mapping (pulumi_policy's unknown-checking proxy): camelCase keys,
every number a float, values the engine cannot know during preview raising ``UnknownValueError`` when read,
and extra keys from provider defaults. Rules read through ``lookup`` so an unknown value means "cannot tell
yet" (the check is skipped) instead of a crash or a false violation.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy.proxy import UnknownValueError, _is_unknown


class _Unknown:
    """A value the engine will only know after the update (a preview-time output). Use ``UNKNOWN``."""

    def __repr__(self) -> str:
        return "<unknown>"

    def __bool__(self) -> bool:
        return False


UNKNOWN: Any = _Unknown()


def is_unknown(value: Any) -> bool:
    return value is UNKNOWN


def lookup(props: Any, path: str | tuple[str, ...], default: Any = None) -> Any:
    """The value at a dotted camelCase path (``nodeConfig.flexStart``; list items as ``0``).

    Keys that contain dots themselves (labels, ``nvidia.com/gpu``) are given as a tuple of keys.
    Missing keys give ``default``; a value unknown during preview gives ``UNKNOWN``.
    """
    current = props
    try:
        for key in path.split(".") if isinstance(path, str) else path:
            if isinstance(current, Mapping):
                if key not in current:
                    return default
                current = current[key]
            elif isinstance(current, Sequence) and not isinstance(current, str) and key.isdigit():
                index = int(key)
                if index >= len(current):
                    return default
                current = current[index]
            else:
                return default
            if isinstance(current, str) and _is_unknown(current):
                return UNKNOWN
    except UnknownValueError:
        return UNKNOWN
    return default if current is None else current


def items(props: Any, path: str) -> list[Any]:
    """The elements of a list property; empty when missing or unknown."""
    value = lookup(props, path)
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_known_or_unknown(value, index) for index in range(len(value))]
    return []


def entries(props: Any, path: str) -> dict[str, Any]:
    """A map property (labels, nodeSelector) as a plain dict of its known entries."""
    value = lookup(props, path)
    if not isinstance(value, Mapping):
        return {}
    result: dict[str, Any] = {}
    for key in list(_keys(value)):
        item = lookup(value, (key,))
        if not is_unknown(item):
            result[key] = item
    return result


def as_number(value: Any) -> float | None:
    """A number from an engine value (floats, or numeric strings as Kubernetes quantities come)."""
    if isinstance(value, bool) or value is None or is_unknown(value):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def is_true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def plain(value: Any) -> Any:
    """A plain dict/list copy of engine properties; unknown values become ``UNKNOWN``."""
    if isinstance(value, Mapping):
        return {key: plain(_known_or_unknown(value, key)) for key in _keys(value)}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [plain(_known_or_unknown(value, index)) for index in range(len(value))]
    if isinstance(value, str) and _is_unknown(value):
        return UNKNOWN
    return value


def has_unknown(value: Any) -> bool:
    """Whether any part of an engine value is unknown during preview."""
    return _holds_unknown(plain(value))


def _holds_unknown(value: Any) -> bool:
    """Whether a plain value (``plain``'s) is or holds ``UNKNOWN``."""
    if is_unknown(value):
        return True
    if isinstance(value, dict):
        return any(_holds_unknown(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_unknown(item) for item in value)
    return False


def _keys(mapping: Mapping) -> Iterator[str]:
    return iter(mapping)


def _known_or_unknown(container: Sequence | Mapping, key: Any) -> Any:
    """The item at an index of a Sequence or a key of a Mapping the container holds; ``UNKNOWN`` when unknown."""
    try:
        value = container[key]
    except UnknownValueError:
        return UNKNOWN
    if isinstance(value, str) and _is_unknown(value):
        return UNKNOWN
    return value
