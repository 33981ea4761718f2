"""Provider-input check: would the GCP provider accept the inputs the engine sends it?

Pulumi's mocks accept anything, so a misspelt nested key or a list where the provider wants an object
would pass every other offline check and fail only at `pulumi up`. This reads the pulumi-gcp SDK's own
type metadata (each resource's `<Resource>Args` class: its properties' wire names, the annotated types
and which arguments `__init__` requires) and checks every `gcp:*` resource of the plan against it (and the
image builds against pulumi-docker-build's, which carries the same metadata):
property names at every depth, object vs list vs map vs scalar, scalar types, and required properties.
"""

from __future__ import annotations

import collections.abc
import difflib
import enum
import importlib
import inspect
import sys
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from preflight.engine.mocks import SECRET_PLACEHOLDER

CHECKED_PACKAGES = ("gcp", "docker-build")
_SCALARS = {str: "a string", int: "an integer", float: "a number", bool: "a boolean"}


@dataclass(frozen=True)
class Shape:
    kind: str  # "object", "list", "map", "scalar", "enum", "any"
    args_class: type | None = None  # objects
    element: Shape | None = None  # lists and maps
    scalar: type | None = None  # scalars
    values: tuple[str, ...] = ()  # enums: the strings the provider accepts


@dataclass(frozen=True)
class Field:
    wire_name: str
    shape: Shape
    required: bool


@dataclass(frozen=True)
class ProviderInputProblem:
    resource: str  # "NodePool v6e-16-0"
    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.resource}: {self.path}: {self.reason}"


def args_class_for(type_token: str) -> type | None:
    """`gcp:container/nodePool:NodePool` -> `pulumi_gcp.container.NodePoolArgs`, `docker-build:index:Image` ->
    `pulumi_docker_build.ImageArgs` (None if the SDK has none)."""
    package, module_path, name = type_token.split(":")
    module_name = module_path.split("/")[0]
    sdk = f"pulumi_{package.replace('-', '_')}"
    try:
        module = importlib.import_module(sdk if module_name == "index" else f"{sdk}.{module_name}")
    except ImportError:
        return None
    return getattr(module, f"{name}Args", None)


def _members(annotation: Any) -> list[Any]:
    """The useful alternatives of an `Input[...]` annotation: no None, awaitables or Output[T]."""
    if typing.get_origin(annotation) is typing.Union:
        candidates = typing.get_args(annotation)
    else:
        candidates = (annotation,)
    kept = []
    for candidate in candidates:
        if candidate is type(None) or typing.get_origin(candidate) is collections.abc.Awaitable:
            continue
        if isinstance(candidate, typing.ForwardRef) and candidate.__forward_arg__.startswith("Output"):
            continue
        kept.append(candidate)
    return kept


def shape_of(annotation: Any, module: str) -> Shape:
    members = _members(annotation)
    if len(members) != 1:
        return Shape("any")
    member = members[0]
    if isinstance(member, typing.ForwardRef):
        resolved = getattr(sys.modules[module], member.__forward_arg__, None)
        if isinstance(resolved, type) and issubclass(resolved, enum.Enum):
            return Shape("enum", values=tuple(str(item.value) for item in resolved))
        return Shape("object", args_class=resolved) if isinstance(resolved, type) else Shape("any")
    origin = typing.get_origin(member)
    if origin is collections.abc.Sequence:
        return Shape("list", element=shape_of(typing.get_args(member)[0], module))
    if origin is collections.abc.Mapping:
        return Shape("map", element=shape_of(typing.get_args(member)[1], module))
    if member in _SCALARS:
        return Shape("scalar", scalar=member)
    if isinstance(member, type) and hasattr(member, "_pulumi_input_type"):
        return Shape("object", args_class=member)
    return Shape("any")


@cache
def fields_of(args_class: type) -> dict[str, Field]:
    """Wire name -> field, from the Args class's property getters and its `__init__`."""
    parameters = inspect.signature(args_class.__init__).parameters
    fields = {}
    for name, attribute in vars(args_class).items():
        getter = getattr(attribute, "fget", None)
        wire_name = getattr(getter, "_pulumi_name", None)
        if wire_name is None:
            continue
        shape = shape_of(getter.__annotations__.get("return"), args_class.__module__)
        parameter = parameters.get(name)
        required = parameter is not None and parameter.default is inspect.Parameter.empty
        fields[wire_name] = Field(wire_name, shape, required)
    return fields


def check_value(value: Any, shape: Shape, path: str) -> Iterable[tuple[str, str]]:
    """(path, reason) for every way `value` does not fit `shape`."""
    if value is None or value == SECRET_PLACEHOLDER or shape.kind == "any":
        return
    if shape.kind == "object":
        if not isinstance(value, Mapping):
            yield path, f"is {_describe(value)}, but the provider takes an object here"
            return
        yield from check_object(value, shape.args_class, path)
    elif shape.kind == "list":
        if not isinstance(value, list):
            yield path, f"is {_describe(value)}, but the provider takes a list here"
            return
        for index, item in enumerate(value):
            yield from check_value(item, shape.element, f"{path}[{index}]")
    elif shape.kind == "map":
        if not isinstance(value, Mapping):
            yield path, f"is {_describe(value)}, but the provider takes a map here"
            return
        for key, item in value.items():
            yield from check_value(item, shape.element, f"{path}.{key}")
    elif shape.kind == "enum":
        if value not in shape.values:
            close = difflib.get_close_matches(str(value), shape.values, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"allowed: {', '.join(shape.values)}"
            yield path, f"is {_describe(value)}, not a value the provider knows ({hint})"
    elif not _fits_scalar(value, shape.scalar):
        yield path, f"is {_describe(value)}, but the provider takes {_SCALARS[shape.scalar]} here"


def check_object(value: Mapping[str, Any], args_class: type | None, path: str) -> Iterable[tuple[str, str]]:
    if args_class is None:
        return
    fields = fields_of(args_class)
    prefix = f"{path}." if path else ""
    for key, item in value.items():
        field = fields.get(key)
        if field is None:
            close = difflib.get_close_matches(key, list(fields), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            yield f"{prefix}{key}", f"is not a property of {args_class.__name__.removesuffix('Args')}{hint}"
            continue
        yield from check_value(item, field.shape, f"{prefix}{key}")
    for field in fields.values():
        if field.required and field.wire_name not in value:
            yield f"{prefix}{field.wire_name}", "is required by the provider but not set"


def _fits_scalar(value: Any, scalar: type | None) -> bool:
    if scalar is bool:
        return isinstance(value, bool)
    if scalar is int:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer()
    if scalar is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, str)


def _describe(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"


def is_checked(type_token: str, custom: bool = True) -> bool:
    return custom and type_token.split(":", 1)[0] in CHECKED_PACKAGES


def check_provider_inputs(resources: Iterable[Mapping[str, Any]]) -> list[ProviderInputProblem]:
    """Every checked package's resources' inputs against their SDK Args classes (plan JSON `resources`)."""
    problems = []
    for resource in resources:
        if not is_checked(resource["type"], resource.get("custom", True)):
            continue
        args_class = args_class_for(resource["type"])
        label = f"{resource['type'].rsplit(':', 1)[-1]} {resource['name']}"
        if args_class is None:
            package = resource["type"].split(":", 1)[0]
            problems.append(ProviderInputProblem(label, "", f"pulumi-{package} has no resource {resource['type']}"))
            continue
        problems += [
            ProviderInputProblem(label, path, reason)
            for path, reason in check_object(resource["inputs"], args_class, "")
        ]
    return problems
