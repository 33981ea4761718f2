"""The namespace every job runs in, and the Kubernetes service account they run as.

The service account is the Workload Identity principal that `infra.storage` grants the bucket to; no
Google service account or key exists.

Pod Security Admission warns about (kubectl, the API's response) and audits every pod of the namespace that
breaks the `restricted` profile, at the cluster's Kubernetes version. It enforces nothing: the FSDP trainer mounts
the host's driver and gIB libraries read-only (hostPath, which even `baseline` refuses) and KubeRay's submitter
pod runs without a securityContext. The workload pod admission policy (pod_admission.py) refuses what matters at
admission instead: privilege, host namespaces, writable or unlisted host paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import pulumi
import pulumi_kubernetes as k8s

# https://kubernetes.io/docs/concepts/security/pod-security-admission/ (labels and modes).
POD_SECURITY_LABELS = MappingProxyType(
    {"pod-security.kubernetes.io/warn": "restricted", "pod-security.kubernetes.io/audit": "restricted"}
)


@dataclass(frozen=True)
class WorkloadNamespaceArgs:
    namespace: str
    service_account: str
    provider: k8s.Provider
    former_parent: pulumi.Resource  # where both objects were first created (kept by an alias)


class WorkloadNamespace(pulumi.ComponentResource):
    namespace: k8s.core.v1.Namespace
    service_account: k8s.core.v1.ServiceAccount

    def __init__(self, name: str, args: WorkloadNamespaceArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:k8s:WorkloadNamespace", name, None, opts)
        # Both were children of the Storage component; the alias keeps their URNs, so `pulumi up` moves them
        # instead of deleting the namespace (and every job in it) and creating it again.
        opts_moved = pulumi.ResourceOptions(
            parent=self, provider=args.provider, aliases=[pulumi.Alias(parent=args.former_parent)]
        )
        self.namespace = k8s.core.v1.Namespace(
            args.namespace,
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.namespace, labels=dict(POD_SECURITY_LABELS)),
            opts=opts_moved,
        )
        self.service_account = k8s.core.v1.ServiceAccount(
            args.service_account,
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.service_account, namespace=self.namespace.metadata.name),
            opts=opts_moved,
        )
        self.register_outputs({"namespace": self.namespace.metadata.name})
