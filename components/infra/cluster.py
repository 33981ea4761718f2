"""The GKE Standard cluster with the Ray operator and GCS FUSE add-ons, its system pool and kubeconfig."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.config.models import ClusterConfig
from components.facts.capacity import Capacity
from components.facts.hardening import (
    BINARY_AUTHORIZATION_ENFORCE,
    CONTAINER_SERVICE,
    KUBELET_READ_ONLY_PORT,
    VULNERABILITY_SCANNING_OFF,
)
from components.infra import node_pools
from components.infra.audit_logs import data_access_logs
from components.infra.fixed_names import fixed_name_options
from components.infra.network import POD_RANGE_NAME, SERVICE_RANGE_NAME, Networks
from components.infra.node_identity import NodeIdentities

SYSTEM_POOL_NAME = "system"
KMS_KEY_USER_ROLE = "roles/cloudkms.cryptoKeyEncrypterDecrypter"


def gke_service_agent(project_number: str) -> str:
    """The Google-managed account GKE's control plane acts as in the project (it calls KMS for etcd)."""
    return f"serviceAccount:service-{project_number}@container-engine-robot.iam.gserviceaccount.com"


def compute_service_agent(project_number: str) -> str:
    """The Google-managed account Compute Engine acts as in the project (it calls KMS for CMEK boot disks)."""
    return f"serviceAccount:service-{project_number}@compute-system.iam.gserviceaccount.com"


def kubeconfig(name: str, dns_endpoint: str) -> str:
    """A kubeconfig for the control plane's DNS endpoint that authenticates with gke-gcloud-auth-plugin: no
    keys or tokens stored. The DNS endpoint checks IAM (container.clusters.connect) before the API server sees
    the request, answers from anywhere that reaches Google APIs (CI runners included) whether or not the IP
    endpoint is public, and serves a publicly trusted certificate, so no CA is pinned."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": name,
                    "cluster": {"server": f"https://{dns_endpoint}"},
                }
            ],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
            "users": [
                {
                    "name": name,
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1beta1",
                            "command": "gke-gcloud-auth-plugin",
                            "provideClusterInfo": True,
                            "installHint": "gcloud components install gke-gcloud-auth-plugin",
                        }
                    },
                }
            ],
        }
    )


def dns_endpoint_of(endpoints: gcp.container.outputs.ClusterControlPlaneEndpointsConfig) -> str:
    return endpoints.dns_endpoint_config.endpoint


def authorized_networks(cluster: ClusterConfig) -> gcp.container.ClusterMasterAuthorizedNetworksConfigArgs | None:
    """A public IP endpoint admits only the configured ranges, never Google Cloud's public addresses (any
    VM's); a closed one needs no list (the VPC reaches it, the DNS endpoint checks IAM)."""
    if not cluster.public_endpoint:
        return None
    return gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
        cidr_blocks=[
            gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                display_name=network.name, cidr_block=str(network.cidr)
            )
            for network in cluster.authorized_networks
        ],
        gcp_public_cidrs_access_enabled=False,
    )


def binary_authorization(cluster: ClusterConfig) -> gcp.container.ClusterBinaryAuthorizationArgs | None:
    if not cluster.binary_authorization:
        return None
    return gcp.container.ClusterBinaryAuthorizationArgs(evaluation_mode=BINARY_AUTHORIZATION_ENFORCE)


def security_posture(cluster: ClusterConfig) -> gcp.container.ClusterSecurityPostureConfigArgs | None:
    """The posture's mode, with its workload vulnerability scanning off: GKE retired it (docs/cloud-facts.md)."""
    if cluster.security_posture is None:
        return None
    return gcp.container.ClusterSecurityPostureConfigArgs(
        mode=cluster.security_posture, vulnerability_mode=VULNERABILITY_SCANNING_OFF
    )


def node_pool_defaults(cluster: ClusterConfig) -> gcp.container.ClusterNodePoolDefaultsArgs | None:
    """GKE's defaults for pools made later outside the stack; the stack's own pools state the same setting."""
    if cluster.kubelet_read_only_port is None:
        return None
    return gcp.container.ClusterNodePoolDefaultsArgs(
        node_config_defaults=gcp.container.ClusterNodePoolDefaultsNodeConfigDefaultsArgs(
            insecure_kubelet_readonly_port_enabled=KUBELET_READ_ONLY_PORT[cluster.kubelet_read_only_port]
        )
    )


@dataclass(frozen=True)
class ClusterArgs:
    project: str
    zone: str
    cluster: ClusterConfig
    networks: Networks
    identities: NodeIdentities


