"""Stack edits for the policy tests: each builds a variation of ``policy_stacks.good_stack()`` that changes one
thing (a property, an added or removed resource)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from components.facts.host_workloads import NCCL_INSTALLER
from tests.helpers import policy_stacks as fx

GPU_POOL, SLICE, SYSTEM = "gpu-nodepool-dws", "v6e-16-0", "system"
Stack = list[dict[str, Any]]


def edit(name: str, path: str, value: Any) -> Callable[[], Stack]:
    def build() -> Stack:
        stack = fx.good_stack()
        return fx.replace(stack, fx.changed(fx.by_name(stack, name), path, value))

    return build


def add(*extra: Callable[[], dict[str, Any]]) -> Callable[[], Stack]:
    return lambda: fx.good_stack() + [make() for make in extra]


def without(name: str) -> Callable[[], Stack]:
    return lambda: [item for item in fx.good_stack() if item["name"] != name]


def public_endpoint(*blocks: str, google_cloud: bool = False) -> Callable[[], Stack]:
    """The dev cluster with its IP endpoint public, admitting ``blocks`` (no list at all when given None)."""

    def build() -> Stack:
        cluster = fx.changed(fx.cluster(), "privateClusterConfig.enablePrivateEndpoint", False)
        authorized = {
            "cidrBlocks": [{"displayName": f"range-{i}", "cidrBlock": cidr} for i, cidr in enumerate(blocks)],
            "gcpPublicCidrsAccessEnabled": google_cloud,
        }
        return fx.replace(fx.good_stack(), fx.changed(cluster, "masterAuthorizedNetworksConfig", authorized))

    return build


def dcn_attached_to_a_pool(firewall: bool) -> Callable[[], Stack]:
    """The first DCN VPC as a pool's node network, its subnet, and (or not) the ingress rule from it."""

    def build() -> Stack:
        stack = fx.good_stack()
        network = fx.by_name(stack, "trainyard-dev-dcn-1")
        subnet = fx.resource(
            "gcp:compute/subnetwork:Subnetwork", "dcn-1-sub", {"name": "dcn-1-sub", "ipCidrRange": "10.50.0.0/16"}
        )
        extra = {"additionalNodeNetworkConfigs": [{"network": "trainyard-dev-dcn-1", "subnetwork": "dcn-1-sub"}]}
        stack = [*fx.replace(stack, fx.changed(fx.by_name(stack, "v6e-16-0"), "networkConfig", extra)), subnet]
        if firewall:
            rule = fx.resource(
                "gcp:compute/firewall:Firewall",
                "dcn-1-internal",
                {"sourceRanges": ["10.50.0.0/16"], "allows": [{"protocol": "tcp", "ports": ["0-65535"]}]},
            )
            stack.append({**rule, "dependencies": [network["urn"]]})
        return stack

    return build


def queued_tpu_pool() -> dict[str, Any]:
    return fx.changed(fx.flex_tpu_slice_pool(), "queuedProvisioning", {"enabled": True})


def plain_deployment(privileged: bool = True, **pod: Any) -> dict[str, Any]:
    """A web Deployment in `default`, contained but for `privileged` (privilege escalation comes with it)."""
    security = {"privileged": True} if privileged else fx.CONTAINER_SECURITY
    container = {"name": "web", "image": fx.image("web:1.27.3"), "securityContext": security}
    return fx.resource(
        "kubernetes:apps/v1:Deployment",
        "web",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"replicas": 1.0, "template": {"spec": fx.contained({"containers": [container], **pod})}},
        },
    )


def installer(**pod: Any) -> dict[str, Any]:
    """The NCCL installer DaemonSet in its shape (components/facts/host_workloads.py), with `pod`'s fields over it."""
    shape = NCCL_INSTALLER
    gib_image, pause_image = shape.images
    spec = {
        "serviceAccountName": shape.service_account,
        "automountServiceAccountToken": False,
        **{field: True for field in shape.host_namespaces},
        "volumes": [{"name": name, "hostPath": {"path": path}} for name, path in shape.host_paths.items()],
        "initContainers": [
            {
                "name": shape.privileged_containers[0],
                "image": gib_image,
                "securityContext": {"privileged": True},
                "volumeMounts": [
                    {"name": name, "mountPath": f"/usr/local{path}"} for name, path in shape.host_paths.items()
                ],
            }
        ],
        "containers": [{"name": "pause", "image": pause_image, "securityContext": dict(fx.CONTAINER_SECURITY)}],
        **pod,
    }
    body = {"spec": {"selector": {"matchLabels": {"k8s-app": shape.name}}, "template": {"spec": spec}}}
    return kube_object("apps/v1", shape.kind, shape.name, body, namespace=shape.namespace)()


