"""Run the policy pack offline on a plan, exactly as the Pulumi engine would, and report verdicts.

The pack's policies are served by pulumi_policy's own analyzer servicer (the object ``PolicyPack`` puts
behind its gRPC server); we call its ``Configure``, ``Analyze`` and ``AnalyzeStack`` methods directly with
engine-shaped protobuf requests built from the plan. Constructing ``PolicyPack`` itself would start a gRPC
server and block forever. Pack config is reconciled like the CLI does for ``--policy-pack-config``: schema
defaults, then ``all``, then per-policy values, then validated against each policy's schema.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import jsonschema
from google.protobuf import json_format, struct_pb2

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from components.config.checks import did_you_mean
from policies import rules
from preflight.engine.sdk import PolicyAnalyzerServicer, properties_converted_once, proto

LEVELS = {proto.MANDATORY: "mandatory", proto.ADVISORY: "advisory", proto.REMEDIATE: "mandatory"}
_LEVEL_VALUES = {
    "advisory": proto.ADVISORY,
    "mandatory": proto.MANDATORY,
    "remediate": proto.REMEDIATE,
    "disabled": proto.DISABLED,
}


class PackConfigError(ValueError):
    """The pack config names an unknown policy, an invalid level, or a value its schema refuses."""


class PolicyRunError(RuntimeError):
    """A rule raised while analysing a resource (a bug in the pack, not a violation)."""


@dataclass(frozen=True)
class Verdict:
    policy: str
    level: str
    urn: str
    message: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


def new_servicer() -> PolicyAnalyzerServicer:
    arguments = rules.pack_arguments()
    return PolicyAnalyzerServicer(
        arguments["name"], rules.PACK_VERSION, arguments["policies"], arguments["enforcement_level"]
    )


# ---- pack config, reconciled like the CLI's ReconcilePolicyPackConfig --------------------------


def load_pack_config(path: Path) -> dict[str, Any]:
    """A --policy-pack-config JSON file."""
    try:
        text = path.read_text()
    except OSError as error:
        raise PackConfigError(f"{path}: cannot be read ({error.strerror}) (allowed: a JSON file)") from None
    except UnicodeDecodeError as error:
        raise PackConfigError(f"{path}: not valid JSON: {error}") from None
    return parse_pack_config(text, str(path))


def parse_pack_config(text: str, source: str) -> dict[str, Any]:
    """A pack config's JSON text; ``source`` names where it came from in a refusal."""
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise PackConfigError(f"{source}: not valid JSON: {error}") from None
    if not isinstance(config, dict):
        raise PackConfigError(f"{source}: is a JSON {type(config).__name__} (allowed: an object of policy names)")
    return config


def pack_config_for_stack(stack: str, root: Path = ROOT) -> dict[str, Any]:
    """``policies/config.<stack>.json`` when it exists, else no config (every default)."""
    path = root / "policies" / f"config.{stack}.json"
    return load_pack_config(path) if path.exists() else {}


def _split(name: str, value: Any) -> tuple[str | None, dict[str, Any]]:
    if isinstance(value, str):
        return _level(name, value), {}
    if not isinstance(value, Mapping):
        raise PackConfigError(f"pack config '{name}': {value!r} must be an enforcement level or an object")
    properties = dict(value)
    level = properties.pop("enforcementLevel", None)
    return (_level(name, level) if level is not None else None), properties


def _level(name: str, level: Any) -> str:
    if level not in _LEVEL_VALUES:
        raise PackConfigError(
            f"pack config '{name}'.enforcementLevel: {level!r} is not a level (allowed: {', '.join(_LEVEL_VALUES)})"
        )
    return level


