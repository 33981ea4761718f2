"""Rules for what the internet can reach: the nodes' addresses, the cluster's control plane, Ray's ports, the routes
to a Ray head, and Ray's token.

Each rule is one function ``(args, report_violation)``; the first docstring line becomes the policy's
description, the rest says why. Values unknown during preview are skipped, never reported.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs, StackValidationArgs

from components.facts.gke import (
    CLUSTER_TYPE,
    NODE_POOL_TYPE,
    RAY_AUTH_MODE_ENV,
    RAY_HEAD_PORTS,
    RAY_NODE_TYPE_LABEL,
    RAY_TOKEN_AUTH,
)
from policies.addresses import admits_the_internet, share_shown
from policies.props import UNKNOWN, as_number, entries, is_true, is_unknown, items, lookup
from policies.workloads import (
    RAY_KINDS,
    containers,
    kind_of,
    namespace_of,
    object_name,
    patched_kind,
    pod_templates,
    ray_cluster_spec,
    ray_node_templates,
)


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

    Whoever reaches the job API runs code as the Ray cluster's service account. A LoadBalancer or NodePort Service,
    or one with externalIPs (one the stack writes, or the head Service KubeRay makes from headGroupSpec.serviceType
    and headService), opens the port to the VPC or every node's address; KubeRay's enableIngress puts the dashboard
    behind an Ingress; a hostPort opens it on the node. `kubectl port-forward` or the in-cluster Service reaches it
    instead.
    """
    kind = kind_of(args.resource_type)
    where = f"{kind} '{object_name(args.props, args.name)}'"
    if kind == "Service":
        outside = _outside(args.props)
        selects_ray = any(key.startswith("ray.io/") for key in entries(args.props, "spec.selector"))
        for port in items(args.props, "spec.ports") if outside else []:
            if _is_ray_port(lookup(port, "port"), selects_ray) or _is_ray_port(lookup(port, "targetPort"), selects_ray):
                report_violation(f"{where} {outside} on Ray's port {_shown(port)}.", None)
    elif kind in RAY_KINDS:
        head = lookup(ray_cluster_spec(kind, args.props), "headGroupSpec")
        service_type = lookup(head, "serviceType")
        if service_type in SERVICE_TYPES_OUTSIDE:
            report_violation(
                f"{where}: headGroupSpec.serviceType {service_type} exposes the Ray head's ports outside the cluster.",
                None,
            )
        if outside := _outside(lookup(head, "headService")):
            report_violation(f"{where}: headGroupSpec.headService {outside}, exposing the Ray head's ports.", None)
        if is_true(lookup(head, "enableIngress")):
            report_violation(f"{where}: headGroupSpec.enableIngress puts the Ray dashboard behind an Ingress.", None)
    if kind is None:
        return
    for template in pod_templates(kind, args.props):
        for container in containers(template.spec):
            for port in items(container, "ports"):
                host_port = lookup(port, "hostPort")
                if _is_ray_port(host_port) or (host_port and _is_ray_port(lookup(port, "containerPort"))):
                    report_violation(
                        f"{where} {template.where}: container '{lookup(container, 'name')}' opens Ray's port "
                        f"{lookup(port, 'containerPort')!s} on the node (hostPort {host_port}).",
                        None,
                    )


def _outside(service: Any) -> str | None:
    """How a Service (or a RayCluster's headService) is reached from outside the cluster, or None."""
    service_type = lookup(service, "spec.type")
    if service_type in SERVICE_TYPES_OUTSIDE:
        return f"is a {service_type}"
    addresses = [address for address in items(service, "spec.externalIPs") if isinstance(address, str)]
    return f"has externalIPs {', '.join(addresses)}" if addresses else None


