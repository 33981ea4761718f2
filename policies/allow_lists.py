"""Allow-lists of workloads, as the pack config names them: `Kind/namespace/name`.

Kind, namespace and name together: a list that named only `kube-system/nccl-rdma-installer` would let any kind
of object with that name (a privileged Pod or Job beside the DaemonSet) through. The defaults are the host-level
workloads the stack runs on purpose, each an accepted risk (docs/security.md: accepted risks), and each is
exempt only in its shape (components/facts/host_workloads.py): its name with another image, host path, host
namespace, privileged container, capability or a mounted token is judged as any other workload.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import PolicyConfigSchema, ResourceValidationArgs

from components.facts.host_workloads import HOST_NAMESPACES, HOST_WORKLOADS, HostWorkload
from policies.props import is_true, is_unknown, items, lookup
from policies.workloads import containers, kind_of, namespace_of, object_name, pod_templates

HOST_LEVEL_WORKLOADS = tuple(HOST_WORKLOADS)
WORKLOAD_PATTERN = "^[A-Za-z]+/[a-z0-9-]+/[a-z0-9.-]+$"


def workload_ref(kind: str, props: Any, fallback: str) -> str:
    """`Kind/namespace/name`, how the pack config names a workload."""
    return f"{kind}/{namespace_of(props)}/{object_name(props, fallback)}"


def unlisted_workload(args: ResourceValidationArgs, allow_list: str) -> tuple[str, str] | None:
    """(kind, Kind/namespace/name) of a Kubernetes object the pack config's `allow_list` does not name; None for
    anything else (not Kubernetes, or listed). The list defaults to the host-level workloads."""
    kind = kind_of(args.resource_type)
    if kind is None:
        return None
    workload = workload_ref(kind, args.props, args.name)
    if workload not in args.get_config().get(allow_list, list(HOST_LEVEL_WORKLOADS)):
        return kind, workload
    shape = HOST_WORKLOADS.get(workload)
    outside = outside_shape(shape, kind, args.props) if shape else []
    return (kind, f"{workload}, outside its shape ({'; '.join(outside)})") if outside else None


def outside_shape(shape: HostWorkload, kind: str, props: Any) -> list[str]:
    """What the object does that its host-level shape does not: an exemption covers the shape, not the name.
    A value a preview does not know yet is judged once known."""
    outside = []
    for template in pod_templates(kind, props):
        spec = template.spec
        outside += [
            f"{field}"
            for field in HOST_NAMESPACES
            if field not in shape.host_namespaces and is_true(lookup(spec, field))
        ]
        paths = [lookup(volume, "hostPath.path") for volume in items(spec, "volumes") if lookup(volume, "hostPath")]
        outside += [
            f"hostPath {path}" for path in paths if not is_unknown(path) and path not in shape.host_paths.values()
        ]
        outside += _containers_outside(shape, spec)
        account, token = lookup(spec, "serviceAccountName"), lookup(spec, "automountServiceAccountToken")
        if not is_unknown(account) and account != shape.service_account:
            outside.append(f"service account {account!r}")
        if not shape.api_token and not is_unknown(token) and token is not False:
            outside.append("its API token mounted")
    return outside


def _containers_outside(shape: HostWorkload, spec: Any) -> list[str]:
    outside = []
    for container in containers(spec):
        name, image = lookup(container, "name"), lookup(container, "image")
        if not is_unknown(image) and image not in shape.images:
            outside.append(f"image {image!r} in container {name!r}")
        if is_true(lookup(container, "securityContext.privileged")) and name not in shape.privileged_containers:
            outside.append(f"container {name!r} privileged")
        if items(container, "securityContext.capabilities.add"):
            outside.append(f"container {name!r} adds capabilities")
    return outside


def workload_list_config(key: str, allowed: str, default: tuple[str, ...] = HOST_LEVEL_WORKLOADS) -> PolicyConfigSchema:
    """A list of Kind/namespace/name workloads the pack config may replace; by default the host-level ones."""
    return PolicyConfigSchema(
        properties={
            key: {
                "type": "array",
                "items": {"type": "string", "pattern": WORKLOAD_PATTERN},
                "default": list(default),
                "description": f"Kind/namespace/name of workloads that may {allowed}.",
            }
        }
    )
