"""Kueue's release, object by object (components/facts/kueue_release.py says what trainyard sets in it), in
the order a cluster accepts (components/kube/manifests.py `apply_in_stages`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.facts.kueue_release import configured_release
from components.kube.manifests import apply_in_stages


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

        def options(obj: dict[str, Any], earlier: list[pulumi.Resource]) -> pulumi.ResourceOptions:
            staged = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=earlier)
            return self._options(obj, staged, opts_parent)

        self.resources = apply_in_stages(objects, options)
        self.register_outputs({"version": args.version, "objects": len(self.resources)})

    @staticmethod
    def _options(obj: dict[str, Any], opts: pulumi.ResourceOptions, kueue: pulumi.Resource | None):
        """The namespace was the Kueue component's own child before the release was applied object by object:
        an alias keeps it (and everything in it) rather than replacing it."""
        if obj["kind"] != "Namespace" or kueue is None:
            return opts
        return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(aliases=[pulumi.Alias(parent=kueue)]))
