"""Schema checks of every Kubernetes object the program would apply.

Built-in kinds are validated against kubernetes-validate's bundled *strict* schemas for the cluster's
minor version; custom resources against the strict CRD schemas of `preflight.checks.crd_schemas`, with their
`metadata` against the core ObjectMeta schema. On top of JSON Schema, the API server's own rules for
object names, label keys/values and annotation keys are applied (those are Go code, not schema).

kubernetes-validate's own `validate()` is not used per object: it re-reads the 1.5 MB definitions file
and rebuilds the validator on every call, stops at the first error, and routes by the first DNS label
of the group (`networking.gke.io/v1` would pick `networking.k8s.io` schemas). Here the definitions are
indexed once by their `x-kubernetes-group-version-kind` and each validator is compiled once.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
import kubernetes_validate
from jsonschema import Draft202012Validator, ValidationError
from kubernetes_validate.utils import all_versions
from packaging.version import Version
from referencing import Registry, Resource

from components.facts.gke import QUANTITY_PATTERN
from preflight.checks.crd_schemas import KUBE_FORMATS, SchemaUnavailable, UnknownKind, find_crd_schema
from preflight.checks.kube_names import SchemaProblem, format_path, metadata_problems

MINIMUM_KUBERNETES = Version("1.34")  # resource.k8s.io/v1 (ResourceClaimTemplate) is served from 1.34
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# apimachinery types (DeleteOptions, WatchEvent...) claim every group/version, even long-removed ones.
_NOT_APPLIABLE = "io.k8s.apimachinery."
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_FORMAT_MEANING = {
    "byte": "base64-encoded data (plain text belongs in stringData)",
    "int32": "a 32-bit integer",
    "int64": "a 64-bit integer",
}
_KUBERNETES_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?$")


@dataclass(frozen=True)
class SchemaCheck:
    """What the schema check found: problems, and the custom resources it had no schema for."""

    problems: list[SchemaProblem]
    unchecked: list[str]  # "RayJob trainyard/llama3-8b: no schema for RayJob ray.io/v1 (looked in: ...)"
    refused: frozenset[int] = frozenset()  # positions of the objects with problems

    def adding(self, problems: list[SchemaProblem]) -> SchemaCheck:
        return SchemaCheck([*self.problems, *problems], self.unchecked, self.refused)


class UnsupportedKubernetesVersion(ValueError):
    """The requested Kubernetes version has no bundled schemas, or is older than the stack needs."""


@dataclass(frozen=True)
class BuiltinCatalog:
    kubernetes_minor: str
    definitions_uri: str
    registry: Registry
    definition_by_kind: Mapping[tuple[str, str, str], str]  # (group, version, kind) -> $defs name

    def served_versions(self, group: str) -> list[str]:
        return sorted({version for (grp, version, _) in self.definition_by_kind if grp == group})

    def served_kinds(self, group: str, version: str) -> list[str]:
        return sorted(kind for (grp, ver, kind) in self.definition_by_kind if (grp, ver) == (group, version))


def supported_kubernetes_versions() -> list[str]:
    """Minor versions this checker accepts: bundled by kubernetes-validate and >= 1.34."""
    minors = {Version(".".join(version.split(".")[:2])) for version in all_versions()}
    return [str(minor) for minor in sorted(minors) if minor >= MINIMUM_KUBERNETES]


def kubernetes_minor(kubernetes_version: str) -> str:
    """'1.34', 'v1.35.2' or '1.34.1-gke.1829001' -> '1.34'; anything unsupported raises with the allowed range."""
    supported = supported_kubernetes_versions()
    match = _KUBERNETES_VERSION.match(str(kubernetes_version).strip())
    minor = f"{int(match.group(1))}.{int(match.group(2))}" if match else None
    if minor not in supported:
        raise UnsupportedKubernetesVersion(
            f"kubernetes_version {kubernetes_version!r} is not supported for schema checks: allowed "
            f"{supported[0]} to {supported[-1]} ('1.34', 'v1.35.2', '1.34.1-gke.1829001'); resource.k8s.io/v1 "
            f"needs >= {MINIMUM_KUBERNETES}, kubernetes-validate {kubernetes_validate.__version__} ships schemas "
            f"up to {supported[-1]}"
        )
    return minor


@cache
def builtin_catalog(minor: str) -> BuiltinCatalog:
    """Load kubernetes-validate's strict definitions for one minor version (once per process)."""
    folder = resources.files(kubernetes_validate) / "kubernetes-json-schema" / f"v{minor}.0-local-strict"
    definitions = json.loads((folder / "_definitions.json").read_text(encoding="utf-8"))
    quantity_as_string = definitions["$defs"][QUANTITY]["oneOf"][0]
    # The built-in schemas accept any string where the API server would reject "eight" or "16 Gi".
    quantity_as_string["pattern"] = QUANTITY_PATTERN
    definition_by_kind = {
        (gvk["group"], gvk["version"], gvk["kind"]): name
        for name, definition in definitions["$defs"].items()
        for gvk in definition.get("x-kubernetes-group-version-kind", [])
        if not name.startswith(_NOT_APPLIABLE)
    }
    registry = Registry().with_resource(definitions["$id"], Resource.from_contents(definitions))
    return BuiltinCatalog(minor, definitions["$id"], registry, definition_by_kind)


