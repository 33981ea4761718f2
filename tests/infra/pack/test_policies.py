"""Every rule of the pack, driven through pulumi_policy's analyzer with engine-shaped resources.

``good_stack()`` passes every rule; each case changes one thing and names exactly the policies that must
fire (mandatory unless stated). A meta-test checks every mandatory policy has a case that proves it fires.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from policies import rules
from preflight.policy_runner import evaluate
from tests.infra.helpers import policy_stacks as fx

GPU_POOL, SLICE, SYSTEM = "gpu-nodepool-dws", "v6e-16-0", "system"
Stack = list[dict[str, Any]]


def fired(stack: Stack, config: dict[str, Any] | None = None, level: str = "mandatory") -> set[str]:
    return {v.policy for v in evaluate(fx.plan(stack), config) if v.level == level}


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
    container = {"name": "web", "image": "nginx:1.27.3", "securityContext": {"privileged": privileged}}
    return fx.resource(
        "kubernetes:apps/v1:Deployment",
        "web",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"replicas": 1.0, "template": {"spec": {"containers": [container], **pod}}},
        },
    )


def cpu_job(**spec: Any) -> dict[str, Any]:
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "prep", "image": "python:3.12"}]}}
    return fx.resource(
        "kubernetes:batch/v1:Job",
        "prep",
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "prep"}, "spec": {"template": template, **spec}},
    )


def iam(type_: str, **inputs: Any) -> Callable[[], dict[str, Any]]:
    return lambda: fx.resource(type_, "grant", {"project": "trainyard-dev", **inputs})


VIOLATIONS: list[tuple[str, Callable[[], Stack], set[str]]] = [
    (
        "DCN node network without an ingress rule",
        dcn_attached_to_a_pool(firewall=False),
        {"node-networks-allow-internal-ingress"},
    ),
    ("mtu 1500", edit("trainyard-dev-dcn-1", "mtu", 1500.0), {"accelerator-vpc-mtu"}),
    ("mtu unset", edit("trainyard-dev-gvnic", "mtu", fx.DELETE), {"accelerator-vpc-mtu"}),
    (
        "flex auto-repair on",
        edit(GPU_POOL, "management.autoRepair", True),
        {"flex-start-pool-settings", "queued-provisioning-pool-settings"},
    ),
    ("flex auto-upgrade on", edit(GPU_POOL, "management.autoUpgrade", True), {"flex-start-pool-settings"}),
    (
        "flex management unset",
        edit(GPU_POOL, "management", fx.DELETE),
        {"flex-start-pool-settings", "queued-provisioning-pool-settings"},
    ),
    (
        "flex min 1",
        edit(GPU_POOL, "autoscaling.totalMinNodeCount", 1.0),
        {"flex-start-pool-settings", "queued-provisioning-pool-settings"},
    ),
    (
        "flex initial 2",
        edit(GPU_POOL, "initialNodeCount", 2.0),
        {"flex-start-pool-settings", "queued-provisioning-pool-settings"},
    ),
    (
        "flex reservation",
        edit(GPU_POOL, "nodeConfig.reservationAffinity.consumeReservationType", "ANY_RESERVATION"),
        {"flex-start-pool-settings", "queued-provisioning-pool-settings"},
    ),
    (
        "flex without autoscaling",
        lambda: fx.good_stack() + [fx.changed(fx.flex_tpu_slice_pool(), "autoscaling", fx.DELETE)],
        {"flex-start-pool-settings", "multi-host-tpu-placement", "dws-workloads-use-kueue"},
    ),
    (
        "queued without flex, reservation",
        lambda: fx.replace(
            fx.good_stack(),
            fx.changed(
                fx.changed(fx.dws_gpu_pool(), "nodeConfig.flexStart", fx.DELETE),
                "nodeConfig.reservationAffinity",
                fx.DELETE,
            ),
        ),
        {"queued-provisioning-pool-settings"},
    ),
    (
        "TPU with queued provisioning",
        add(queued_tpu_pool),
        {"tpu-queued-provisioning", "queued-provisioning-has-kueue", "dws-workloads-use-kueue"},
    ),
    ("slice SPREAD", edit(SLICE, "placementPolicy.type", "SPREAD"), {"multi-host-tpu-placement"}),
    ("slice 3 nodes", edit(SLICE, "nodeCount", 3.0), {"multi-host-tpu-placement"}),
    ("slice two zones", edit(SLICE, "nodeLocations", ["us-east5-b", "us-east5-c"]), {"multi-host-tpu-placement"}),
    (
        "slice bad topology",
        edit(SLICE, "placementPolicy.tpuTopology", "3x3"),
        {"multi-host-tpu-placement", "ray-worker-groups-match-pools"},
    ),
    (
        "flex slice max 8",
        lambda: fx.good_stack() + [fx.changed(fx.flex_tpu_slice_pool(), "autoscaling.maxNodeCount", 8.0)],
        {"multi-host-tpu-placement", "dws-workloads-use-kueue"},
    ),
    ("no workload identity", edit("trainyard-dev", "workloadIdentityConfig", fx.DELETE), {"cluster-workload-identity"}),
    ("legacy ABAC", edit("trainyard-dev", "enableLegacyAbac", True), {"cluster-no-legacy-auth"}),
    (
        "client certificate",
        edit("trainyard-dev", "masterAuth.clientCertificateConfig.issueClientCertificate", True),
        {"cluster-no-legacy-auth"},
    ),
    ("basic auth", edit("trainyard-dev", "masterAuth.username", "admin"), {"cluster-no-legacy-auth"}),
    ("shielded nodes off", edit("trainyard-dev", "enableShieldedNodes", False), {"cluster-shielded-nodes"}),
    ("public nodes", edit("trainyard-dev", "privateClusterConfig.enablePrivateNodes", False), {"nodes-private"}),
    (
        "no private cluster config",
        edit("trainyard-dev", "privateClusterConfig", fx.DELETE),
        {"nodes-private", "control-plane-not-open"},
    ),
    (
        "public endpoint without authorized networks",
        edit("trainyard-dev", "privateClusterConfig.enablePrivateEndpoint", False),
        {"control-plane-not-open"},
    ),
    ("public endpoint for the internet", public_endpoint("203.0.113.0/24", "0.0.0.0/0"), {"control-plane-not-open"}),
    (
        "public endpoint for every GCP VM",
        public_endpoint("203.0.113.0/24", google_cloud=True),
        {"control-plane-not-open"},
    ),
    ("slice without secure boot", edit(SLICE, "nodeConfig.shieldedInstanceConfig", fx.DELETE), {"pools-secure-boot"}),
    (
        "GPU pool without integrity monitoring",
        edit(GPU_POOL, "nodeConfig.shieldedInstanceConfig.enableIntegrityMonitoring", False),
        {"pools-secure-boot"},
    ),
    ("pool opts out of private nodes", edit(GPU_POOL, "networkConfig.enablePrivateNodes", False), {"nodes-private"}),
    (
        "pool on GCE metadata",
        edit(SYSTEM, "nodeConfig.workloadMetadataConfig.mode", "GCE_METADATA"),
        {"pools-use-gke-metadata-server"},
    ),
    (
        "pool metadata unset",
        edit(SLICE, "nodeConfig.workloadMetadataConfig", fx.DELETE),
        {"pools-use-gke-metadata-server"},
    ),
    (
        "default pool kept on GCE metadata",
        lambda: fx.replace(
            fx.good_stack(),
            fx.changed(
                fx.changed(fx.cluster(), "removeDefaultNodePool", False),
                "nodeConfig.workloadMetadataConfig.mode",
                "GCE_METADATA",
            ),
        ),
        {"pools-use-gke-metadata-server"},
    ),
    (
        "bucket fine-grained ACLs",
        edit("trainyard-dev-data", "uniformBucketLevelAccess", False),
        {"bucket-uniform-access"},
    ),
    (
        "bucket PAP inherited",
        edit("trainyard-dev-data", "publicAccessPrevention", "inherited"),
        {"bucket-uniform-access"},
    ),
    ("bucket allUsers", edit("runner-object-user", "member", "allUsers"), {"no-public-iam-members"}),
    ("bucket editor", edit("runner-object-user", "role", "roles/editor"), {"no-basic-roles"}),
    (
        "project binding",
        add(
            iam(
                "gcp:projects/iAMBinding:IAMBinding",
                role="roles/viewer",
                members=["allAuthenticatedUsers", "user:a@example.com"],
            )
        ),
        {"no-public-iam-members", "no-basic-roles"},
    ),
    (
        "project policy owner",
        add(
            iam(
                "gcp:projects/iAMPolicy:IAMPolicy",
                policyData='{"bindings": [{"role": "roles/owner", "members": ["user:a@example.com"]}]}',
            )
        ),
        {"no-basic-roles"},
    ),
    (
        "service account key",
        add(lambda: fx.resource("gcp:serviceaccount/key:Key", "runner-key", {"serviceAccountId": "runner"})),
        {"no-service-account-keys"},
    ),
    ("privileged web pod", add(plain_deployment), {"privileged-only-where-allowed"}),
    (
        "privileged TPU worker",
        edit(
            "maxtext",
            "spec.rayClusterSpec.workerGroupSpecs.0.template.spec.containers.0.securityContext",
            {"privileged": True},
        ),
        {"privileged-only-where-allowed"},
    ),
    (
        "privileged trainer",
        edit("fsdp-finetune", "spec.template.spec.containers.0.securityContext", {"privileged": True}),
        {"privileged-only-where-allowed"},
    ),
    (
        "privileged DaemonSet that only selects GPU nodes",
        add(
            lambda: fx.changed(
                plain_deployment(
                    affinity={
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {"key": "cloud.google.com/gke-accelerator", "operator": "Exists"}
                                        ]
                                    }
                                ]
                            }
                        }
                    }
                ),
                "kind",
                "DaemonSet",
            )
        ),
        {"privileged-only-where-allowed"},
    ),
    (
        "a topology level no Topology has",
        edit(
            "fsdp-finetune",
            "spec.template.metadata.annotations",
            {"kueue.x-k8s.io/podset-required-topology": "cloud.google.com/gce-topology-rack"},
        ),
        {"topology-requests-name-a-level"},
    ),
    (
        "TAS request on a flavor without topology",
        edit("dws-flavor", "spec.topologyName", fx.DELETE),
        {"topology-requests-name-a-level"},
    ),
    ("TAS flavor whose Topology is missing", without("gke-default"), {"topology-requests-name-a-level"}),
    ("job without skipAwait", edit("fsdp-finetune", "metadata.annotations", {}), {"long-running-jobs-skip-await"}),
    ("rayjob without skipAwait", edit("maxtext", "metadata.annotations", fx.DELETE), {"long-running-jobs-skip-await"}),
    ("CPU job without deadline", add(cpu_job), {"long-running-jobs-skip-await"}),
    ("CPU job of an hour", add(lambda: cpu_job(activeDeadlineSeconds=3600.0)), {"long-running-jobs-skip-await"}),
    ("DWS job without queue label", edit("fsdp-finetune", "metadata.labels", fx.DELETE), {"dws-workloads-use-kueue"}),
    (
        "DWS job on an unknown queue",
        edit("fsdp-finetune", "metadata.labels", {fx.QUEUE_LABEL: "nope"}),
        {"dws-workloads-use-kueue"},
    ),
    ("no ProvisioningRequestConfig", without("dws-config"), {"queued-provisioning-has-kueue"}),
    ("no AdmissionCheck", without("dws-prov"), {"queued-provisioning-has-kueue"}),
    (
        "check not on the queue",
        edit("dws-cluster-queue", "spec.admissionChecksStrategy", fx.DELETE),
        {"queued-provisioning-has-kueue"},
    ),
    (
        "config manages TPUs only",
        edit("dws-config", "spec.managedResources", ["google.com/tpu"]),
        {"queued-provisioning-has-kueue"},
    ),
    (
        "quota 1e9",
        edit("dws-cluster-queue", "spec.resourceGroups.0.flavors.0.resources.0.nominalQuota", 1e9),
        {"kueue-quotas-match-pools"},
    ),
    (
        "flavor selects nothing",
        edit("dws-flavor", "spec.nodeLabels", {"cloud.google.com/gke-nodepool": "nope"}),
        {"kueue-quotas-match-pools"},
    ),
    ("flavor missing", without("dws-flavor"), {"kueue-quotas-match-pools", "topology-requests-name-a-level"}),
    (
        "worker group 2 hosts",
        edit("maxtext", "spec.rayClusterSpec.workerGroupSpecs.0.numOfHosts", 2.0),
        {"ray-worker-groups-match-pools", "jax-trainer-workers-match-slices"},
    ),
    (
        "worker 8 chips",
        edit(
            "maxtext",
            "spec.rayClusterSpec.workerGroupSpecs.0.template.spec.containers.0.resources",
            {"limits": {"google.com/tpu": "8"}},
        ),
        {"ray-worker-groups-match-pools"},
    ),
    (
        "3 replicas on 2 slices",
        edit("maxtext", "spec.rayClusterSpec.workerGroupSpecs.0.maxReplicas", 3.0),
        {"ray-worker-groups-match-pools", "jax-trainer-workers-match-slices"},
    ),
    (
        "pool on the default account",
        edit(GPU_POOL, "nodeConfig.serviceAccount", fx.DELETE),
        {"pools-run-as-their-own-service-account"},
    ),
    (
        "pool on the project's compute account",
        edit(SLICE, "nodeConfig.serviceAccount", "123456789012-compute@developer.gserviceaccount.com"),
        {"pools-run-as-their-own-service-account"},
    ),
    (
        "firewall open to the internet",
        add(
            iam("gcp:compute/firewall:Firewall", sourceRanges=["10.0.0.0/8", "0.0.0.0/0"], allows=[{"protocol": "tcp"}])
        ),
        {"firewall-not-open-to-the-internet"},
    ),
    (
        "admin role to a whole domain",
        add(iam("gcp:projects/iAMMember:IAMMember", role="roles/container.admin", member="domain:example.com")),
        {"no-sensitive-roles-for-broad-members"},
    ),
    (
        "token creator to a group",
        add(
            iam(
                "gcp:serviceaccount/iAMMember:IAMMember",
                role="roles/iam.serviceAccountTokenCreator",
                member="group:ml@example.com",
            )
        ),
        {"no-sensitive-roles-for-broad-members"},
    ),
    (
        "token literal in the trainer's env",
        edit("fsdp-finetune", "spec.template.spec.containers.0.env", [{"name": "HF_TOKEN", "value": "hf_" + "x" * 34}]),
        {"no-secret-literals"},
    ),
    (
        "private key in a ConfigMap",
        add(
            lambda: fx.resource(
                "kubernetes:core/v1:ConfigMap",
                "keys",
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "keys"},
                    "data": {"id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n"},
                },
            )
        ),
        {"no-secret-literals"},
    ),
    (
        "trainer mounts a host path writable",
        edit(
            "fsdp-finetune",
            "spec.template.spec",
            {
                "restartPolicy": "Never",
                "volumes": [{"name": "lib", "hostPath": {"path": "/home/kubernetes/bin/nvidia"}}],
                "containers": [
                    {
                        "name": "trainer",
                        "image": "trainer:1.0",
                        "volumeMounts": [{"name": "lib", "mountPath": "/usr/local/nvidia"}],
                        "resources": {"limits": {"nvidia.com/gpu": "8"}},
                    }
                ],
            },
        ),
        {"host-access-only-where-allowed"},
    ),
    (
        "web pod on the host network",
        add(lambda: plain_deployment(False, hostNetwork=True)),
        {"host-access-only-where-allowed"},
    ),
    (
        "trainer image :latest",
        edit("fsdp-finetune", "spec.template.spec.containers.0.image", "trainer:latest"),
        {"images-pinned"},
    ),
    (
        "web image untagged",
        add(lambda: plain_deployment(False, containers=[{"name": "web", "image": "nginx"}])),
        {"images-pinned"},
    ),
    (
        "trainer 6 workers",
        lambda: fx.replace(fx.good_stack(), fx.maxtext_rayjob(workers=6)),
        {"jax-trainer-workers-match-slices"},
    ),
    (
        "trainer --slices 3",
        lambda: fx.replace(fx.good_stack(), shaped_rayjob("--slices 3 --hosts-per-slice 4")),
        {"jax-trainer-workers-match-slices"},
    ),
    (
        "trainer --hosts-per-slice 2",
        lambda: fx.replace(fx.good_stack(), shaped_rayjob("--slices 2 --hosts-per-slice 2")),
        {"jax-trainer-workers-match-slices"},
    ),
    (
        "trainer --chips-per-host 8",
        lambda: fx.replace(fx.good_stack(), shaped_rayjob("--chips-per-host 8")),
        {"jax-trainer-workers-match-slices"},
    ),
    (
        "worker selects a label no pool has",
        edit("maxtext", "spec.rayClusterSpec.workerGroupSpecs.0.template.spec.nodeSelector", {"team": "ml"}),
        {"ray-worker-groups-match-pools"},
    ),
    (
        "worker wants GKE metadata server, pools lack it",
        lambda: without_metadata_server(metadata_selecting_stack()),
        {"ray-worker-groups-match-pools", "pools-use-gke-metadata-server"},
    ),
]


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


def test_good_stack_passes_every_rule():
    assert evaluate(fx.plan(fx.good_stack())) == []


@pytest.mark.parametrize(("label", "build", "expected"), VIOLATIONS, ids=[case[0] for case in VIOLATIONS])
def test_violation_fires_exactly_its_rules(label, build, expected):
    assert fired(build()) == expected


def test_every_mandatory_policy_is_proven_to_fire():
    mandatory = {p.name for p in rules.POLICIES if p.enforcement_level == rules.MANDATORY} - {"allowed-regions"}
    proven = set().union(*(expected for _, _, expected in VIOLATIONS))
    assert mandatory - proven == set()


PASSES: list[tuple[str, Callable[[], Stack], dict[str, Any] | None]] = [
    (
        "egress rule to anywhere, admin role to one service account",
        add(
            iam("gcp:compute/firewall:Firewall", direction="EGRESS", sourceRanges=["0.0.0.0/0"]),
            iam(
                "gcp:projects/iAMMember:IAMMember",
                role="roles/container.admin",
                member="serviceAccount:deployer@trainyard-dev.iam.gserviceaccount.com",
            ),
        ),
        None,
    ),
    (
        "trainer image by digest",
        edit("fsdp-finetune", "spec.template.spec.containers.0.image", f"trainer:dev@sha256:{'ab' * 32}"),
        None,
    ),
    ("DCN node network with its ingress rule", dcn_attached_to_a_pool(firewall=True), None),
    (
        "flex TPU slice used through Kueue",
        lambda: fx.replace(
            fx.good_stack() + [fx.flex_tpu_slice_pool()],
            fx.changed(fx.maxtext_rayjob(), "metadata.labels", {fx.QUEUE_LABEL: fx.QUEUE}),
        ),
        None,
    ),
    (
        "TPU queued provisioning allowed",
        lambda: fx.replace(
            fx.good_stack() + [queued_tpu_pool()],
            fx.changed(fx.maxtext_rayjob(), "metadata.labels", {fx.QUEUE_LABEL: fx.QUEUE}),
        ),
        {"tpu-queued-provisioning": {"allowTpuQueuedProvisioning": True}, "queued-provisioning-has-kueue": "disabled"},
    ),
    (
        "privileged NCCL installer named in allowedPrivileged",
        add(
            lambda: fx.changed(
                fx.changed(plain_deployment(), "metadata.name", "nccl-rdma-installer"),
                "metadata.namespace",
                "kube-system",
            )
        ),
        None,
    ),
    (
        "privileged web pod named in the pack config",
        add(plain_deployment),
        {"privileged-only-where-allowed": {"allowedPrivileged": ["default/web"]}},
    ),
    (
        "token from a Secret, paths and flags as literals",
        edit(
            "fsdp-finetune",
            "spec.template.spec.containers.0.env",
            [
                {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "t", "key": "token"}}},
                {"name": "HF_HOME", "value": "/cache/huggingface"},
                {"name": "NCCL_IB_GID_INDEX", "value": "3"},
            ],
        ),
        None,
    ),
    (
        "read-only host path, and the NCCL installer on the host network",
        add(
            lambda: plain_deployment(
                False,
                volumes=[{"name": "lib", "hostPath": {"path": "/opt/lib"}}],
                containers=[
                    {
                        "name": "web",
                        "image": "nginx:1.27.3",
                        "volumeMounts": [{"name": "lib", "mountPath": "/lib2", "readOnly": True}],
                    }
                ],
            ),
            lambda: fx.changed(
                fx.changed(
                    plain_deployment(False, hostNetwork=True, hostPID=True), "metadata.name", "nccl-rdma-installer"
                ),
                "metadata.namespace",
                "kube-system",
            ),
        ),
        None,
    ),
    ("unprivileged web pod", add(lambda: plain_deployment(privileged=False)), None),
    ("short CPU job", add(lambda: cpu_job(activeDeadlineSeconds=300.0)), None),
    (
        "hour-long CPU job under a raised await limit",
        add(lambda: cpu_job(activeDeadlineSeconds=3600.0)),
        {"long-running-jobs-skip-await": {"maxAwaitSeconds": 7200}},
    ),
    (
        "trainer told --slices 2 --hosts-per-slice 4 --chips-per-host 4",
        lambda: fx.replace(fx.good_stack(), shaped_rayjob("--slices 2 --hosts-per-slice 4 --chips-per-host 4")),
        None,
    ),
    ("workers select GKE-managed node labels", metadata_selecting_stack, None),
    ("public endpoint for an office", public_endpoint("203.0.113.0/24"), None),
    ("regions allowed", fx.good_stack, {"allowed-regions": {"allowedRegions": ["us-east5", "US-EAST5"]}}),
    (
        "spot GPU pool",
        lambda: fx.replace(
            fx.good_stack(),
            fx.changed(
                fx.changed(
                    fx.changed(
                        fx.changed(fx.dws_gpu_pool(), "nodeConfig.flexStart", fx.DELETE),
                        "queuedProvisioning",
                        fx.DELETE,
                    ),
                    "nodeConfig.spot",
                    True,
                ),
                "nodeConfig.reservationAffinity",
                fx.DELETE,
            ),
        ),
        {"queued-provisioning-has-kueue": "disabled"},
    ),
]


@pytest.mark.parametrize(("label", "build", "config"), PASSES, ids=[case[0] for case in PASSES])
def test_compliant_variation_passes(label, build, config):
    assert fired(build(), config) == set()


def test_allowed_regions_fires_on_each_resource_outside():
    verdicts = evaluate(fx.plan(fx.good_stack()), {"allowed-regions": {"allowedRegions": ["europe-west4"]}})
    outside = {v.urn.rsplit("::", 1)[-1] for v in verdicts if v.policy == "allowed-regions"}
    assert outside == {"trainyard-dev", SYSTEM, SLICE, "v6e-16-1", GPU_POOL, "trainyard-dev-data"}
    assert all(v.level == "mandatory" for v in verdicts)


def test_advisories_do_not_block():
    stack = fx.replace(fx.good_stack(), fx.changed(fx.cluster(), "deletionProtection", False))
    stack = fx.replace(stack, fx.changed(fx.system_pool(), "autoscaling", {"totalMinNodeCount": 3.0}))
    assert fired(stack) == set()
    assert fired(stack, level="advisory") == {"cluster-deletion-protection-off", "pool-has-max-size"}


def test_a_public_endpoint_without_ranges_is_an_advisory():
    assert fired(public_endpoint()()) == set()
    assert fired(public_endpoint()(), level="advisory") == {"public-endpoint-names-its-ranges"}
    assert fired(public_endpoint("203.0.113.0/24")(), level="advisory") == set()
    assert fired(fx.good_stack(), level="advisory") == set()


def test_budget_is_advisory_unless_configured_mandatory():
    over = {"cost-within-budget": {"maxUsdPerHour": 10}}
    assert fired(fx.good_stack(), over, level="advisory") == {"cost-within-budget"}
    assert fired(fx.good_stack(), {"cost-within-budget": {"maxUsdPerHour": 10, "enforcementLevel": "mandatory"}}) == {
        "cost-within-budget"
    }
    assert fired(fx.good_stack(), {"cost-within-budget": {"maxUsdPerHour": 100_000}}, level="advisory") == set()


def test_a_run_over_its_budget_is_reported_from_the_forecast_the_pack_config_carries():
    forecast = [
        {"job": "fsdp-finetune", "stepSeconds": 21.4, "usdPerWindow": 211.0},
        {"job": "maxtext", "stepSeconds": 2.1, "usdPerRun": 90.0},
    ]
    assert fired(fx.good_stack(), {"runs-within-budget": {"forecast": forecast}}, level="advisory") == set()
    within = {"runs-within-budget": {"maxUsdPerRun": 250, "forecast": forecast}}
    assert fired(fx.good_stack(), within, level="advisory") == set()
    over = {"runs-within-budget": {"maxUsdPerRun": 100, "forecast": forecast}}
    (verdict,) = [v for v in evaluate(fx.plan(fx.good_stack()), over) if v.policy == "runs-within-budget"]
    assert "fsdp-finetune is forecast at $211.00 per DWS window (21.4 s per step)" in verdict.message
    assert verdict.urn.endswith("kubernetes:batch/v1:Job::fsdp-finetune")
    unforecast = {"runs-within-budget": {"maxUsdPerRun": 1000, "forecast": forecast[:1]}}
    (missing,) = [v for v in evaluate(fx.plan(fx.good_stack()), unforecast) if v.policy == "runs-within-budget"]
    assert "job maxtext has no forecast" in missing.message
    mandatory = {"runs-within-budget": {**over["runs-within-budget"], "enforcementLevel": "mandatory"}}
    assert fired(fx.good_stack(), mandatory) == {"runs-within-budget"}


def test_messages_name_resource_property_and_value():
    stack = edit("trainyard-dev-dcn-1", "mtu", 1500.0)()
    (verdict,) = [v for v in evaluate(fx.plan(stack)) if v.policy == "accelerator-vpc-mtu"]
    assert "trainyard-dev-dcn-1" in verdict.message and "1500" in verdict.message and "8896" in verdict.message
    assert verdict.urn.endswith("gcp:compute/network:Network::trainyard-dev-dcn-1")
