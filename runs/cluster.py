"""The one module that talks to a live cluster: the Kubernetes API through the official Python client and the user's
kubeconfig (`pulumi stack output getCredentials` prints the command that writes it), and a Ray head's job API.

Everything else in runs/ is pure functions over objects as the API returns them, tested on the shapes Kueue, KubeRay
and the cluster autoscaler write; the calls here are listed in docs/operations.md ("Day 2: first real cluster") as
the checks to run once against a real cluster.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

from runs.objects import READ_KINDS

CONNECT_TIMEOUT_S = 30


class ClusterError(RuntimeError):
    """The cluster cannot be reached or refused a call: one line, with what to do."""


def connect(context: str | None = None) -> Any:
    """A dynamic client on the kubeconfig's current (or named) context."""
    from kubernetes import client, config
    from kubernetes.dynamic import DynamicClient

    try:
        config.load_kube_config(context=context)
        return DynamicClient(client.ApiClient())
    except (config.ConfigException, OSError, client.ApiException) as error:
        raise ClusterError(
            f"no cluster: {error} (run the stack's getCredentials output: `pulumi stack output getCredentials`)"
        ) from None


def read_objects(api: Any, namespace: str) -> list[dict[str, Any]]:
    """Every object `trainyard job` reads, as one list (the shape `kubectl get ... -o yaml` dumps): kinds the cluster
    does not serve (no KubeRay, no ProvisioningRequest API) are skipped."""
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    found: list[dict[str, Any]] = []
    for api_version, kind, namespaced in READ_KINDS:
        try:
            resource = api.resources.get(api_version=api_version, kind=kind)
        except ResourceNotFoundError:
            continue
        listed = resource.get(namespace=namespace if namespaced else None).to_dict()
        found += [{"apiVersion": api_version, "kind": kind, **item} for item in listed.get("items") or []]
    return found


def pending_workloads(api: Any, cluster_queue: str) -> list[dict[str, Any]]:
    """Kueue's visibility API: the ClusterQueue's pending workloads with their positions (empty where not served)."""
    path = f"/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{cluster_queue}/pendingworkloads"
    from kubernetes.client import ApiException

    try:
        answer = api.request("GET", path)
    except ApiException:  # the visibility API is an APIService that may be off; positions are then unknown
        return []
    return [dict(item) for item in (answer.to_dict() if hasattr(answer, "to_dict") else answer).get("items") or []]


def apply(api: Any, objects: list[Mapping[str, Any]], field_manager: str) -> list[str]:
    """Server-side apply each object in order; the objects applied, as `Kind namespace/name`."""
    applied = []
    for manifest in objects:
        metadata = manifest["metadata"]
        resource = api.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
        resource.server_side_apply(
            body=dict(manifest), name=metadata["name"], namespace=metadata.get("namespace"), field_manager=field_manager
        )
        applied.append(f"{manifest['kind']} {metadata.get('namespace')}/{metadata['name']}")
    return applied


def adopt(api: Any, dependents: list[Mapping[str, Any]], owner: Mapping[str, Any], field_manager: str) -> list[str]:
    """Apply each dependent again with `owner` (applied already) as its owner, so that deleting the owner (a cancel,
    a Job's TTL) deletes them too; the objects applied, as `Kind namespace/name`."""
    metadata = owner["metadata"]
    resource = api.resources.get(api_version=owner["apiVersion"], kind=owner["kind"])
    uid = resource.get(name=metadata["name"], namespace=metadata.get("namespace")).metadata.uid
    reference = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": metadata["name"], "uid": uid}
    owned = [{**d, "metadata": {**d["metadata"], "ownerReferences": [reference]}} for d in dependents]
    return apply(api, owned, field_manager)


def delete(api: Any, manifest: Mapping[str, Any], grace_seconds: int) -> None:
    """Delete with the pods' grace period (the trainers checkpoint on SIGTERM) and the pods with it."""
    metadata = manifest["metadata"]
    resource = api.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
    body = {"propagationPolicy": "Foreground", "gracePeriodSeconds": grace_seconds}
    resource.delete(name=metadata["name"], namespace=metadata.get("namespace"), body=body)


def pod_log_lines(namespace: str, pod: str, follow: bool) -> Iterator[str]:
    from kubernetes import client

    response = client.CoreV1Api().read_namespaced_pod_log(pod, namespace, follow=follow, _preload_content=False)
    for line in response.stream():
        yield line.decode(errors="replace")


def ray_job_logs(base_url: str, submission_id: str, token: str | None, headers: Mapping[str, str] = {}) -> str:
    """A Ray job's logs from its head's job API (`GET /api/jobs/<id>/logs`), with the cluster's Ray token when Ray's
    token auth is on. `base_url` is the dashboard: http://127.0.0.1:8265 locally, the API server's service proxy
    for a RayJob's head in a cluster."""
    url = f"{base_url.rstrip('/')}/api/jobs/{urllib.parse.quote(submission_id)}/logs"
    request = urllib.request.Request(
        url, headers={**headers, **({"Authorization": f"Bearer {token}"} if token else {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=CONNECT_TIMEOUT_S) as answer:
            return str(json.loads(answer.read().decode())["logs"])
    except urllib.error.HTTPError as error:
        raise ClusterError(f"Ray job {submission_id}: the head answered {error.code} {error.reason}") from None
    except urllib.error.URLError as error:
        raise ClusterError(
            f"Ray job {submission_id}: the head at {base_url} cannot be reached ({error.reason})"
        ) from None
