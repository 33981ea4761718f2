"""preflight/engine/sdk.py: each private Pulumi SDK and pulumi-policy surface preflight relies on, pinned to the
installed SDKs. An upgrade that moves or reshapes one fails here, naming it and the module that needs it."""

from __future__ import annotations

import importlib
import inspect
from importlib.metadata import version
from typing import Any

import pytest

PLAN, MOCKS, POLICY = "preflight/engine/plan.py", "preflight/engine/mocks.py", "preflight/checks/policy_runner.py"
LOAD, TOKENS = "components/config/load.py", "components/config/tokens.py"

# (module, name, method or "", parameter names exactly as the SDK spells them, who depends on it)
SIGNATURES = [
    ("pulumi.runtime.sync_await", "_sync_await", "", ["awaitable"], PLAN),
    ("pulumi.runtime.stack", "run_pulumi_func", "", ["func"], PLAN),
    ("pulumi.runtime.settings", "get_project", "", [], MOCKS),
    ("pulumi.runtime.settings", "get_stack", "", [], MOCKS),
    ("pulumi.runtime.mocks", "MockMonitor", "__init__", ["self", "mocks"], MOCKS),
    ("pulumi.runtime.mocks", "MockMonitor", "make_urn", ["self", "parent", "type_", "name"], MOCKS),
    ("pulumi.runtime.mocks", "MockMonitor", "RegisterResource", ["self", "request"], MOCKS),
    ("pulumi_policy.policy", "_PolicyAnalyzerServicer", "GetAnalyzerInfo", ["self", "_request", "_context"], POLICY),
    ("pulumi_policy.policy", "_PolicyAnalyzerServicer", "Configure", ["self", "request", "_context"], POLICY),
    ("pulumi_policy.policy", "_PolicyAnalyzerServicer", "Analyze", ["self", "request", "_context"], POLICY),
    ("pulumi_policy.policy", "_PolicyAnalyzerServicer", "AnalyzeStack", ["self", "request", "_context"], POLICY),
    ("pulumi.runtime.config", "get_config_env", "", [], LOAD),
    ("pulumi.runtime.config", "get_config", "", ["k"], TOKENS),
    ("pulumi.runtime.config", "is_config_secret", "", ["k"], TOKENS),
]

# (module, message, path of message fields down to the one checked, the fields preflight reads or writes, who)
REQUEST = ["type", "name", "parent", "custom", "object", "provider", "dependencies", "aliases", "importId"]
RESOURCE_FIELDS = ["type", "properties", "urn", "name", "options", "provider"]
MESSAGES = [
    ("resource_pb2", "RegisterResourceRequest", "", REQUEST + ["retainOnDelete", "deleteBeforeReplace"], MOCKS),
    ("resource_pb2", "RegisterResourceRequest", "aliases", ["urn", "spec"], MOCKS),
    ("resource_pb2", "RegisterResourceRequest", "aliases.spec", ["noParent", "parentUrn", "type", "name"], MOCKS),
    ("resource_pb2", "RegisterResourceResponse", "", ["urn", "id", "object"], MOCKS),
    ("", "AnalyzerInfo", "", ["policies"], POLICY),
    ("", "PolicyInfo", "", ["name", "configSchema", "enforcementLevel"], POLICY),
    ("", "ConfigureAnalyzerRequest", "", ["policyConfig"], POLICY),
    ("", "PolicyConfig", "", ["enforcementLevel", "properties"], POLICY),
    ("", "AnalyzeRequest", "", RESOURCE_FIELDS, POLICY),
    ("", "AnalyzeStackRequest", "", ["resources"], POLICY),
    ("", "AnalyzerResource", "", RESOURCE_FIELDS + ["parent", "dependencies"], POLICY),
    ("", "AnalyzerProviderResource", "", ["type", "properties", "urn", "name"], POLICY),
    ("", "AnalyzerResourceOptions", "", ["parent"], POLICY),
    ("", "AnalyzeResponse", "", ["diagnostics"], POLICY),
    ("", "AnalyzeDiagnostic", "", ["policyName", "enforcementLevel", "urn", "message", "description"], POLICY),
]

