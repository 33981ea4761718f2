"""The namespace every job runs in, and the Kubernetes service account they run as.

The service account is the Workload Identity principal that `infra.storage` grants the bucket to; no
Google service account or key exists.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s


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
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.namespace),
            opts=opts_moved,
        )
        self.service_account = k8s.core.v1.ServiceAccount(
            args.service_account,
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.service_account, namespace=self.namespace.metadata.name),
            opts=opts_moved,
        )
        self.register_outputs({"namespace": self.namespace.metadata.name})
