"""Names, labels and annotations of Kubernetes objects: rules the API server applies in Go (apimachinery
validation), not in any schema. `kube_schemas.py` runs them beside the schema checks."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

_PLAIN_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")


@dataclass(frozen=True)
class SchemaProblem:
    obj: str  # "RayCluster trainyard/maxtext" (kind namespace/name)
    path: str  # "spec.workerGroupSpecs[0].numOfHost": where the problem is
    reason: str  # "additional property 'numOfHost' is not allowed": why

    def __str__(self) -> str:
        return f"{self.obj}: {self.path or '<object>'}: {self.reason}"


def format_path(parts: Iterable[str | int]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part)}]"
    return text


@dataclass(frozen=True)
class NameRule:
    description: str
    pattern: re.Pattern[str]
    max_length: int
    explanation: str


_LABEL_1123 = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = NameRule(
    "lowercase RFC 1123 subdomain",
    re.compile(rf"{_LABEL_1123}(\.{_LABEL_1123})*"),
    253,
    "lower case alphanumerics, '-' or '.', starting and ending with an alphanumeric",
)
DNS1123_LABEL = NameRule(
    "RFC 1123 label",
    re.compile(_LABEL_1123),
    63,
    "lower case alphanumerics or '-', starting and ending with an alphanumeric",
)
DNS1035_LABEL = NameRule(
    "RFC 1035 label",
    re.compile("[a-z]([-a-z0-9]*[a-z0-9])?"),
    63,
    "lower case alphanumerics or '-', starting with a letter and ending with an alphanumeric",
)
NAME_RULE_BY_KIND = {"Namespace": DNS1123_LABEL, "Service": DNS1035_LABEL}  # everything else: subdomain
_QUALIFIED_NAME = re.compile("([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_QUALIFIED_NAME_RULE = "63 characters or less, alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
MAX_ANNOTATIONS_BYTES = 256 * 1024


def metadata_problems(label: str, kind: str, manifest: Mapping[str, Any]) -> list[SchemaProblem]:
    problems: list[SchemaProblem] = []
    metadata = manifest.get("metadata")
    if isinstance(metadata, Mapping):
        # An absent name is fine: Pulumi auto-names the object; a wrong type is a schema problem.
        rule = NAME_RULE_BY_KIND.get(kind, DNS1123_SUBDOMAIN)
        problems += _name_problems(label, "metadata.name", metadata.get("name"), rule)
        problems += _name_problems(label, "metadata.namespace", metadata.get("namespace"), DNS1123_LABEL)
    for path, object_meta in _object_metas(manifest, ()):
        problems += _label_problems(label, path, object_meta.get("labels"))
        problems += _annotation_problems(label, path, object_meta.get("annotations"))
    return problems


def _name_problems(label: str, path: str, value: Any, rule: NameRule) -> list[SchemaProblem]:
    if not isinstance(value, str) or (len(value) <= rule.max_length and rule.pattern.fullmatch(value)):
        return []
    reason = f"{value!r} is not a valid {rule.description}: {rule.explanation}, at most {rule.max_length} characters"
    return [SchemaProblem(label, path, reason)]


def _object_metas(node: Any, path: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], Mapping[str, Any]]]:
    """Every ObjectMeta in the object: its own and those of embedded templates."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "metadata" and isinstance(value, Mapping):
                yield (*path, key), value
            else:
                yield from _object_metas(value, (*path, key))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _object_metas(item, (*path, index))


def qualified_name_error(key: str) -> str | None:
    """Why a label or annotation key is invalid ('prefix/name', prefix optional), or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.pattern.fullmatch(prefix)):
        return f"prefix {prefix!r} must be a {DNS1123_SUBDOMAIN.description}"
    if len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        return f"name part {name!r} must be {_QUALIFIED_NAME_RULE}"
    return None


def _label_problems(label: str, path: tuple[str | int, ...], labels: Any) -> list[SchemaProblem]:
    if not isinstance(labels, Mapping):
        return []
    problems = []
    for key, value in labels.items():
        where = format_path((*path, "labels", key))
        if (key_error := qualified_name_error(str(key))) is not None:
            problems.append(SchemaProblem(label, where, f"invalid label key: {key_error}"))
        if isinstance(value, str) and value and (len(value) > 63 or not _QUALIFIED_NAME.fullmatch(value)):
            problems.append(
                SchemaProblem(label, where, f"invalid label value {value!r}: must be empty or {_QUALIFIED_NAME_RULE}")
            )
    return problems


def _annotation_problems(label: str, path: tuple[str | int, ...], annotations: Any) -> list[SchemaProblem]:
    if not isinstance(annotations, Mapping):
        return []
    problems = [
        SchemaProblem(label, format_path((*path, "annotations", key)), f"invalid annotation key: {key_error}")
        for key in annotations
        if (key_error := qualified_name_error(str(key))) is not None
    ]
    size = sum(len(str(key)) + len(str(value)) for key, value in annotations.items())
    if size > MAX_ANNOTATIONS_BYTES:
        problems.append(
            SchemaProblem(
                label,
                format_path((*path, "annotations")),
                f"annotations total {size} bytes, more than the {MAX_ANNOTATIONS_BYTES} allowed",
            )
        )
    return problems