# preflight/engine/sdk.py's name -> (module, the SDK's name, who uses it)
REEXPORTS = {
    "sync_await": ("pulumi.runtime.sync_await", "_sync_await", PLAN),
    "run_pulumi_func": ("pulumi.runtime.stack", "run_pulumi_func", PLAN),
    "get_project": ("pulumi.runtime.settings", "get_project", MOCKS),
    "get_stack": ("pulumi.runtime.settings", "get_stack", MOCKS),
    "MockMonitor": ("pulumi.runtime.mocks", "MockMonitor", MOCKS),
    "RegisterResourceResponse": ("pulumi.runtime.proto.resource_pb2", "RegisterResourceResponse", MOCKS),
    "SPECIAL_SIG_KEY": ("pulumi.runtime.rpc", "_special_sig_key", MOCKS),
    "SECRET_SIG": ("pulumi.runtime.rpc", "_special_secret_sig", MOCKS),
    "RESOURCE_SIG": ("pulumi.runtime.rpc", "_special_resource_sig", MOCKS),
    "proto": ("pulumi.runtime", "proto", POLICY),
    "PolicyAnalyzerServicer": ("pulumi_policy.policy", "_PolicyAnalyzerServicer", POLICY),
}


def surface(module: str, name: str, user: str) -> Any:
    try:
        found = importlib.import_module(module)
    except ImportError as error:
        pytest.fail(f"{module} no longer imports ({error}); {user} needs {module}.{name}")
    assert hasattr(found, name), f"{module}.{name} is gone from the installed SDK; {user} relies on it"
    return getattr(found, name)


def test_installed_sdks_are_the_versions_sdk_py_was_checked_against():
    from preflight.engine import sdk

    for package, checked in (("pulumi", sdk.PULUMI_VERSION), ("pulumi_policy", sdk.PULUMI_POLICY_VERSION)):
        assert version(package) == checked, (
            f"{package} {version(package)} is installed, preflight/engine/sdk.py was checked against {checked}: "
            "run this test file, fix what it reports, then update the version in sdk.py"
        )


@pytest.mark.parametrize(("module", "name", "method", "params", "user"), SIGNATURES)
def test_signature(module: str, name: str, method: str, params: list[str], user: str):
    found = surface(module, name, user)
    if method:
        assert method in vars(found), f"{module}.{name}.{method} is gone; {user} calls or overrides it"
        found = vars(found)[method]
    actual = list(inspect.signature(found).parameters)
    where = f"{module}.{name}{'.' + method if method else ''}"
    assert actual == params, f"{where} takes {actual}, {user} relies on {params}"


@pytest.mark.parametrize(("module", "message", "path", "fields", "user"), MESSAGES)
def test_message_fields(module: str, message: str, path: str, fields: list[str], user: str):
    descriptor = surface(f"pulumi.runtime.proto{'.' + module if module else ''}", message, user).DESCRIPTOR
    for step in filter(None, path.split(".")):
        assert step in descriptor.fields_by_name, f"{descriptor.full_name} has no {step}; {user} reads it"
        descriptor = descriptor.fields_by_name[step].message_type
    missing = [field for field in fields if field not in descriptor.fields_by_name]
    assert not missing, f"{descriptor.full_name} has no {missing}; {user} reads or writes them"


def test_policy_servicer_constructor_and_levels():
    init = inspect.signature(surface("pulumi_policy.policy", "_PolicyAnalyzerServicer", POLICY).__init__).parameters
    leading, where = ["self", "name", "version", "policies", "enforcement_level"], f"_PolicyAnalyzerServicer{[*init]}"
    assert list(init)[:5] == leading, f"{where}: {POLICY} passes {leading[1:]}, in that order"
    rest = list(init.values())[5:]
    assert all(p.default is not p.empty for p in rest), f"{where}: {POLICY} passes only {leading[1:]}"
    levels = [surface("pulumi.runtime.proto", level, POLICY) for level in ("MANDATORY", "ADVISORY", "REMEDIATE")]
    assert len({*levels, surface("pulumi.runtime.proto", "DISABLED", POLICY)}) == 4, f"{POLICY} maps each level"


