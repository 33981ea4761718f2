"""Allow-lists of workloads, as the pack config names them: `Kind/namespace/name`.

Kind, namespace and name together: a list that named only `kube-system/nccl-rdma-installer` would let any kind
of object with that name (a privileged Pod or Job beside the DaemonSet) through. The defaults are the host-level
workloads the stack runs on purpose, each an accepted risk (docs/security.md: accepted risks).
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import PolicyConfigSchema, ResourceValidationArgs

from components.facts.gke import NCCL_INSTALLER_NAME, NCCL_INSTALLER_NAMESPACE
from policies.workloads import kind_of, namespace_of, object_name

# The NCCL gIB installer copies the plugin onto every A4 node: hostPID, hostNetwork, a privileged init container
# and writable host paths, as Google's own installer DaemonSet has them.
HOST_LEVEL_WORKLOADS = (f"DaemonSet/{NCCL_INSTALLER_NAMESPACE}/{NCCL_INSTALLER_NAME}",)
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
    if workload in args.get_config().get(allow_list, list(HOST_LEVEL_WORKLOADS)):
        return None
    return kind, workload


def workload_list_config(key: str, allowed: str) -> PolicyConfigSchema:
    """A list of Kind/namespace/name workloads the pack config may replace; by default the host-level ones."""
    return PolicyConfigSchema(
        properties={
            key: {
                "type": "array",
                "items": {"type": "string", "pattern": WORKLOAD_PATTERN},
                "default": list(HOST_LEVEL_WORKLOADS),
                "description": f"Kind/namespace/name of workloads that may {allowed}.",
            }
        }
    )
