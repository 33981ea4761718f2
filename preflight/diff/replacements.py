"""Which input changes make the providers replace a resource, from replacements.json (gen_replacements.py), and
which resources a replacement drags along (Pulumi's dependent replacements).

An entry's scope follows Terraform SDKv2's diff: ``value`` -- any change at or below the path replaces;
``presence`` -- a ForceNew block: adding or removing it (or list elements) replaces, its own fields decide
otherwise. ``replaceIf`` entries are the provider's ``customdiff.ForceNewIf[Change]`` rules.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("replacements.json")
INDEX = re.compile(r"\[\d+\]")
MISSING = object()


@cache
def table() -> Mapping[str, Any]:
    return json.loads(TABLE.read_text())


def _segments(path: str) -> list[str]:
    return path.split(".")


def _plain(path: str) -> str:
    return INDEX.sub("", path)


def _value_at(inputs: Mapping[str, Any], segments: list[str]) -> Any:
    value: Any = inputs
    for segment in segments:
        name, *indices = segment.replace("]", "").split("[")
        if not isinstance(value, Mapping) or name not in value:
            return MISSING
        value = value[name]
        for index in indices:
            if not isinstance(value, list) or int(index) >= len(value):
                return MISSING
            value = value[int(index)]
    return value


def _count(value: Any) -> int:
    if value is MISSING or value is None:
        return 0
    if isinstance(value, list | Mapping):
        return len(value) if isinstance(value, list) else int(bool(value))
    return 1


def _covers(entry: str, plain: str) -> bool:
    """The entry's field is the changed one, one of its ancestors, or below it (the whole block changed)."""
    return plain == entry or plain.startswith(entry + ".") or entry.startswith(plain + ".")


def _presence_changed(entry: str, path: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    depth = entry.count(".") + 1
    concrete = _segments(path)[:depth]
    concrete[-1] = concrete[-1].split("[", 1)[0]  # the block itself, not one element of it
    return _count(_value_at(old, concrete)) != _count(_value_at(new, concrete))


def _shrinks_cidr(old: Any, new: Any) -> bool:
    """terraform-provider-google IsShrinkageIpCidr: only a range that contains the old one updates in place."""
    try:
        old_net, new_net = ipaddress.ip_network(str(old)), ipaddress.ip_network(str(new))
    except ValueError:
        return True
    return not (old_net.version == new_net.version and old_net.subnet_of(new_net))  # type: ignore[arg-type]


def _turned_off(old: Any, new: Any) -> bool:
    return bool(old) and not bool(new)


# The provider's conditions by their Go names; one the table names but this map lacks counts as a replacement.
CONDITIONS: dict[str, Callable[[Any, Any], bool]] = {
    "IsShrinkageIpCidr": _shrinks_cidr,
    "isBeenEnabled": _turned_off,
    "isPolicyLocked": _turned_off,
}


def forces_replacement(type_: str, path: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether changing ``path`` (dotted, list items ``[i]``) of a ``type_`` resource replaces it."""
    entry = table()["types"].get(type_)
    if entry is None:
        return False
    plain = _plain(path)
    for rule in entry["replaceOn"]:
        scope_changed = rule["scope"] == "value" or _presence_changed(rule["path"], path, old, new)
        if _covers(rule["path"], plain) and scope_changed:
            return True
    for rule in entry.get("replaceIf", []):
        if _covers(rule["path"], plain):
            segments = _segments(path)[: rule["path"].count(".") + 1]
            condition = CONDITIONS.get(rule["condition"], lambda *_: True)
            if condition(_value_at(old, segments), _value_at(new, segments)):
                return True
    return False


# ---- what depends on a replaced resource -------------------------------------------------------------------


@dataclass(frozen=True)
class Dependent:
    """A resource that uses a replaced one: replaced too (a reference in a replacing input) or not."""

    urn: str
    type: str
    name: str
    causes: tuple[str, ...]  # the replaced resources' names
    paths: tuple[str, ...]  # the inputs that refer to it; empty: dependsOn only
    replaced: bool


def identities(resource: Mapping[str, Any]) -> set[str]:
    """The values other resources' inputs carry for this one (id, name, selfLink, as the plan's mocks make them)."""
    inputs = resource.get("inputs") or {}
    physical = inputs.get("name") if isinstance(inputs.get("name"), str) else resource["name"]
    if resource["type"].startswith("kubernetes:"):
        physical = (inputs.get("metadata") or {}).get("name") or physical
    found = {f"{physical}-id", f"https://mock.invalid/{resource['type']}/{physical}", physical}
    if inputs.get("accountId"):
        found.add(str(inputs["accountId"]))
    return found


# Kubernetes label maps name a pool or slice group by the stack's config (GKE's node labels are the pool's given
# name), never by a replaced resource's output: the engine makes nothing in them unknown.
LABEL_MAPS = ("labels", "nodeSelector", "matchLabels", "nodeLabels")


def _references(inputs: Any, names: set[str], prefix: str = "") -> Iterator[str]:
    if isinstance(inputs, Mapping):
        for key, value in inputs.items():
            if key in LABEL_MAPS and isinstance(value, Mapping):
                continue
            yield from _references(value, names, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(inputs, list):
        for index, value in enumerate(inputs):
            yield from _references(value, names, f"{prefix}[{index}]")
    elif isinstance(inputs, str) and (inputs in names or any(inputs.endswith("/" + name) for name in names)):
        yield prefix


def dependents(replaced: list[str], resources: list[Mapping[str, Any]], already: set[str]) -> list[Dependent]:
    """Every resource that depends on a replaced one, transitively through those it replaces as well.

    As Pulumi's engine does for a replacement: the dependent's inputs that refer to the replaced resource become
    unknown; if one of them forces replacement the dependent is replaced too (deleted first when the replaced one
    is), else it is updated in place or, with a dependsOn only, waits for it.
    """
    by_urn = {r["urn"]: r for r in resources}
    found: dict[str, Dependent] = {}
    queue = [urn for urn in replaced if urn in by_urn]
    while queue:
        cause = by_urn[queue.pop(0)]
        names = identities(cause)
        for resource in resources:
            if cause["urn"] not in (resource.get("dependencies") or []):
                continue
            if resource["urn"] in found:
                earlier = found[resource["urn"]]
                found[resource["urn"]] = replace(earlier, causes=(*earlier.causes, cause["name"]))
                continue
            inputs = resource.get("inputs") or {}
            paths = tuple(_references(inputs, names))
            replaces = any(forces_replacement(resource["type"], path, inputs, inputs) for path in paths)
            if resource["urn"] in already:
                continue
            found[resource["urn"]] = Dependent(
                resource["urn"], resource["type"], resource["name"], (cause["name"],), paths, replaces
            )
            if replaces:
                queue.append(resource["urn"])
    return list(found.values())