def test_runtime_state_preflight_reads():
    monitor = surface("pulumi.runtime.mocks", "MockMonitor", MOCKS)(mocks := object())
    assert monitor.mocks is mocks, f"MockMonitor keeps its mocks as .mocks; {MOCKS}'s RecordingMonitor reads it"
    stack = surface("pulumi.runtime.stack", "Stack", PLAN)
    assert "outputs" in inspect.get_annotations(stack), f"{PLAN} reads the root Stack's exports as .outputs"
    keywords = {"project", "stack", "preview", "monitor"}
    setter = inspect.signature(surface("pulumi.runtime", "set_mocks", PLAN)).parameters
    assert keywords <= set(setter), f"set_mocks takes {[*setter]}; {PLAN} passes it {sorted(keywords)}"
    config = surface("pulumi.runtime.config", "CONFIG", LOAD)
    assert isinstance(config.get(), dict), f"{LOAD} lists every config key from pulumi.runtime.config.CONFIG.get()"


def test_sdk_py_reexports_these_very_objects():
    from preflight.engine import sdk

    for name, (module, original, user) in REEXPORTS.items():
        assert getattr(sdk, name) is surface(module, original, user), f"sdk.{name} is not {module}.{original}"


def test_properties_converted_once_changes_no_verdict_and_converts_each_message_once(dev_plan, monkeypatch):
    """The pack sees the same values whether each policy converts the properties anew or all share one conversion,
    on the dev plan and on one with violations (the mandatory token rule fires once its bindings are gone)."""
    import copy

    import pulumi_policy.policy as policy_module

    from preflight.checks import policy_runner
    from preflight.engine import sdk

    plan = dev_plan.to_json()
    broken = copy.deepcopy(plan)
    broken["resources"] = [r for r in broken["resources"] if not r["type"].endswith("RoleBinding")]
    shared = [policy_runner.evaluate(p) for p in (plan, broken)]
    converted_once = sdk.properties_converted_once
    monkeypatch.setattr(sdk, "properties_converted_once", _as_the_sdk_does)
    monkeypatch.setattr(policy_runner, "properties_converted_once", _as_the_sdk_does)
    assert [policy_runner.evaluate(p) for p in (plan, broken)] == shared
    assert any(v.level == "mandatory" for v in shared[1])
    calls = []
    converted = policy_module.deserialize_properties
    with converted_once():
        assert policy_module.deserialize_properties is not converted
        first = policy_module.json_format.MessageToDict(policy_runner.analyze_requests(plan)[0].properties)
        calls += [policy_module.deserialize_properties(first), policy_module.deserialize_properties(first)]
    assert calls[0] is calls[1] and policy_module.deserialize_properties is converted


def _as_the_sdk_does():
    import contextlib

    return contextlib.nullcontext()


def test_properties_converted_once_shares_a_resources_properties_between_its_requests(dev_plan):
    """A resource's properties travel in its AnalyzeRequest and again in the AnalyzeStackRequest: one conversion
    serves both (the same content), and another resource's properties get their own."""
    import pulumi_policy.policy as policy_module
    from google.protobuf import json_format

    from preflight.checks import policy_runner
    from preflight.engine import sdk

    plan = dev_plan.to_json()
    first, second = policy_runner.analyze_requests(plan)[:2]
    in_stack = {r.urn: r for r in policy_runner.analyze_stack_request(plan).resources}
    with sdk.properties_converted_once():
        convert = policy_module.json_format.MessageToDict
        shared = convert(first.properties)
        assert convert(in_stack[first.urn].properties) is shared
        assert shared == json_format.MessageToDict(first.properties)
        assert convert(second.properties) is not shared
        assert convert(second.properties) == json_format.MessageToDict(second.properties)
    assert policy_module.json_format is json_format