class Cluster(pulumi.ComponentResource):
    cluster: gcp.container.Cluster
    system_pool: gcp.container.NodePool
    dns_endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:infra:Cluster", name, None, opts)
        self._args = args
        key_grants = self._key_grants()
        self.cluster = self._cluster([d for d in (args.networks.nat, *key_grants) if d is not None])
        self.system_pool = self._system_pool()
        if args.cluster.data_access_logs:
            data_access_logs(f"{args.cluster.name}-container-data-access", args.project, CONTAINER_SERVICE, self)
        self.dns_endpoint = self.cluster.control_plane_endpoints_config.apply(dns_endpoint_of)
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(self.cluster.name, self.dns_endpoint).apply(lambda parts: kubeconfig(*parts))
        )
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            # Without it the provider guesses "another cluster" from any change of the kubeconfig's server or
            # CA (a CA rotation, an endpoint move) and replaces every Kubernetes object of the stack.
            cluster_identifier=f"{args.project}/{args.zone}/{args.cluster.name}",
            # Server-side apply (the provider's default since v4, stated): Kueue's Workload CRD (~690 KB) is far
            # over the 256 KiB last-applied annotation client-side apply would write, as Kueue's install says.
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.system_pool]),
        )
        self.register_outputs(
            {
                "name": self.cluster.name,
                "endpoint": self.cluster.endpoint,
                "dnsEndpoint": self.dns_endpoint,
                "kubeconfig": self.kubeconfig,
            }
        )

    def _key_grants(self) -> list[gcp.kms.CryptoKeyIAMMember]:
        """The service agents that use the stack's keys may encrypt and decrypt with them: GKE's with the secrets key
        (without it the cluster fails), Compute Engine's with the boot disk key (without it no node boots)."""
        cluster = self._args.cluster
        wanted = [
            (f"{cluster.name}-secrets-key-gke", cluster.secrets_encryption_key, gke_service_agent),
            (f"{cluster.name}-boot-disk-key-compute", cluster.boot_disk_encryption_key, compute_service_agent),
        ]
        wanted = [(name, key, agent) for name, key, agent in wanted if key is not None]
        if not wanted:
            return []
        project_number = gcp.organizations.get_project_output(project_id=self._args.project).number
        return [
            gcp.kms.CryptoKeyIAMMember(
                name,
                crypto_key_id=key,
                role=KMS_KEY_USER_ROLE,
                member=project_number.apply(agent),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for name, key, agent in wanted
        ]

    def _cluster(self, depends_on: list[pulumi.Resource]) -> gcp.container.Cluster:
        config, networks = self._args, self._args.networks
        cluster = config.cluster
        return gcp.container.Cluster(
            cluster.name,
            name=cluster.name,
            location=config.zone,
            network=networks.primary.id,
            subnetwork=networks.primary_subnet.id,
            # GKE needs one node to create a cluster; the system pool replaces the default pool.
            remove_default_node_pool=True,
            initial_node_count=1,
            min_master_version=cluster.version,
            release_channel=gcp.container.ClusterReleaseChannelArgs(channel=cluster.release_channel),
            deletion_protection=cluster.deletion_protection,
            datapath_provider="ADVANCED_DATAPATH",
            enable_multi_networking=True,
            ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
                cluster_secondary_range_name=POD_RANGE_NAME, services_secondary_range_name=SERVICE_RANGE_NAME
            ),
            workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
                workload_pool=f"{config.project}.svc.id.goog"
            ),
            addons_config=gcp.container.ClusterAddonsConfigArgs(
                ray_operator_configs=[
                    gcp.container.ClusterAddonsConfigRayOperatorConfigArgs(
                        enabled=True,
                        ray_cluster_logging_config=gcp.container.ClusterAddonsConfigRayOperatorConfigRayClusterLoggingConfigArgs(
                            enabled=True
                        ),
                        ray_cluster_monitoring_config=gcp.container.ClusterAddonsConfigRayOperatorConfigRayClusterMonitoringConfigArgs(
                            enabled=True
                        ),
                    )
                ],
                gcs_fuse_csi_driver_config=gcp.container.ClusterAddonsConfigGcsFuseCsiDriverConfigArgs(enabled=True),
            ),
            monitoring_config=gcp.container.ClusterMonitoringConfigArgs(
                enable_components=["SYSTEM_COMPONENTS", "DCGM"],
                managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True),
            ),
            private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
                enable_private_nodes=cluster.private_nodes,
                enable_private_endpoint=None if cluster.public_endpoint else True,
            ),
            master_authorized_networks_config=authorized_networks(cluster),
            control_plane_endpoints_config=gcp.container.ClusterControlPlaneEndpointsConfigArgs(
                dns_endpoint_config=gcp.container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgs(
                    allow_external_traffic=True
                )
            ),
            enable_shielded_nodes=True,
            enable_legacy_abac=False,
            master_auth=gcp.container.ClusterMasterAuthArgs(
                client_certificate_config=gcp.container.ClusterMasterAuthClientCertificateConfigArgs(
                    issue_client_certificate=False
                )
            ),
            database_encryption=gcp.container.ClusterDatabaseEncryptionArgs(
                state="ENCRYPTED", key_name=cluster.secrets_encryption_key
            )
            if cluster.secrets_encryption_key
            else None,
            binary_authorization=binary_authorization(cluster),
            security_posture_config=security_posture(cluster),
            node_pool_defaults=node_pool_defaults(cluster),
            # Private nodes pull from outside Google through the NAT from their first boot; the keys must be usable
            # before the cluster is created (and with it, every pool).
            opts=fixed_name_options(self, depends_on=depends_on),
        )

    def _system_pool(self) -> gcp.container.NodePool:
        config, identities = self._args, self._args.identities
        pool = config.cluster.system_pool
        return gcp.container.NodePool(
            SYSTEM_POOL_NAME,
            name=SYSTEM_POOL_NAME,
            cluster=self.cluster.name,
            location=config.zone,
            initial_node_count=pool.min_nodes,
            autoscaling=gcp.container.NodePoolAutoscalingArgs(
                min_node_count=pool.min_nodes, max_node_count=pool.max_nodes
            ),
            management=node_pools.management(Capacity.ON_DEMAND, config.cluster.in_release_channel),
            node_config=node_pools.node_config(
                pool.machine_type, identities.email["system"], node_pools.NodeHardening.of(config.cluster)
            ),
            opts=fixed_name_options(self, depends_on=[identities.ready["system"]]),
        )