@cache
def builtin_validator(minor: str, definition: str) -> jsonschema.protocols.Validator:
    catalog = builtin_catalog(minor)
    schema = {"$ref": f"{catalog.definitions_uri}#/$defs/{definition}"}
    return Draft202012Validator(schema, registry=catalog.registry, format_checker=KUBE_FORMATS)


def check_manifests(manifests: Iterable[Mapping[str, Any]], kubernetes_version: str) -> SchemaCheck:
    """Every problem the API server (or its CRD validation) would reject, for all objects, in order."""
    minor = kubernetes_minor(kubernetes_version)
    problems: list[SchemaProblem] = []
    unchecked: list[str] = []
    refused: set[int] = set()
    for position, manifest in enumerate(manifests):
        found = check_manifest(manifest, minor, position, unchecked)
        problems.extend(found)
        if found:
            refused.add(position)
    return SchemaCheck(problems, unchecked, frozenset(refused))


def check_manifest(
    manifest: Mapping[str, Any], minor: str, position: int = 0, unchecked: list[str] | None = None
) -> list[SchemaProblem]:
    """The object's problems; a custom resource without a schema gets its metadata checked and goes to `unchecked`."""
    label = describe_object(manifest, position)
    if not isinstance(manifest, Mapping):
        return [SchemaProblem(label, "", f"expected a Kubernetes object (a mapping), got {type(manifest).__name__}")]
    api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
    for field, value in (("apiVersion", api_version), ("kind", kind)):
        if not isinstance(value, str) or not value:
            return [SchemaProblem(label, field, f"required string {field!r} is missing or empty (got {value!r})")]
    try:
        targets = validation_targets(manifest, str(api_version), str(kind), minor)
    except UnknownKind as unknown:
        return [SchemaProblem(label, unknown.field, str(unknown))]
    except SchemaUnavailable as unavailable:
        if unchecked is not None:
            unchecked.append(f"{label}: {unavailable}")
        targets = metadata_targets(manifest, minor)
    problems: list[SchemaProblem] = []
    for prefix, validator, instance in targets:
        for error in validator.iter_errors(instance):
            problems.extend(problems_from_error(label, error, prefix))
    problems.extend(metadata_problems(label, str(kind), manifest))
    return list(dict.fromkeys(problems))


Target = tuple[tuple[str, ...], jsonschema.protocols.Validator, Any]  # (path prefix, validator, instance)


def validation_targets(manifest: Mapping[str, Any], api_version: str, kind: str, minor: str) -> list[Target]:
    """Which compiled schemas check which part of the manifest; UnknownKind if there is none."""
    group, _, version = api_version.rpartition("/")
    catalog = builtin_catalog(minor)
    definition = catalog.definition_by_kind.get((group, version, kind))
    if definition is not None:
        return [((), builtin_validator(minor, definition), manifest)]
    if catalog.served_versions(group):
        raise _unknown_builtin(catalog, group, version, kind)
    crd = find_crd_schema(group, version, kind)
    return [((), crd.validator, without_null_fields(manifest)), *metadata_targets(manifest, minor)]


def metadata_targets(manifest: Mapping[str, Any], minor: str) -> list[Target]:
    """A custom resource's `metadata` against the core ObjectMeta schema (CRD schemas leave it open)."""
    if "metadata" not in manifest:
        return []
    return [(("metadata",), builtin_validator(minor, OBJECT_META), manifest["metadata"])]