def ray_requires_token_auth(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Every RayCluster, RayJob and RayService runs Ray with token authentication.

    Without the token, any pod or node that reaches the head's job API (8265) or GCS (6379) runs code as the Ray
    cluster's service account. KubeRay makes and hands out the token when authOptions.mode is token (unset means
    disabled); each Ray container also sets RAY_AUTH_MODE=token itself, so that Ray refuses to start without a token
    should the operator ignore authOptions (components/jobs/ray_workloads.py). KubeRay runs Ray in the first
    container of the head's and each worker group's pod.
    """
    kind = kind_of(args.resource_type)
    if kind not in RAY_KINDS:
        return
    where, spec = f"{kind} '{object_name(args.props, args.name)}'", ray_cluster_spec(kind, args.props)
    mode = UNKNOWN if is_unknown(spec) else lookup(spec, "authOptions.mode")
    if not is_unknown(mode) and mode != RAY_TOKEN_AUTH:
        shown = "unset (KubeRay: disabled)" if mode is None else repr(mode)
        report_violation(f"{where}: authOptions.mode is {shown}; Ray would take jobs without a token.", None)
    for template in ray_node_templates(kind, args.props):
        ray = next(iter(items(template.spec, "containers")), None)
        names = [lookup(entry, "name") for entry in items(ray, "env")]
        if ray is None or is_unknown(lookup(ray, "env")) or any(is_unknown(name) for name in names):
            continue
        stated = [entry for entry in items(ray, "env") if lookup(entry, "name") == RAY_AUTH_MODE_ENV]
        value = lookup(stated[-1], "value") if stated else None  # of two entries, the container gets the last
        if not is_unknown(value) and value != RAY_TOKEN_AUTH:
            shown = "unset" if not stated else repr(value)
            report_violation(
                f"{where} {template.where}: container '{lookup(ray, 'name')}' {RAY_AUTH_MODE_ENV} is {shown}, "
                f"must be '{RAY_TOKEN_AUTH}'.",
                None,
            )


# KubeRay names a RayCluster's (and a RayService's) head Service `<name>-head-svc`, keeping the suffix when it
# shortens a long name (ray-operator utils.GenerateHeadServiceName, CheckName); headService.metadata.name overrides.
HEAD_SERVICE_SUFFIX = "-head-svc"
ROUTE_KINDS = ("HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute")


def ray_head_not_routed(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """No Ingress or Gateway API route sends traffic to a Ray head's Service.

    An Ingress or a route puts a Service behind a load balancer or gateway that listens beyond the cluster, and the
    head's Service carries the job API: whoever reaches it runs code as the Ray cluster's service account. A
    Service of the stack is a head's when its selector picks the head (a ray.io/ label, and no node type but head); one
    the stack does not declare, when KubeRay makes it (`<cluster>-head-svc`, or a headService's name). Ray Serve has
    its own Service.
    """
    services = {_service_key(r.props, r.name): r.props for r in args.resources if kind_of(r.resource_type) == "Service"}
    named_heads = set()
    for resource in args.resources:
        kind = kind_of(resource.resource_type)
        if kind in RAY_KINDS:
            name = lookup(ray_cluster_spec(kind, resource.props), "headGroupSpec.headService.metadata.name")
            if isinstance(name, str):
                named_heads.add((namespace_of(resource.props), name))
    for resource in args.resources:
        kind = kind_of(resource.resource_type) or ""
        for namespace, name in _backends(patched_kind(kind), resource.props):
            service = services.get((namespace, name))
            made_by_kuberay = (namespace, name) in named_heads or name.endswith(HEAD_SERVICE_SUFFIX)
            if _selects_ray_head(service) if service is not None else made_by_kuberay:
                report_violation(
                    f"{kind} '{object_name(resource.props, resource.name)}' routes to the Ray head's Service "
                    f"'{namespace}/{name}'.",
                    resource.urn,
                )


def _service_key(props: Any, fallback: str) -> tuple[str, str]:
    return namespace_of(props), object_name(props, fallback)


def _selects_ray_head(service: Any) -> bool:
    selector = entries(service, "spec.selector")
    picks_ray = any(key.startswith("ray.io/") for key in selector)
    return picks_ray and selector.get(RAY_NODE_TYPE_LABEL, "head") == "head"


def _backends(kind: str, props: Any) -> Iterator[tuple[str, str]]:
    """(namespace, name) of every Service an Ingress or a Gateway API route sends traffic (or mirrored traffic) to."""
    namespace = namespace_of(props)
    if kind == "Ingress":
        backends = [lookup(props, "spec.defaultBackend"), lookup(props, "spec.backend")]
        for rule in items(props, "spec.rules"):
            backends += [lookup(path, "backend") for path in items(rule, "http.paths")]
        for backend in backends:
            name = lookup(backend, "service.name") or lookup(backend, "serviceName")  # v1, or v1beta1's
            if isinstance(name, str) and not is_unknown(name):
                yield namespace, name
    elif kind in ROUTE_KINDS:
        for rule in items(props, "spec.rules"):
            refs = items(rule, "backendRefs")
            refs += [lookup(f, "requestMirror.backendRef") for f in items(rule, "filters")]
            for ref in refs:
                name, ref_namespace = lookup(ref, "name"), lookup(ref, "namespace")
                if (
                    lookup(ref, "group") in (None, "")
                    and lookup(ref, "kind") in (None, "Service")
                    and isinstance(name, str)
                ):
                    yield (ref_namespace if isinstance(ref_namespace, str) else namespace), name


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