def reconcile_config(info: Any, pack_config: Mapping[str, Any]) -> proto.ConfigureAnalyzerRequest:
    known = {policy.name: policy for policy in info.policies}
    unknown = sorted(set(pack_config) - set(known) - {"all"})
    if unknown:
        hint = did_you_mean(unknown[0], list(known))
        raise PackConfigError(f"pack config names unknown policies {unknown} ({hint}policies: {', '.join(known)})")
    all_level, _ = _split("all", pack_config["all"]) if "all" in pack_config else (None, {})
    request = proto.ConfigureAnalyzerRequest()
    for name, policy in known.items():
        schema = json_format.MessageToDict(policy.configSchema) if policy.HasField("configSchema") else {}
        properties = {k: v["default"] for k, v in schema.get("properties", {}).items() if "default" in v}
        level = all_level or LEVELS.get(policy.enforcementLevel, "advisory")
        if name in pack_config:
            given_level, given = _split(name, pack_config[name])
            level = given_level or level
            _refuse_unknown_settings(name, list(schema.get("properties", {})), given)
            properties.update(given)
        _validate(name, schema, properties)
        entry = request.policyConfig[name]
        entry.enforcementLevel = _LEVEL_VALUES[level]
        entry.properties.update(properties)
    return request


def _refuse_unknown_settings(name: str, settings: list[str], given: Mapping[str, Any]) -> None:
    """A misspelt setting (`maxUsdPerHr`) would leave the policy at its default without a word: the CLI's schema
    check lets unknown keys through, preflight does not."""
    for key in given:
        if key not in settings:
            allowed = ", ".join(["enforcementLevel", *settings])
            hint = did_you_mean(key, settings)
            raise PackConfigError(f"pack config {name}.{key}: is not a setting of {name} ({hint}allowed: {allowed})")


def _validate(name: str, schema: Mapping[str, Any], properties: Mapping[str, Any]) -> None:
    full = {"type": "object", **{k: v for k, v in schema.items() if k in ("properties", "required")}}
    errors = sorted(jsonschema.Draft7Validator(full).iter_errors(dict(properties)), key=lambda e: list(e.path))
    if errors:
        problems = "; ".join(f"{'.'.join(map(str, e.path)) or name}: {e.message}" for e in errors)
        raise PackConfigError(f"pack config '{name}': {problems}")


# ---- engine-shaped requests --------------------------------------------------------------------


def _struct(inputs: Mapping[str, Any] | None) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(dict(inputs or {}))
    return struct


def _provider(
    resource: Mapping[str, Any], by_urn: Mapping[str, Mapping[str, Any]], inputs: Mapping[str, struct_pb2.Struct]
) -> proto.AnalyzerProviderResource | None:
    # A provider reference is "<provider urn>::<provider id>".
    reference = resource.get("provider") or ""
    provider = by_urn.get(reference.rsplit("::", 1)[0]) if "::" in reference else None
    if provider is None:
        return None
    return proto.AnalyzerProviderResource(
        type=provider["type"], properties=inputs[provider["urn"]], urn=provider["urn"], name=provider["name"]
    )


def _options(resource: Mapping[str, Any]) -> proto.AnalyzerResourceOptions:
    return proto.AnalyzerResourceOptions(parent=resource.get("parent") or "")


def _inputs_by_urn(resources: Iterable[Mapping[str, Any]]) -> dict[str, struct_pb2.Struct]:
    """Each resource's inputs as the engine sends them, built once for its AnalyzeRequest, the AnalyzeStackRequest
    and the requests of the resources it is the provider of (a request copies them in C, faster than a rebuild)."""
    return {resource["urn"]: _struct(resource.get("inputs")) for resource in resources}


def analyze_requests(
    plan_json: Mapping[str, Any], inputs: Mapping[str, struct_pb2.Struct] | None = None
) -> list[proto.AnalyzeRequest]:
    resources = plan_json.get("resources", [])
    by_urn = {resource["urn"]: resource for resource in resources}
    inputs = _inputs_by_urn(resources) if inputs is None else inputs
    return [
        proto.AnalyzeRequest(
            type=r["type"],
            properties=inputs[r["urn"]],
            urn=r["urn"],
            name=r["name"],
            options=_options(r),
            provider=_provider(r, by_urn, inputs),
        )
        for r in resources
        if r.get("custom", True)
    ]


