"""A service account per node role (system, TPU, GPU), with only what nodes need.

Nodes otherwise run as the project's default Compute Engine account, often a project Editor, whose token any
privileged pod or hostNetwork DaemonSet on the node can take. GKE's least-privilege node account holds
`roles/container.defaultNodeServiceAccount` (logs, metrics, node registration); pulling the trainers'
images adds Artifact Registry read on the stack's repository only (granted by `images.py`). Workloads reach
GCP as their Kubernetes service account through Workload Identity, never as the node (docs/cloud-facts.md:
node service accounts).
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.config.models import StackConfig
from components.facts.gcp_names import service_account_id

NODE_ROLE = "roles/container.defaultNodeServiceAccount"
ROLES = ("system", "tpu", "gpu")


class NodeIdentities(pulumi.ComponentResource):
    """`email[role]` for a pool's nodeConfig.serviceAccount, `members` for grants, `ready` for depends_on."""

    def __init__(self, name: str, config: StackConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:infra:NodeIdentities", name, None, opts)
        roles = [role for role in ROLES if self._needed(config, role)]
        self.accounts = {role: self._account(config, role) for role in roles}
        self.ready = {role: self._grant(config, role, account) for role, account in self.accounts.items()}
        self.email = {role: account.email for role, account in self.accounts.items()}
        self.members = {role: account.member for role, account in self.accounts.items()}
        self.register_outputs({"serviceAccounts": self.email})

    @staticmethod
    def _needed(config: StackConfig, role: str) -> bool:
        return {"system": True, "tpu": bool(config.tpu_slices), "gpu": bool(config.gpu_pools)}[role]

    def _account(self, config: StackConfig, role: str) -> gcp.serviceaccount.Account:
        account_id = service_account_id(config.cluster.name, role)
        return gcp.serviceaccount.Account(
            f"{role}-nodes",
            project=config.project,
            account_id=account_id,
            display_name=f"trainyard {config.cluster.name}: {role} nodes",
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )

    def _grant(self, config: StackConfig, role: str, account: gcp.serviceaccount.Account) -> gcp.projects.IAMMember:
        return gcp.projects.IAMMember(
            f"{role}-nodes-node-role",
            project=config.project,
            role=NODE_ROLE,
            member=account.member,
            opts=pulumi.ResourceOptions(parent=self),
        )