def without_null_fields(node: Any) -> Any:
    """The API server prunes null-valued fields of custom resources before it validates them."""
    if isinstance(node, Mapping):
        return {key: without_null_fields(value) for key, value in node.items() if value is not None}
    if isinstance(node, list):
        return [without_null_fields(item) for item in node]
    return node


def _unknown_builtin(catalog: BuiltinCatalog, group: str, version: str, kind: str) -> UnknownKind:
    api_version = f"{group}/{version}" if group else version
    versions = catalog.served_versions(group)
    at = f"at Kubernetes {catalog.kubernetes_minor}"
    if version not in versions:
        return UnknownKind(
            "apiVersion", f"unknown apiVersion {api_version!r} {at}; {group or 'core'} serves: {', '.join(versions)}"
        )
    kinds = catalog.served_kinds(group, version)
    close = difflib.get_close_matches(kind, kinds, n=1)
    hint = (
        f"did you mean {close[0]!r}?"
        if close
        else f"known kinds: {', '.join(k for k in kinds if not k.endswith('List'))}"
    )
    return UnknownKind("kind", f"unknown kind {kind!r} in {api_version} {at}; {hint}")


def describe_object(manifest: Any, position: int) -> str:
    """'Kind namespace/name' as the brief's problem reports spell it."""
    if not isinstance(manifest, Mapping):
        return f"manifest #{position}"
    metadata = manifest.get("metadata") if isinstance(manifest.get("metadata"), Mapping) else {}
    name = metadata.get("name") or "<unnamed>"
    namespace = metadata.get("namespace")
    kind = manifest.get("kind") or f"manifest #{position}"
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def problems_from_error(label: str, error: ValidationError, prefix: tuple[str, ...] = ()) -> Iterator[SchemaProblem]:
    path = (*prefix, *error.absolute_path)
    instance = error.instance
    if error.validator == "additionalProperties" and isinstance(instance, Mapping):
        for extra in _unexpected_keys(instance, error.schema):
            known = list(error.schema.get("properties", {}))
            close = difflib.get_close_matches(extra, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            yield SchemaProblem(
                label, format_path((*path, extra)), f"additional property {extra!r} is not allowed{hint}"
            )
    elif error.validator == "required" and isinstance(instance, Mapping):
        for missing in (name for name in error.validator_value if name not in instance):
            yield SchemaProblem(label, format_path((*path, missing)), f"required property {missing!r} is missing")
    elif error.validator == "type":
        yield SchemaProblem(
            label, format_path(path), f"expected {_type_names(error.validator_value)}, got {_describe(instance)}"
        )
    elif error.validator in ("anyOf", "oneOf") and error.context:
        # int-or-string and quantities: say which types fit, or why the one matching type still failed
        not_type_errors = [e for e in error.context if e.validator != "type"]
        if not_type_errors:
            yield from problems_from_error(label, jsonschema.exceptions.best_match(not_type_errors), prefix)
        else:
            expected = _type_names([e.validator_value for e in error.context])
            yield SchemaProblem(label, format_path(path), f"expected {expected}, got {_describe(instance)}")
    elif error.validator == "pattern" and error.validator_value == QUANTITY_PATTERN:
        reason = f"{_describe(instance)} is not a Kubernetes quantity (such as 8, 500m, 16Gi, 200G)"
        yield SchemaProblem(label, format_path(path), reason)
    elif error.validator == "format":
        meaning = _FORMAT_MEANING.get(error.validator_value, f"format {error.validator_value!r}")
        yield SchemaProblem(label, format_path(path), f"{_describe(instance)} is not {meaning}")
    else:
        message = error.message if len(error.message) <= 300 else error.message[:297] + "..."
        yield SchemaProblem(label, format_path(path), message)


def _unexpected_keys(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    allowed = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    return sorted(k for k in instance if k not in allowed and not any(re.search(p, k) for p in patterns))


def _type_names(expected: Any) -> str:
    flat: list[str] = []
    for item in expected if isinstance(expected, list) else [expected]:
        flat.extend(item if isinstance(item, list) else [item])
    return " or ".join(dict.fromkeys(flat))


def _describe(instance: Any) -> str:
    json_type = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(instance), "number"
    )
    if isinstance(instance, (dict, list)):
        return json_type
    text = json.dumps(instance, default=str)
    return f"{json_type} {text if len(text) <= 60 else text[:57] + '...'}"
