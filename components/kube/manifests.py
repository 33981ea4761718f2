"""Upstream manifests as ordinary resources: one typed pulumi_kubernetes resource per object.

A helm.v4.Chart or yaml.v2.ConfigGroup is expanded by the provider plugin, out of sight of preflight and of the
policy pack until `pulumi up`. An object made here is a resource like any other: its inputs are the object as
written (camelCase, verbatim), and its Pulumi name is the object's `namespace/name` (or `name`), as
yaml.ConfigFile names them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

# API group -> the SDK module that holds its kinds.
_SDK_MODULES = {
    "": k8s.core,
    "apps": k8s.apps,
    "rbac.authorization.k8s.io": k8s.rbac,
    "apiextensions.k8s.io": k8s.apiextensions,
    "admissionregistration.k8s.io": k8s.admissionregistration,
    "apiregistration.k8s.io": k8s.apiregistration,
    "resource.k8s.io": k8s.resource,
}
# Each stage waits for every earlier one; a kind not named here is in the middle stage. The order a cluster accepts:
# the CRDs and the namespace, then the objects in it (accounts, RBAC, configuration, Services), then the controllers
# and what calls them (webhooks, APIServices), so a webhook never points at a controller that cannot exist yet.
_STAGES = (
    ("CustomResourceDefinition", "Namespace"),
    (),
    ("Deployment", "DaemonSet"),
    ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "APIService"),
)


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def resource_name(obj: dict[str, Any]) -> str:
    metadata = obj["metadata"]
    return f"{metadata['namespace']}/{metadata['name']}" if metadata.get("namespace") else metadata["name"]


def kube_object(obj: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """The typed resource for `obj` (an unknown group or kind raises KeyError/AttributeError: vendor its module)."""
    group, _, version = obj["apiVersion"].rpartition("/")
    resource_class = getattr(getattr(_SDK_MODULES[group], version), obj["kind"])
    fields = {_snake(key): value for key, value in obj.items() if key not in ("apiVersion", "kind")}
    return resource_class(resource_name(obj), opts=opts, **fields)


def _stage(kind: str) -> int:
    return next((index for index, stage in enumerate(_STAGES) if kind in stage), 1)


def apply_in_stages(
    objects: list[dict[str, Any]],
    options: Callable[[dict[str, Any], list[pulumi.Resource]], pulumi.ResourceOptions],
) -> list[pulumi.Resource]:
    """One resource per object of a release, each stage depending on every earlier one; `options(obj, earlier)`
    gives an object's options (its parent and provider, `depends_on=earlier`)."""
    resources: list[pulumi.Resource] = []
    for index in range(len(_STAGES)):
        earlier = list(resources)
        resources += [kube_object(o, options(o, earlier)) for o in objects if _stage(o["kind"]) == index]
    return resources
