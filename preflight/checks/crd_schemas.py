"""Custom-resource schemas: where they are found, how they are made strict, compiled once.

The files are the CRDs' `openAPIV3Schema`s as JSON (layout `<group>/<version>/<kind lower>.json`),
vendored in `preflight/checks/crds/` (sources and hashes: `preflight/checks/schema_sources.json`) or re-fetched by
`python -m preflight.checks.fetch_schemas` into `.cache/`. Raw JSON Schema is laxer than the API server in three
ways, fixed at load time: unknown keys pass, `required` ignores server-side defaults, and Go's `^(?i)`
breaks Python's `re`.

A custom resource of a pinned group/version whose schema file is in no searched folder is not an error
but `SchemaUnavailable`: preflight reports it as not checked (an error only with `--strict-schemas`).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema import Draft4Validator, Draft6Validator, FormatChecker, ValidationError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CRD_DIR_ENV = "TRAINYARD_CRD_DIR"
CACHE_CRD_DIR = PROJECT_ROOT / ".cache" / "schemas" / "crds"
VENDORED_CRD_DIR = Path(__file__).resolve().with_name("crds")
SOURCES_FILE = Path(__file__).with_name("schema_sources.json")

_GO_FLAGS_AFTER_ANCHOR = re.compile(r"^\^(\(\?[a-zA-Z]+\))")
_TITLE = re.compile(r'"title":\s*"(\S+) ')
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "definitions")

# The API server's formats that JSON Schema libraries leave unchecked; shared with built-in kinds.
KUBE_FORMATS = FormatChecker(formats=())


@KUBE_FORMATS.checks("int32")
def _is_int32(value: object) -> bool:
    return not isinstance(value, (int, float)) or -(2**31) <= value < 2**31


@KUBE_FORMATS.checks("int64")
def _is_int64(value: object) -> bool:
    return not isinstance(value, (int, float)) or -(2**63) <= value < 2**63


@KUBE_FORMATS.checks("byte", raises=(binascii.Error, ValueError))
def _is_base64(value: object) -> bool:
    if isinstance(value, str):
        base64.b64decode(value, validate=True)
    return True


def crd_search_path() -> tuple[Path, ...]:
    """The folders searched for CRD schemas, in order; $TRAINYARD_CRD_DIR (os.pathsep list) replaces them."""
    override = os.environ.get(CRD_DIR_ENV)
    if override:
        return tuple(Path(entry) for entry in override.split(os.pathsep) if entry)
    return (CACHE_CRD_DIR, VENDORED_CRD_DIR)


@dataclass(frozen=True)
class PinnedFile:
    repo: str
    commit: str
    path: str
    outputs: Mapping[str, str]  # "<group>/<version>/<kind>.json" -> expected sha256

    def url(self, base_url: str) -> str:
        return f"{base_url.rstrip('/')}/{self.repo}/{self.commit}/{self.path}"


def load_sources(sources_file: Path = SOURCES_FILE) -> tuple[str, list[PinnedFile]]:
    """The default base URL and every pinned CRD file listed in `sources_file`."""
    document = json.loads(sources_file.read_text(encoding="utf-8"))
    pins = [
        PinnedFile(source["repo"], source["commit"], entry["path"], dict(entry["outputs"]))
        for source in document["sources"]
        for entry in source["files"]
    ]
    return document["base_url"], pins


@cache
def pinned_schema_files(sources_file: Path = SOURCES_FILE) -> frozenset[str]:
    """Every `<group>/<version>/<kind lower>.json` that schema_sources.json pins."""
    _, pins = load_sources(sources_file)
    return frozenset(relative for pin in pins for relative in pin.outputs)


def make_strict(schema: dict[str, Any]) -> dict[str, Any]:
    """Rewrite a CRD schema in place so that JSON Schema rejects what the API server rejects."""
    properties = schema.get("properties")
    if isinstance(properties, dict):
        preserves_unknown = schema.get("x-kubernetes-preserve-unknown-fields") is True
        if "additionalProperties" not in schema and not preserves_unknown:
            schema["additionalProperties"] = False
        if "required" in schema:
            # The API server applies defaults before it checks `required`.
            still_required = [name for name in schema["required"] if "default" not in properties.get(name, {})]
            if still_required:
                schema["required"] = still_required
            else:
                del schema["required"]
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        schema["pattern"] = _GO_FLAGS_AFTER_ANCHOR.sub(r"\1^", pattern)
    for subschema in _subschemas(schema):
        make_strict(subschema)
    return schema


def _subschemas(schema: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for keyword in _SUBSCHEMA_MAPS:
        yield from (value for value in schema.get(keyword, {}).values() if isinstance(value, dict))
    for keyword in _SUBSCHEMA_LISTS:
        yield from (value for value in schema.get(keyword, []) if isinstance(value, dict))
    for keyword in ("items", "additionalProperties", "not"):
        value = schema.get(keyword)
        if isinstance(value, dict):
            yield value
        elif keyword == "items" and isinstance(value, list):
            yield from (item for item in value if isinstance(item, dict))


def _list_type_is_unique(
    validator: jsonschema.protocols.Validator, list_type: str, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """`x-kubernetes-list-type: map|set`: the API server rejects duplicate keys / items in CRs."""
    if not isinstance(instance, list) or list_type not in ("map", "set"):
        return
    map_keys = schema.get("x-kubernetes-list-map-keys", [])
    item_properties = schema.get("items", {}).get("properties", {})
    seen: set[str] = set()
    for index, item in enumerate(instance):
        if list_type == "map" and isinstance(item, Mapping):
            key: Any = {name: item.get(name, item_properties.get(name, {}).get("default")) for name in map_keys}
        else:
            key = item
        fingerprint = json.dumps(key, sort_keys=True, default=str)
        if fingerprint in seen:
            what = f"key {fingerprint}" if list_type == "map" else f"item {fingerprint}"
            yield ValidationError(f"duplicate {what} in a list of x-kubernetes-list-type {list_type}", path=[index])
        seen.add(fingerprint)


def _integral_number_is_integer(checker: Any, instance: object) -> bool:
    # Pulumi hands numbers over as floats; 2.0 goes on the wire as 2 (draft-06+ rule).
    return Draft6Validator.TYPE_CHECKER.is_type(instance, "integer")


CrdValidator = jsonschema.validators.extend(
    Draft4Validator,
    validators={"x-kubernetes-list-type": _list_type_is_unique},
    type_checker=Draft4Validator.TYPE_CHECKER.redefine("integer", _integral_number_is_integer),
)


class UnknownKind(LookupError):
    """No schema for an apiVersion/kind; `field` is the culprit, the message says what exists."""

    def __init__(self, field: str, reason: str):
        super().__init__(reason)
        self.field = field


class SchemaUnavailable(LookupError):
    """A pinned kind whose schema file is in none of the searched folders: it cannot be checked here."""


HOW_TO_GET_SCHEMAS = (
    f"restore preflight/checks/crds/ from git, run `make schemas` (needs the internet), or point ${CRD_DIR_ENV} "
    "at a folder of <group>/<version>/<kind>.json schemas"
)


@dataclass(frozen=True)
class CrdSchema:
    kind: str  # as the schema's title spells it; file names are lower case
    file: Path
    validator: jsonschema.protocols.Validator


@cache
def load_crd_schema(file: Path) -> CrdSchema:
    """Read, make strict and compile one schema file; each file is compiled once per process."""
    schema = make_strict(json.loads(file.read_text(encoding="utf-8")))
    title = str(schema.get("title", ""))
    return CrdSchema(kind=title.split(" ")[0], file=file, validator=CrdValidator(schema, format_checker=KUBE_FORMATS))


def find_crd_schema(group: str, version: str, kind: str) -> CrdSchema:
    """The strict compiled schema for a custom resource, or UnknownKind explaining why not."""
    search_path = crd_search_path()
    for folder in search_path:
        candidate = folder / group / version / f"{kind.lower()}.json"
        if candidate.is_file():
            found = load_crd_schema(candidate)
            if found.kind == kind:
                return found
            raise UnknownKind("kind", f"unknown kind {kind!r} in {group}/{version}; did you mean {found.kind!r}?")
    if f"{group}/{version}/{kind.lower()}.json" in pinned_schema_files():
        looked_in = ", ".join(str(folder) for folder in search_path)
        raise SchemaUnavailable(f"no schema for {kind} {group}/{version} (looked in: {looked_in})")
    raise _explain_missing(group, version, kind, search_path)


def _explain_missing(group: str, version: str, kind: str, search_path: tuple[Path, ...]) -> UnknownKind:
    group_folders = [folder / group for folder in search_path if (folder / group).is_dir()]
    if not group_folders:
        known_groups = sorted(
            {child.name for folder in search_path if folder.is_dir() for child in folder.iterdir() if child.is_dir()}
        )
        looked_in = ", ".join(str(folder) for folder in search_path)
        return UnknownKind(
            "apiVersion",
            f"unknown apiVersion '{group}/{version}': no CRD schemas for group {group!r} (looked in: {looked_in}; "
            f"groups found: {', '.join(known_groups) or 'none'}); trainyard pins schemas for: "
            f"{', '.join(sorted({relative.rsplit('/', 1)[0] for relative in pinned_schema_files()}))}",
        )
    versions = sorted({child.name for folder in group_folders for child in folder.iterdir() if child.is_dir()})
    if version not in versions:
        return UnknownKind(
            "apiVersion", f"unknown apiVersion '{group}/{version}'; {group} serves: {', '.join(versions)}"
        )
    kinds = sorted({_kind_from_title(file) for folder in group_folders for file in (folder / version).glob("*.json")})
    return UnknownKind("kind", f"unknown kind {kind!r} in {group}/{version}; known kinds: {', '.join(kinds)}")


def _kind_from_title(file: Path) -> str:
    # The title sits at the top of the file: read a few hundred bytes, not the whole schema.
    with file.open(encoding="utf-8") as handle:
        match = _TITLE.search(handle.read(512))
    return match.group(1) if match else file.stem
