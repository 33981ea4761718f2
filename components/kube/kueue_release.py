"""Kueue's release, object by object (components/facts/kueue_release.py says what trainyard sets in it).

Applied in the order a cluster accepts: the CRDs and the namespace, then the objects in it (account, RBAC,
configuration, certificate Secret, Services), then the controller and what calls it (webhooks, the visibility
APIService), so a webhook never points at a controller that cannot exist yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.facts.kueue_release import configured_release
from components.kube.manifests import kube_object

# Each stage waits for every earlier one; a kind not named here is in the middle stage.
_STAGES = (
    ("CustomResourceDefinition", "Namespace"),
    (),
    ("Deployment",),
    ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "APIService"),
)


def _stage(kind: str) -> int:
    return next((index for index, stage in enumerate(_STAGES) if kind in stage), 1)


@dataclass(frozen=True)
class KueueReleaseArgs:
    version: str
    namespace: str
    manager_config: dict[str, Any]  # trainyard's settings over the release's configuration file
    feature_gates: dict[str, bool]
    node_selector: dict[str, str]  # where the controller runs (the system pool)
    provider: k8s.Provider


class KueueRelease(pulumi.ComponentResource):
    """`resources`: every object of the release, for what must wait for Kueue."""

    resources: list[pulumi.Resource]

    def __init__(self, name: str, args: KueueReleaseArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:k8s:KueueRelease", name, None, opts)
        opts_parent = opts.parent if opts else None
        objects = configured_release(
            args.version, args.namespace, args.manager_config, args.feature_gates, args.node_selector
        )
        self.resources: list[pulumi.Resource] = []
        for index in range(len(_STAGES)):
            earlier = list(self.resources)
            opts = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=earlier)
            self.resources += [
                kube_object(o, self._options(o, opts, opts_parent)) for o in objects if _stage(o["kind"]) == index
            ]
        self.register_outputs({"version": args.version, "objects": len(self.resources)})

    @staticmethod
    def _options(obj: dict[str, Any], opts: pulumi.ResourceOptions, kueue: pulumi.Resource | None):
        """The namespace was the Kueue component's own child before the release was applied object by object:
        an alias keeps it (and everything in it) rather than replacing it."""
        if obj["kind"] != "Namespace" or kueue is None:
            return opts
        return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(aliases=[pulumi.Alias(parent=kueue)]))
