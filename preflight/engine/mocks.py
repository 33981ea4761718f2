"""Pulumi mocks that answer like the cloud would, and a monitor that records what the engine would receive."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any

import pulumi
from google.protobuf import json_format, struct_pb2

from components.facts import gke
from components.facts.images import IMAGE_BUILD_TYPE
from preflight.engine.sdk import (
    RESOURCE_SIG,
    SECRET_SIG,
    SPECIAL_SIG_KEY,
    MockMonitor,
    RegisterResourceResponse,
    get_project,
    get_stack,
)

MOCK_PROJECT_NUMBER = "123456789012"
MOCK_ENDPOINT = "203.0.113.10"  # TEST-NET-3: never a real address
SECRET_PLACEHOLDER = "[secret]"


def dns_endpoint_config(cluster_inputs: dict[str, Any], name: str) -> dict[str, Any]:
    """The cluster's endpoints with the DNS name GKE gives it (`gke-<id>-<project number>.<region>.gke.goog`)."""
    endpoints = cluster_inputs.get("controlPlaneEndpointsConfig") or {}
    region = str(cluster_inputs.get("location", "mock-region-a")).rsplit("-", 1)[0]
    cluster_id = hashlib.sha256(name.encode()).hexdigest()[:32]
    dns = {
        **endpoints.get("dnsEndpointConfig", {}),
        "endpoint": f"gke-{cluster_id}-{MOCK_PROJECT_NUMBER}.{region}.gke.goog",
    }
    return {**endpoints, "dnsEndpointConfig": dns}


class CloudMocks(pulumi.runtime.Mocks):
    """Echo every input back as output (so dependent inputs resolve) and fill what the cloud computes."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        resource_id, computed = self.computed(args.typ, args.name, args.inputs)
        return resource_id, {**args.inputs, **computed}

    def computed(self, type_: str, name: str, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The resource's id and the outputs the cloud would add to (or fill in) its inputs."""
        physical_name = inputs.get("name") or name
        outputs: dict[str, Any] = {"name": physical_name}
        outputs["selfLink"] = inputs.get("selfLink", f"https://mock.invalid/{type_}/{physical_name}")
        if type_ == gke.CLUSTER_TYPE:
            outputs["endpoint"] = MOCK_ENDPOINT
            ca = base64.b64encode(b"mock cluster CA").decode()
            outputs["masterAuth"] = {**inputs.get("masterAuth", {}), "clusterCaCertificate": ca}
            outputs["controlPlaneEndpointsConfig"] = dns_endpoint_config(inputs, physical_name)
        if type_ == gke.SERVICE_ACCOUNT_TYPE and inputs.get("accountId"):
            email = f"{inputs['accountId']}@{inputs.get('project', 'mock-project')}.iam.gserviceaccount.com"
            outputs.update(email=email, member=f"serviceAccount:{email}")
        if type_ == IMAGE_BUILD_TYPE and inputs.get("tags"):
            # What the push would report: a digest, here one derived from the tag (itself a content hash).
            outputs["digest"] = "sha256:" + hashlib.sha256(inputs["tags"][0].encode()).hexdigest()
            outputs["ref"] = f"{inputs['tags'][0]}@{outputs['digest']}"
        if type_.startswith("kubernetes:") and isinstance(inputs.get("metadata"), dict):
            outputs["metadata"] = {"name": name, **inputs["metadata"]}
        return f"{physical_name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        if args.token == "gcp:organizations/getProject:getProject":
            project_id = args.args.get("projectId", "mock-project")
            return {"number": MOCK_PROJECT_NUMBER, "projectId": project_id, "name": project_id}
        return {}


