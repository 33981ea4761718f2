"""Every private surface of the Pulumi Python SDK and of pulumi-policy that preflight relies on, in one place.

Preflight runs the program in-process under the SDK's mocks and drives the policy pack through pulumi-policy's
own analyzer servicer, so it leans on names neither package promises to keep. Each one is re-exported here
under a public-looking name, with the version it was checked against; the rest of preflight imports them from
here only. tests/preflight/engine/test_sdk.py pins each to the installed SDK, so an upgrade that moves one fails
in that test, naming the surface and the preflight module that needs it.
"""

from __future__ import annotations

from typing import Any

import pulumi

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
    "proto",
    "root_stack_outputs",
    "run_pulumi_func",
    "sync_await",
]
