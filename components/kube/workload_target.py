"""Where workloads land: the cluster's provider, the workload namespace, the Kueue queue, what must exist first."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pulumi
import pulumi_kubernetes as k8s

from components.facts.gke import QUEUE_LABEL


@dataclass(frozen=True)
class WorkloadTarget:
    provider: k8s.Provider
    namespace: k8s.core.v1.Namespace
    queue_name: str
    ready: tuple[pulumi.Resource, ...] = ()

    @property
    def namespace_name(self) -> pulumi.Output[str]:
        return self.namespace.metadata.name

    @property
    def queue_labels(self) -> dict[str, str]:
        return {QUEUE_LABEL: self.queue_name}

    def after(self, *resources: pulumi.Resource) -> WorkloadTarget:
        """The same target, once `resources` exist too."""
        return replace(self, ready=(*self.ready, *resources))

    def options(self, parent: pulumi.Resource) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=parent, provider=self.provider, depends_on=[self.namespace, *self.ready])
