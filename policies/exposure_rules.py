"""Resource rules for what the internet can reach: the nodes' addresses, the cluster's control plane, Ray's ports.

Each rule is one function ``(args, report_violation)``; the first docstring line becomes the policy's
description, the rest says why. Values unknown during preview are skipped, never reported.
"""

from __future__ import annotations

from pulumi_policy import ReportViolation, ResourceValidationArgs

from components.facts.gke import CLUSTER_TYPE, NODE_POOL_TYPE, RAY_HEAD_PORTS
from policies.addresses import admits_the_internet, share_shown
from policies.props import as_number, entries, is_true, is_unknown, items, lookup
from policies.workloads import RAY_KINDS, containers, kind_of, object_name, pod_templates, ray_cluster_spec


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


def control_plane_not_open(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The control plane's public IP endpoint, if any, admits only named ranges, never the whole internet.

    An open endpoint leaves the API server one stolen credential or one API-server flaw from anyone. Close it
    (privateClusterConfig.enablePrivateEndpoint) and use the IAM-checked DNS endpoint, or list the ranges in
    masterAuthorizedNetworksConfig without 0.0.0.0/0 and without Google Cloud's public addresses (any VM's). Ranges
    count together: 0.0.0.0/1 + 128.0.0.0/1 is the whole internet too (policies/addresses.py).
    """
    if args.resource_type != CLUSTER_TYPE:
        return
    closed = lookup(args.props, "privateClusterConfig.enablePrivateEndpoint")
    if is_unknown(closed) or closed is True:
        return
    authorized = lookup(args.props, "masterAuthorizedNetworksConfig")
    if is_unknown(authorized):
        return
    where = f"cluster '{args.name}'"
    if authorized is None:
        report_violation(
            f"{where}: the public IP endpoint admits every address (no masterAuthorizedNetworksConfig).", None
        )
        return
    if is_true(lookup(args.props, "masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled")):
        report_violation(f"{where}: the public IP endpoint admits Google Cloud's public addresses (any VM's).", None)
    cidrs = [lookup(block, "cidrBlock") for block in items(args.props, "masterAuthorizedNetworksConfig.cidrBlocks")]
    if admits_the_internet(cidrs):
        shown = ", ".join(cidr for cidr in cidrs if isinstance(cidr, str))
        report_violation(f"{where}: the public IP endpoint admits {shown}: {share_shown(cidrs)}.", None)


def public_endpoint_names_its_ranges(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """A public IP endpoint lists the ranges it is public for.

    With no range it admits nobody from outside Google's network: kubectl, Pulumi and CI already use the DNS
    endpoint, so the public IP endpoint only widens what can be attacked. Set
    trainyard:cluster.authorizedNetworks, or publicEndpoint: false.
    """
    if args.resource_type != CLUSTER_TYPE or lookup(args.props, "privateClusterConfig.enablePrivateEndpoint"):
        return
    blocks = lookup(args.props, "masterAuthorizedNetworksConfig.cidrBlocks")
    if lookup(args.props, "masterAuthorizedNetworksConfig") is not None and not is_unknown(blocks) and not blocks:
        report_violation(
            f"cluster '{args.name}': the public IP endpoint admits no range (authorizedNetworks is empty).", None
        )


def pools_secure_boot(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Every node pool boots with secure boot and integrity monitoring.

    Secure boot refuses a boot chain or kernel module that is not signed, so a privileged pod cannot leave a
    rootkit that survives the node's reboot. GKE leaves it off unless asked; its own GPU drivers are signed,
    so only a self-compiled driver needs it off (docs/cloud-facts.md: shielded nodes).
    """
    if args.resource_type != NODE_POOL_TYPE:
        return
    for setting in ("enableSecureBoot", "enableIntegrityMonitoring"):
        value = lookup(args.props, f"nodeConfig.shieldedInstanceConfig.{setting}")
        if is_unknown(value) or value is True or (setting == "enableIntegrityMonitoring" and value is None):
            continue
        shown = "unset (GKE default false)" if value is None else repr(value)
        report_violation(f"pool '{args.name}': nodeConfig.shieldedInstanceConfig.{setting} is {shown}.", None)


SERVICE_TYPES_OUTSIDE = ("LoadBalancer", "NodePort")


def ray_ports_stay_in_the_cluster(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Ray's ports (dashboard and job API 8265, client 10001, GCS 6379) are never exposed outside the cluster.

    Whoever reaches the job API runs code as the Ray cluster's service account. A LoadBalancer or NodePort Service
    (one the stack writes, or the head Service KubeRay makes from headGroupSpec.serviceType) opens the port to the
    VPC or every node's address; a hostPort opens it on the node. `kubectl port-forward` or the in-cluster Service
    reaches it instead.
    """
    kind = kind_of(args.resource_type)
    if kind == "Service":
        service_type = lookup(args.props, "spec.type")
        selects_ray = any(key.startswith("ray.io/") for key in entries(args.props, "spec.selector"))
        if service_type in SERVICE_TYPES_OUTSIDE:
            for port in items(args.props, "spec.ports"):
                if _is_ray_port(lookup(port, "port"), selects_ray) or _is_ray_port(
                    lookup(port, "targetPort"), selects_ray
                ):
                    report_violation(
                        f"Service '{object_name(args.props, args.name)}' is a {service_type} on Ray's port "
                        f"{_shown(port)}.",
                        None,
                    )
    elif kind in RAY_KINDS:
        service_type = lookup(ray_cluster_spec(kind, args.props), "headGroupSpec.serviceType")
        if service_type in SERVICE_TYPES_OUTSIDE:
            report_violation(
                f"{kind} '{object_name(args.props, args.name)}': headGroupSpec.serviceType {service_type} exposes "
                "the Ray head's ports outside the cluster.",
                None,
            )
    if kind is None:
        return
    for template in pod_templates(kind, args.props):
        for container in containers(template.spec):
            for port in items(container, "ports"):
                host_port = lookup(port, "hostPort")
                if _is_ray_port(host_port) or (host_port and _is_ray_port(lookup(port, "containerPort"))):
                    report_violation(
                        f"{kind} '{object_name(args.props, args.name)}' {template.where}: container "
                        f"'{lookup(container, 'name')}' opens Ray's port {lookup(port, 'containerPort')!s} on the "
                        f"node (hostPort {host_port}).",
                        None,
                    )


def _is_ray_port(value: object, by_name: bool = False) -> bool:
    """One of Ray's port numbers; a port name (dashboard, client, gcs-server) only where `by_name` (a Service that
    selects Ray's pods): another app's port may share the name."""
    if isinstance(value, str):
        return (by_name and value in RAY_HEAD_PORTS) or (value.isdigit() and int(value) in RAY_HEAD_PORTS.values())
    number = as_number(value)
    return number is not None and int(number) in RAY_HEAD_PORTS.values()


def _shown(port: object) -> str:
    number, target = lookup(port, "port"), lookup(port, "targetPort")
    return f"{as_number(number):g}" if _is_ray_port(number) else str(target)