def cpu_job(**spec: Any) -> dict[str, Any]:
    pod = fx.contained({"restartPolicy": "Never", "containers": [{"name": "prep", "image": fx.image("prep:3.12")}]})
    return fx.resource(
        "kubernetes:batch/v1:Job",
        "prep",
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "prep", "namespace": "trainyard"},
            "spec": {"template": {"spec": pod}, **spec},
        },
    )


def container_edit(name: str, path: str, value: Any, template: str = "spec.template.spec") -> Callable[[], Stack]:
    """The first container of a workload's pod template with `path` (under the container) set to `value`."""
    return edit(name, f"{template}.containers.0.{path}", value)


def kube_object(
    api_version: str, kind: str, name: str, body: dict[str, Any], namespace: str | None = "trainyard"
) -> Callable[[], dict[str, Any]]:
    group_version = api_version if "/" in api_version else f"core/{api_version}"
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    inputs = {"apiVersion": api_version, "kind": kind, "metadata": metadata, **body}
    return lambda: fx.resource(f"kubernetes:{group_version}:{kind}", name, inputs)


def iam(type_: str, **inputs: Any) -> Callable[[], dict[str, Any]]:
    return lambda: fx.resource(type_, "grant", {"project": "trainyard-dev", **inputs})


def shaped_rayjob(flags: str) -> dict[str, Any]:
    """The MaxText RayJob told its shape the way workloads.maxtext.train is (--slices/--hosts-per-slice)."""
    return fx.changed(fx.maxtext_rayjob(), "spec.entrypoint", f"python -m workloads.maxtext.train {flags}")


def without_metadata_server(stack: Stack) -> Stack:
    for name in ("v6e-16-0", "v6e-16-1"):
        stack = fx.replace(stack, fx.changed(fx.by_name(stack, name), "nodeConfig.workloadMetadataConfig", fx.DELETE))
    return stack


def metadata_selecting_stack() -> Stack:
    """Workers also select GKE's label for the metadata server, as the dev stack's RayJob does."""
    selector = {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
        "cloud.google.com/gke-tpu-topology": "4x4",
        "iam.gke.io/gke-metadata-server-enabled": "true",
        "topology.kubernetes.io/zone": "us-east5-b",
    }
    path = "spec.rayClusterSpec.workerGroupSpecs.0.template.spec.nodeSelector"
    return fx.replace(fx.good_stack(), fx.changed(fx.maxtext_rayjob(), path, selector))


def selecting(name: str, selector: dict[str, str], **spec: Any) -> Callable[[], dict]:
    """A ClusterIP Service on the dashboard's port (unless `spec` says otherwise) selecting `selector`."""
    ports = [{"name": "dashboard", "port": 8265.0, "targetPort": 8265.0}]
    return kube_object("v1", "Service", name, {"spec": {"selector": selector, "ports": ports, **spec}})


def ingress(service: str, default: bool = False) -> Callable[[], dict]:
    """An Ingress to `service` port 8265: by a rule's path, or as its default backend."""
    backend = {"service": {"name": service, "port": {"number": 8265.0}}}
    if default:
        return kube_object("networking.k8s.io/v1", "Ingress", "ray", {"spec": {"defaultBackend": backend}})
    path = {"path": "/", "pathType": "Prefix", "backend": backend}
    rules = [{"host": "ray.example.com", "http": {"paths": [path]}}]
    return kube_object("networking.k8s.io/v1", "Ingress", "ray", {"spec": {"rules": rules}})


def http_route(*refs: dict[str, Any], mirror: dict[str, Any] | None = None) -> Callable[[], dict]:
    """An HTTPRoute of an external Gateway to the backendRefs `refs`, its requests also mirrored to `mirror`."""
    rule: dict[str, Any] = {"backendRefs": list(refs)}
    if mirror:
        rule["filters"] = [{"type": "RequestMirror", "requestMirror": {"backendRef": mirror}}]
    spec = {"parentRefs": [{"name": "external", "namespace": "gateways"}], "rules": [rule]}
    return kube_object("gateway.networking.k8s.io/v1", "HTTPRoute", "ray", {"spec": spec})


def head_service(value: dict[str, Any]) -> Callable[[], Stack]:
    """The MaxText RayJob's head Service as `headGroupSpec.headService` shapes it."""
    return edit("maxtext", "spec.rayClusterSpec.headGroupSpec.headService", value)


def ray_cluster(**cluster: Any) -> Callable[[], dict]:
    """A standalone RayCluster of the RayJob's cluster spec, with `cluster`'s fields over it."""

    def build() -> dict:
        spec = {**fx.maxtext_rayjob()["inputs"]["spec"]["rayClusterSpec"], **cluster}
        return kube_object("ray.io/v1", "RayCluster", "maxtext-cluster", {"spec": spec})()

    return build
