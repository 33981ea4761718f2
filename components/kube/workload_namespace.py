"""The namespace every job runs in, and the Kubernetes service account they run as.

The service account is the Workload Identity principal that `infra.storage` grants the bucket to; no
Google service account or key exists.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.config.models import StackConfig


class WorkloadNamespace(pulumi.ComponentResource):
    namespace: k8s.core.v1.Namespace
    service_account: k8s.core.v1.ServiceAccount

    def __init__(
        self,
        name: str,
        config: StackConfig,
        provider: k8s.Provider,
        former_parent: pulumi.Resource,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("trainyard:k8s:WorkloadNamespace", name, None, opts)
        storage = config.storage
        # Both were children of the Storage component; the alias keeps their URNs, so `pulumi up` moves them
        # instead of deleting the namespace (and every job in it) and creating it again.
        opts_moved = pulumi.ResourceOptions(
            parent=self, provider=provider, aliases=[pulumi.Alias(parent=former_parent)]
        )
        self.namespace = k8s.core.v1.Namespace(
            storage.namespace,
            metadata=k8s.meta.v1.ObjectMetaArgs(name=storage.namespace),
            opts=opts_moved,
        )
        self.service_account = k8s.core.v1.ServiceAccount(
            storage.service_account,
            metadata=k8s.meta.v1.ObjectMetaArgs(name=storage.service_account, namespace=self.namespace.metadata.name),
            opts=opts_moved,
        )
        self.register_outputs({"namespace": self.namespace.metadata.name})