def analyze_stack_request(
    plan_json: Mapping[str, Any], inputs: Mapping[str, struct_pb2.Struct] | None = None
) -> proto.AnalyzeStackRequest:
    resources = plan_json.get("resources", [])
    by_urn = {resource["urn"]: resource for resource in resources}
    inputs = _inputs_by_urn(resources) if inputs is None else inputs
    return proto.AnalyzeStackRequest(
        resources=[
            proto.AnalyzerResource(
                type=r["type"],
                properties=inputs[r["urn"]],
                urn=r["urn"],
                name=r["name"],
                options=_options(r),
                provider=_provider(r, by_urn, inputs),
                parent=r.get("parent") or "",
                dependencies=list(r.get("dependencies") or []),
            )
            for r in resources
        ]
    )


# ---- evaluation --------------------------------------------------------------------------------


def _verdict(diagnostic: Any, urn: str) -> Verdict:
    message = diagnostic.message
    if diagnostic.description and message.startswith(diagnostic.description + "\n"):
        message = message[len(diagnostic.description) + 1 :]
    return Verdict(
        diagnostic.policyName, LEVELS.get(diagnostic.enforcementLevel, "advisory"), diagnostic.urn or urn, message
    )


def evaluate(plan_json: Mapping[str, Any], pack_config: Mapping[str, Any] | None = None) -> list[Verdict]:
    """Every violation the pack reports on the plan: resource policies, then stack policies."""
    servicer = new_servicer()
    servicer.Configure(reconcile_config(servicer.GetAnalyzerInfo(None, None), pack_config or {}), None)
    verdicts: list[Verdict] = []
    inputs = _inputs_by_urn(plan_json.get("resources", []))
    with properties_converted_once():
        for request in analyze_requests(plan_json, inputs):
            try:
                response = servicer.Analyze(request, None)
            except Exception as error:
                raise PolicyRunError(f"policy pack raised on {request.urn}: {error!r}") from error
            verdicts += [_verdict(d, request.urn) for d in response.diagnostics]
        try:
            response = servicer.AnalyzeStack(analyze_stack_request(plan_json, inputs), None)
        except Exception as error:
            raise PolicyRunError(f"policy pack raised on the stack: {error!r}") from error
    verdicts += [_verdict(d, "") for d in response.diagnostics]
    return sorted(verdicts, key=lambda v: (v.level != "mandatory", v.policy, v.urn, v.message))


def has_mandatory(verdicts: Iterable[Verdict]) -> bool:
    return any(verdict.level == "mandatory" for verdict in verdicts)


def _short(urn: str) -> str:
    return urn.rsplit("::", 1)[-1] if urn else "(stack)"


# The stack config key behind a policy whose verdict one key decides, for the report's "change ..." line (the
# pack runs without the config, under the Pulumi CLI too, so it cannot name it itself).
POLICY_KEYS = {
    "accelerator-vpc-mtu": "trainyard:network.mtu",
    "allowed-regions": "gcp:region",
    "cluster-deletion-protection-off": "trainyard:cluster.deletionProtection",
    "public-endpoint-names-its-ranges": "trainyard:cluster.authorizedNetworks",
    "cost-within-budget": "trainyard:tpuSlices[].count and trainyard:gpuPools[].maxNodes, or the pack's maxUsdPerHour",
    "runs-within-budget": "the job's steps or maxRunDurationSeconds, or the pack's maxUsdPerRun",
}


def render_table(verdicts: list[Verdict]) -> str:
    """Plain-text verdicts: level, policy and resource on one line, the message indented under it."""
    if not verdicts:
        return f"policy pack '{rules.PACK_NAME}': {len(rules.POLICIES)} policies, no violations"
    width_policy = max(len(v.policy) for v in verdicts)
    lines = [f"{'level':<10} {'policy':<{width_policy}} resource (message below)"]
    for verdict in verdicts:
        lines.append(f"{verdict.level:<10} {verdict.policy:<{width_policy}} {_short(verdict.urn)}")
        lines += [f"{'':<11}{line}" for line in verdict.message.splitlines()]
        if verdict.policy in POLICY_KEYS:
            lines.append(f"{'':<11}(change {POLICY_KEYS[verdict.policy]})")
    mandatory = sum(v.level == "mandatory" for v in verdicts)
    lines.append(f"{mandatory} mandatory, {len(verdicts) - mandatory} advisory violation(s)")
    return "\n".join(lines)
