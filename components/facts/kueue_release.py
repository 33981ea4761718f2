"""Kueue's release as objects: the vendored manifests of a pinned tag, with trainyard's settings applied.

The release is applied object by object (components/kube/kueue_release.py), so preflight, the policy pack and the
diff see the controller's Deployment, its RBAC, webhooks, Services and CRDs as `pulumi up` creates them. The
manifests are Kueue's own (components/facts/releases/, written by gen_kueue.py with the pinned sha256); what
trainyard sets is stated here once and read back by preflight from the same objects: the manager configuration
(the ConfigMap's file, on top of the release's own) and the feature gates (the controller's --feature-gates, as
the Helm chart's controllerManager.featureGates renders them).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

import yaml

from components.facts.releases import ReleaseError, pinned_text, sources

KUEUE_REPO = "kubernetes-sigs/kueue"
RELEASE_NAMESPACE = "kueue-system"  # the namespace the release's manifests name
MANAGER_CONFIG_MAP = "kueue-manager-config"
MANAGER_CONFIG_FILE = "controller_manager_config.yaml"
CONTROLLER = "kueue-controller-manager"  # the Deployment, and its ServiceAccount
FEATURE_GATES_FLAG = "--feature-gates="
CONFIG_HASH_ANNOTATION = "trainyard/manager-config-sha256"
# Pod set names Kueue gives a RayJob's own pods, which a worker group (a slice group's name) must not take: its
# webhook refuses a worker group named "head" ('"head" is reserved for the head group', pkg/controller/jobs/
# raycluster/common.go); the submitter's pod set (K8sJobMode, KubeRay's default) shares the Workload's podSets, a
# list keyed by name, so a second "submitter" makes a Workload the API server refuses (rayjob_controller.go).
HEAD_POD_SET, SUBMITTER_POD_SET = "head", "submitter"
RAY_POD_SET_NAMES = {
    HEAD_POD_SET: '"head" is reserved for the head group',
    SUBMITTER_POD_SET: "is the RayJob submitter's pod set",
}
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def vendored_versions() -> list[str]:
    return sorted(key for key, pin in sources().items() if pin["repo"] == KUEUE_REPO)


@cache
def _release_text(version: str) -> str:
    if version not in vendored_versions():
        raise ReleaseError(f"Kueue {version} is not vendored (vendored: {', '.join(vendored_versions())})")
    return pinned_text(version, "python -m components.facts.releases.gen_kueue")


def release_objects(version: str) -> list[dict[str, Any]]:
    """The release's objects in its manifest order (CRDs and the namespace first), each a fresh copy."""
    return [document for document in yaml.load_all(_release_text(version), Loader=_LOADER) if document]


def _in_namespace(obj: dict[str, Any], namespace: str) -> None:
    """What kustomize's `namespace:` does: the release's namespace, wherever an object names it."""
    metadata = obj["metadata"]
    if obj["kind"] == "Namespace" and metadata["name"] == RELEASE_NAMESPACE:
        metadata["name"] = namespace
    if metadata.get("namespace") == RELEASE_NAMESPACE:
        metadata["namespace"] = namespace
    spec = obj.get("spec") or {}
    conversion = ((spec.get("conversion") or {}).get("webhook") or {}).get("clientConfig") or {}
    services = [spec.get("service") or {}, conversion.get("service") or {}]
    services += [(webhook.get("clientConfig") or {}).get("service") or {} for webhook in obj.get("webhooks", [])]
    for reference in [*services, *obj.get("subjects", [])]:
        if reference.get("namespace") == RELEASE_NAMESPACE:
            reference["namespace"] = namespace
    for webhook in obj.get("webhooks", []):  # the pod webhooks leave the controller's own namespace alone
        for expression in (webhook.get("namespaceSelector") or {}).get("matchExpressions", []):
            expression["values"] = [namespace if v == RELEASE_NAMESPACE else v for v in expression.get("values", [])]


def manager_config(release_config: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """The release's configuration file with trainyard's top-level settings in place of its own."""
    return {**release_config, **copy.deepcopy(dict(settings))}


def _configure_controller(deployment: dict[str, Any], gates: Mapping[str, bool], node_selector: Mapping[str, str]):
    pod = deployment["spec"]["template"]["spec"]
    (manager,) = [c for c in pod["containers"] if c["name"] == "manager"]
    manager["args"] = [a for a in manager.get("args", []) if not a.startswith(FEATURE_GATES_FLAG)]
    if gates:  # as the chart renders controllerManager.featureGates
        manager["args"].append(FEATURE_GATES_FLAG + ",".join(f"{n}={str(on).lower()}" for n, on in gates.items()))
    if node_selector:
        pod["nodeSelector"] = dict(node_selector)


def configured_release(
    version: str,
    namespace: str,
    settings: Mapping[str, Any],
    gates: Mapping[str, bool],
    node_selector: Mapping[str, str],
) -> list[dict[str, Any]]:
    """The release's objects in `namespace`, its manager configuration with `settings`, the controller started
    with `gates` and placed by `node_selector`."""
    objects = release_objects(version)
    config_text = ""
    for obj in objects:
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == MANAGER_CONFIG_MAP:
            release_config = yaml.load(obj["data"][MANAGER_CONFIG_FILE], Loader=_LOADER) or {}
            config_text = yaml.safe_dump(manager_config(release_config, settings), sort_keys=False)
            obj["data"][MANAGER_CONFIG_FILE] = config_text
    for obj in objects:
        if obj["kind"] == "Deployment" and obj["metadata"]["name"] == CONTROLLER:
            _configure_controller(obj, gates, node_selector)
            # The controller reads its configuration once, at start, from a subPath mount that never sees an
            # update: a changed configuration must restart it, as the chart's checksum annotations do.
            template = obj["spec"]["template"].setdefault("metadata", {})
            template.setdefault("annotations", {})[CONFIG_HASH_ANNOTATION] = hashlib.sha256(
                config_text.encode()
            ).hexdigest()[:16]
        _in_namespace(obj, namespace)
    return objects


# ---- read back from a plan's objects (preflight, the diff) ---------------------------------------------


def _named(objects: Iterable[Mapping[str, Any]], kind: str, name: str) -> Mapping[str, Any] | None:
    return next((o for o in objects if o.get("kind") == kind and (o.get("metadata") or {}).get("name") == name), None)


def planned_manager_config(objects: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The manager configuration the release's ConfigMap carries; None without the release."""
    config_map = _named(objects, "ConfigMap", MANAGER_CONFIG_MAP)
    if config_map is None:
        return None
    return yaml.load((config_map.get("data") or {}).get(MANAGER_CONFIG_FILE) or "{}", Loader=_LOADER) or {}


def controller_container(objects: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    deployment = _named(objects, "Deployment", CONTROLLER)
    if deployment is None:
        return None
    containers = ((deployment.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or []
    return next((c for c in containers if c.get("name") == "manager"), None)


def planned_feature_gates(objects: Iterable[Mapping[str, Any]]) -> dict[str, bool]:
    """The gates the controller is started with (its --feature-gates flag), as Kueue parses the flag."""
    container = controller_container(objects) or {}
    gates: dict[str, bool] = {}
    for argument in container.get("args") or []:
        if str(argument).startswith(FEATURE_GATES_FLAG):
            for pair in str(argument).removeprefix(FEATURE_GATES_FLAG).split(","):
                name, _, value = pair.partition("=")
                gates[name.strip()] = value.strip().lower() == "true"
    return gates
