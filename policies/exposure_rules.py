"""Resource rules for what the internet can reach: the nodes' addresses and the cluster's control plane.

Each rule is one function ``(args, report_violation)``; the first docstring line becomes the policy's
description, the rest says why. Values unknown during preview are skipped, never reported.
"""

from __future__ import annotations

from pulumi_policy import ReportViolation, ResourceValidationArgs

from components.facts.gke import CLUSTER_TYPE, NODE_POOL_TYPE
from policies.props import is_unknown, lookup


def nodes_private(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Nodes have no public address (private nodes on the cluster, not turned off by a pool).

    A node with a public address is one firewall mistake from the internet, and the accelerator nodes run
    privileged code. Private nodes reach Google APIs through Private Google Access and the rest through
    Cloud NAT (docs/cloud-facts.md: private nodes).
    """
    if args.resource_type == CLUSTER_TYPE:
        private = lookup(args.props, "privateClusterConfig.enablePrivateNodes")
        if not is_unknown(private) and private is not True:
            shown = "unset" if private is None else repr(private)
            report_violation(
                f"cluster '{args.name}': privateClusterConfig.enablePrivateNodes is {shown}; nodes would get "
                "public addresses.",
                None,
            )
    elif args.resource_type == NODE_POOL_TYPE and lookup(args.props, "networkConfig.enablePrivateNodes") is False:
        report_violation(f"pool '{args.name}': networkConfig.enablePrivateNodes is false; its nodes are public.", None)
