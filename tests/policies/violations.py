"""One change each to the good stack, with exactly the policies it must fire (mandatory unless the case says)."""

from __future__ import annotations

from collections.abc import Callable

from tests.helpers import policy_stacks as fx
from tests.policies.policy_edits import (
    GPU_POOL,
    SLICE,
    SYSTEM,
    Stack,
    add,
    cpu_job,
    dcn_attached_to_a_pool,
    edit,
    iam,
    metadata_selecting_stack,
    plain_deployment,
    public_endpoint,
    queued_tpu_pool,
    shaped_rayjob,
    without,
    without_metadata_server,
)
from tests.policies.violations_effects import EFFECT_CASES
from tests.policies.violations_hardening import (
    ADDRESS_CASES,
    HOST_AND_PORT_CASES,
    HOST_WORKLOAD_CASES,
    IAM_EFFECT_CASES,
    IDENTITY_CASES,
    NAMESPACE_CASES,
    POD_KIND_CASES,
    POD_SECURITY_CASES,
    RBAC_CASES,
    REGISTRY_CASES,
    SECRET_CASES,
)

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
    (
        "DRANET profile beside the RDMA networks",
        edit(
            GPU_POOL,
            "networkConfig",
            {
                "acceleratorNetworkProfile": "auto",
                "additionalNodeNetworkConfigs": [{"network": "trainyard-dev-rdma", "subnetwork": "rdma-0"}],
            },
        ),
        {"dranet-pool-networks"},
    ),
    (
        "A4X pool without the DRANET profile",
        edit(GPU_POOL, "nodeConfig.machineType", "a4x-highgpu-4g"),
        {"dranet-pool-networks"},
    ),
    (
        "a pod claiming a template no object of the stack makes",
        edit(
            "fsdp-finetune",
            "spec.template.spec.resourceClaims",
            [{"name": "compute-domain-channel", "resourceClaimTemplateName": "fsdp-finetune-nvlink-channel"}],
        ),
        {"pod-claims-name-a-template"},
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
        {"no-sensitive-roles-for-broad-members", "no-admin-or-token-creator-roles"},
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
        {"no-sensitive-roles-for-broad-members", "no-admin-or-token-creator-roles"},
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
            fx.contained(
                {
                    "restartPolicy": "Never",
                    "volumes": [{"name": "lib", "hostPath": {"path": "/home/kubernetes/bin/nvidia"}}],
                    "containers": [
                        {
                            "name": "trainer",
                            "image": fx.image("fsdp:1.0"),
                            "volumeMounts": [{"name": "lib", "mountPath": "/usr/local/nvidia"}],
                            "resources": {"limits": {"nvidia.com/gpu": "8"}},
                        }
                    ],
                }
            ),
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
        edit("fsdp-finetune", "spec.template.spec.containers.0.image", fx.image("fsdp:latest")),
        {"images-pinned"},
    ),
    (
        "web image untagged",
        add(lambda: plain_deployment(False, containers=[{"name": "web", "image": fx.image("web")}])),
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
    (
        "a GPU pool of 2,000 nodes (~$105,000/h)",
        edit(GPU_POOL, "autoscaling.totalMaxNodeCount", 2000.0),
        {"cost-within-budget", "kueue-quotas-match-pools"},  # Kueue's quota still says 10 nodes
    ),
    *POD_SECURITY_CASES,
    *HOST_AND_PORT_CASES,
    *HOST_WORKLOAD_CASES,
    *POD_KIND_CASES,
    *RBAC_CASES,
    *IAM_EFFECT_CASES,
    *NAMESPACE_CASES,
    *IDENTITY_CASES,
    *REGISTRY_CASES,
    *ADDRESS_CASES,
    *SECRET_CASES,
    *EFFECT_CASES,
]
