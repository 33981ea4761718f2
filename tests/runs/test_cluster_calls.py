"""runs/cluster.py's calls, against a recording stand-in for the Kubernetes dynamic client: no API server can run
on these machines (docs/operations.md lists the checks for the first real cluster). What is checked here is what
trainyard sends: server-side apply with its field manager, in order; a delete with the grace period; the kinds
read, with a kind the cluster does not serve skipped."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kubernetes.dynamic.exceptions import ResourceNotFoundError

from runs import cluster
from runs.objects import READ_KINDS


class Listed:
    def __init__(self, items: list[dict]):
        self.items = items

    def to_dict(self) -> dict[str, Any]:
        return {"items": self.items}


class Resource:
    def __init__(self, calls: list, kind: str, items: list[dict]):
        self.calls, self.kind, self.items = calls, kind, items

    def get(self, namespace: str | None = None, name: str | None = None) -> Listed | SimpleNamespace:
        if name is not None:
            self.calls.append(("get", self.kind, name))
            return SimpleNamespace(metadata=SimpleNamespace(uid=f"uid-of-{name}"))
        self.calls.append(("list", self.kind, namespace))
        return Listed(self.items)

    def server_side_apply(self, **kwargs: Any) -> None:
        self.calls.append(("apply", self.kind, kwargs))

    def delete(self, **kwargs: Any) -> None:
        self.calls.append(("delete", self.kind, kwargs))


class Resources:
    def __init__(self, calls: list, served: dict[str, list[dict]]):
        self.calls, self.served = calls, served

    def get(self, api_version: str, kind: str) -> Resource:
        if kind not in self.served:
            raise ResourceNotFoundError(f"No matches found for {api_version}/{kind}")
        return Resource(self.calls, kind, self.served[kind])


class Api:
    def __init__(self, served: dict[str, list[dict]]):
        self.calls: list = []
        self.resources = Resources(self.calls, served)


def test_submit_applies_each_object_server_side_as_trainyard_in_order():
    api = Api({"ConfigMap": [], "RayJob": []})
    objects = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "code", "namespace": "trainyard"}},
        {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "run-1", "namespace": "trainyard"}},
    ]
    assert cluster.apply(api, objects, "trainyard") == ["ConfigMap trainyard/code", "RayJob trainyard/run-1"]
    assert [(kind, call["name"], call["field_manager"]) for _, kind, call in api.calls] == [
        ("ConfigMap", "code", "trainyard"),
        ("RayJob", "run-1", "trainyard"),
    ]


def test_submit_makes_the_job_own_what_was_sent_for_it_alone():
    """Its Service and ComputeDomain get the applied Job (by uid) as owner, so a cancel or the Job's TTL deletes
    them with it."""
    api = Api({"Job": [], "Service": [], "ComputeDomain": []})
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "ft-1", "namespace": "trainyard"}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ft", "namespace": "trainyard"}}
    domain = {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "ft-nvlink", "namespace": "trainyard"},
        "spec": {"numNodes": 0},
    }
    assert cluster.adopt(api, [service, domain], job, "trainyard") == [
        "Service trainyard/ft",
        "ComputeDomain trainyard/ft-nvlink",
    ]
    assert api.calls[0] == ("get", "Job", "ft-1")
    applied = [call["body"] for verb, _, call in api.calls[1:] if verb == "apply"]
    reference = {"apiVersion": "batch/v1", "kind": "Job", "name": "ft-1", "uid": "uid-of-ft-1"}
    assert [body["metadata"]["ownerReferences"] for body in applied] == [[reference], [reference]]
    assert applied[1]["spec"] == {"numNodes": 0} and "ownerReferences" not in domain["metadata"]


def test_cancel_deletes_with_the_grace_period_and_the_pods_first():
    api = Api({"Job": []})
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "ft-1", "namespace": "trainyard"}}
    cluster.delete(api, job, 300)
    (call,) = api.calls
    assert call == (
        "delete",
        "Job",
        {
            "name": "ft-1",
            "namespace": "trainyard",
            "body": {"propagationPolicy": "Foreground", "gracePeriodSeconds": 300},
        },
    )


def test_read_lists_every_kind_served_and_skips_a_missing_api():
    workload = {"metadata": {"name": "job-ft-1-abcde"}}
    api = Api({kind: ([workload] if kind == "Workload" else []) for _, kind, _ in READ_KINDS if kind != "RayCluster"})
    objects = cluster.read_objects(api, "trainyard")
    assert objects == [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", **workload}]
    listed = {kind: namespace for _, kind, namespace in api.calls}
    assert "RayCluster" not in listed and listed["ClusterQueue"] is None and listed["Workload"] == "trainyard"