@dataclass
class Registration:
    urn: str
    type: str
    name: str
    parent: str | None
    custom: bool
    provider: str | None
    dependencies: list[str]
    inputs: dict[str, Any]
    aliases: list[str] = field(default_factory=list)  # earlier URNs the engine treats as this resource
    retain_on_delete: bool = False  # a delete (or the old half of a replacement) leaves the cloud object alone
    delete_before_replace: bool = False
    import_id: str = ""  # the cloud object the engine adopts instead of creating one
    ignore_changes: list[str] = field(default_factory=list)  # input paths an update leaves as they are
    replace_on_changes: list[str] = field(default_factory=list)  # input paths whose change replaces the resource


def masked(value: Any) -> Any:
    """A secret with its values hidden and its shape kept, so a secret map still schema-checks."""
    if isinstance(value, dict) and value.get(SPECIAL_SIG_KEY) is None:
        return {key: masked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [masked(item) for item in value]
    return SECRET_PLACEHOLDER


def engine_value(value: Any) -> Any:
    """Wire values as the engine hands them to providers and policies, with secrets masked."""
    if isinstance(value, dict):
        if value.get(SPECIAL_SIG_KEY) == SECRET_SIG:
            return masked(value.get("value"))
        if value.get(SPECIAL_SIG_KEY) == RESOURCE_SIG:
            return value.get("urn")
        return {key: engine_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [engine_value(item) for item in value]
    return value


class RecordingMonitor(MockMonitor):
    """Records each registration with engine URNs (the mock's URNs drop the parent type chain)."""

    registrations: list[Registration]

    mocks: CloudMocks

    def __init__(self, mocks_impl: CloudMocks):
        super().__init__(mocks_impl)
        self.registrations = []

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        qualified = type_
        if parent:
            parent_type = parent.split("::")[2]
            if parent_type != "pulumi:pulumi:Stack":
                qualified = f"{parent_type}${type_}"
        return f"urn:pulumi:{get_stack()}::{get_project()}::{qualified}::{name}"

    def alias_urns(self, request: Any) -> list[str]:
        """The aliases' URNs: a spec leaves out what stays the same (name, type, parent) as the resource."""
        urns = []
        for alias in request.aliases:
            if alias.urn:
                urns.append(alias.urn)
                continue
            spec = alias.spec
            parent = "" if spec.noParent else (spec.parentUrn or request.parent)
            urns.append(self.make_urn(parent, spec.type or request.type, spec.name or request.name))
        return sorted(urns)

    def RegisterResource(self, request: Any) -> Any:
        """Echo the wire inputs back as outputs, plus what the cloud computes. Working on the protobuf directly
        skips the SDK mock's deserialize/serialize round trip, most of the per-resource cost of a plan."""
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type == "pulumi:pulumi:Stack":
            return RegisterResourceResponse(urn=urn)
        wire_inputs = json_format.MessageToDict(request.object)
        resource_id, computed = self.mocks.computed(request.type, request.name, wire_inputs)
        state = struct_pb2.Struct()
        state.CopyFrom(request.object)
        state.update(computed)
        self.registrations.append(
            Registration(
                urn=urn,
                type=request.type,
                name=request.name,
                parent=request.parent or None,
                custom=bool(request.custom),
                provider=_provider_urn(request.provider, request.type, request.custom),
                dependencies=sorted(request.dependencies),
                inputs=engine_value(wire_inputs),
                aliases=self.alias_urns(request),
                retain_on_delete=bool(request.retainOnDelete),
                delete_before_replace=bool(request.deleteBeforeReplace),
                import_id=request.importId,
                ignore_changes=list(request.ignoreChanges),
                replace_on_changes=list(request.replaceOnChanges),
            )
        )
        return RegisterResourceResponse(urn=urn, id=resource_id, object=state)


def _provider_urn(reference: str, type_: str, custom: bool) -> str | None:
    """An explicit provider's URN, or the engine's default provider for the resource's package."""
    if reference:
        return reference.rsplit("::", 1)[0]
    if not custom or type_.startswith("pulumi:providers:"):
        return None
    package = type_.split(":", 1)[0]
    return f"urn:pulumi:{get_stack()}::{get_project()}::pulumi:providers:{package}::default"
