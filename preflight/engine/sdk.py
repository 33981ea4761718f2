"""Every private surface of the Pulumi Python SDK and of pulumi-policy that preflight relies on, in one place.

Preflight runs the program in-process under the SDK's mocks and drives the policy pack through pulumi-policy's
own analyzer servicer, so it leans on names neither package promises to keep. Each one is re-exported here
under a public-looking name, with the version it was checked against; the rest of preflight imports them from
here only. tests/preflight/engine/test_sdk.py pins each to the installed SDK, so an upgrade that moves one fails
in that test, naming the surface and the preflight module that needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import pulumi
import pulumi_policy.policy as _policy_module

# Checked against pulumi 3.272.0.
from pulumi.runtime import proto  # the analyzer protos and enforcement levels: checks/policy_runner.py
from pulumi.runtime.mocks import MockMonitor  # subclassed by engine/mocks.py's RecordingMonitor
from pulumi.runtime.proto.resource_pb2 import RegisterResourceResponse  # what RecordingMonitor answers
from pulumi.runtime.rpc import _special_resource_sig, _special_secret_sig, _special_sig_key
from pulumi.runtime.settings import get_project, get_stack  # the running program's, for engine URNs
from pulumi.runtime.stack import run_pulumi_func  # runs the program as the language host does
from pulumi.runtime.sync_await import _sync_await

# Checked against pulumi-policy 1.21.0.
from pulumi_policy.policy import _PolicyAnalyzerServicer

PULUMI_VERSION = "3.272.0"
PULUMI_POLICY_VERSION = "1.21.0"

sync_await = _sync_await  # drive a coroutine to completion on the SDK's event loop
PolicyAnalyzerServicer = _PolicyAnalyzerServicer  # the object PolicyPack puts behind its gRPC server

# The SDK's wire markers (pulumi/runtime/rpc.py): the key of a special value, a secret's and a resource's.
SPECIAL_SIG_KEY: str = _special_sig_key
SECRET_SIG: str = _special_secret_sig
RESOURCE_SIG: str = _special_resource_sig


def _once_per_object(convert: Callable[[Any], Any], cache: dict[int, tuple[Any, Any]]) -> Callable[[Any], Any]:
    def converted(value: Any, *args: Any) -> Any:
        if args:  # another form of the call (remediation's deserialize_properties(props, True)): not shared
            return convert(value, *args)
        if id(value) not in cache:
            cache[id(value)] = (value, convert(value))  # the value is kept, so its id is not reused meanwhile
        return cache[id(value)][1]

    return converted


def _once_per_content(convert: Callable[[Any], Any], cache: dict[int, tuple[Any, Any]]) -> Callable[[Any], Any]:
    """``convert`` of a protobuf message, shared by every message of the same content: a resource's properties
    arrive in its AnalyzeRequest and again in the AnalyzeStackRequest, copies whose maps iterate in different orders.
    Deterministic bytes (map entries sorted) are equal for equal values; the shared dict keeps the first message's
    key order, which means nothing on the wire (the engine, in Go, sends a Struct's entries in no set order)."""
    by_content: dict[tuple[str, bytes], Any] = {}

    def by_bytes(message: Any) -> Any:
        content = (message.DESCRIPTOR.full_name, message.SerializeToString(deterministic=True))
        if content not in by_content:
            by_content[content] = convert(message)
        return by_content[content]

    return _once_per_object(by_bytes, cache)


class _JsonFormat(ModuleType):
    """google.protobuf.json_format as pulumi_policy.policy sees it, with MessageToDict once per message content."""

    def __init__(self, cache: dict[int, tuple[Any, Any]]):
        super().__init__("json_format")
        self.MessageToDict = _once_per_content(_policy_module.json_format.MessageToDict, cache)

    def __getattr__(self, name: str) -> Any:
        return getattr(_policy_module.json_format, name)


@contextmanager
def properties_converted_once() -> Iterator[None]:
    """While the block runs, pulumi-policy's analyzer converts each resource's properties (protobuf -> dict ->
    unknown-checking proxy) once, not once per policy and again for the stack policies: the proxies are read-only
    Mappings and Sequences, so every policy sees the same values, the very same objects (policies/derived_once.py
    derives what several stack policies need once on that identity). A plan with Kueue's CRDs (1.5 MB) otherwise
    spends seconds re-converting them for each of the pack's policies."""
    names = ("json_format", "deserialize_properties", "unknown_checking_proxy")
    saved = {name: getattr(_policy_module, name) for name in names}
    caches: dict[str, dict[int, tuple[Any, Any]]] = {name: {} for name in names}
    _policy_module.json_format = _JsonFormat(caches["json_format"])  # type: ignore[assignment]
    for name in names[1:]:
        setattr(_policy_module, name, _once_per_object(saved[name], caches[name]))
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(_policy_module, name, value)


def root_stack_outputs() -> dict[str, Any]:
    """The program's exports: the `outputs` of the SDK's (private) root Stack resource."""
    return pulumi.runtime.get_root_resource().outputs


__all__ = [
    "PULUMI_POLICY_VERSION",
    "PULUMI_VERSION",
    "RESOURCE_SIG",
    "SECRET_SIG",
    "SPECIAL_SIG_KEY",
    "MockMonitor",
    "PolicyAnalyzerServicer",
    "RegisterResourceResponse",
    "get_project",
    "get_stack",
    "properties_converted_once",
    "proto",
    "root_stack_outputs",
    "run_pulumi_func",
    "sync_await",
]
