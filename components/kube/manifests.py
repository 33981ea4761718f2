"""Upstream manifests as ordinary resources: one typed pulumi_kubernetes resource per object.

A helm.v4.Chart or yaml.v2.ConfigGroup is expanded by the provider plugin, out of sight of preflight and of the
policy pack until `pulumi up`. An object made here is a resource like any other: its inputs are the object as
written (camelCase, verbatim), and its Pulumi name is the object's `namespace/name` (or `name`), as
yaml.ConfigFile names them.
"""

from __future__ import annotations

import re
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
}


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
