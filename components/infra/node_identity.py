"""A service account per node role (system, TPU, GPU), with only what nodes need.

Nodes otherwise run as the project's default Compute Engine account, often a project Editor, whose token any
privileged pod or hostNetwork DaemonSet on the node can take. GKE's least-privilege node account holds
`roles/container.defaultNodeServiceAccount` (logs, metrics, node registration); pulling the trainers'
images adds Artifact Registry read on the stack's repository only (granted by `images.py`). Workloads reach
GCP as their Kubernetes service account through Workload Identity, never as the node (docs/cloud-facts.md:
node service accounts).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.facts.gcp_names import service_account_id

NODE_ROLE = "roles/container.defaultNodeServiceAccount"
ROLES = ("system", "tpu", "gpu")


@dataclass(frozen=True)
class NodeIdentitiesArgs:
    project: str
    cluster_name: str  # prefixes each account's id
    tpu: bool  # the stack has TPU pools
    gpu: bool  # the stack has GPU pools

    @property
    def roles(self) -> list[str]:
        return [role for role in ROLES if {"system": True, "tpu": self.tpu, "gpu": self.gpu}[role]]


class NodeIdentities(pulumi.ComponentResource):
    """`email[role]` for a pool's nodeConfig.serviceAccount, `members` for grants, `ready` for depends_on."""

    def __init__(self, name: str, args: NodeIdentitiesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:infra:NodeIdentities", name, None, opts)
        self._args = args
        self.accounts = {role: self._account(role) for role in args.roles}
        self.ready = {role: self._grant(role, account) for role, account in self.accounts.items()}
        self.email = {role: account.email for role, account in self.accounts.items()}
        self.members = {role: account.member for role, account in self.accounts.items()}
        self.register_outputs({"serviceAccounts": self.email})

    def _account(self, role: str) -> gcp.serviceaccount.Account:
        args = self._args
        return gcp.serviceaccount.Account(
            f"{role}-nodes",
            project=args.project,
            account_id=service_account_id(args.cluster_name, role),
            display_name=f"trainyard {args.cluster_name}: {role} nodes",
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )

    def _grant(self, role: str, account: gcp.serviceaccount.Account) -> gcp.projects.IAMMember:
        return gcp.projects.IAMMember(
            f"{role}-nodes-node-role",
            project=self._args.project,
            role=NODE_ROLE,
            member=account.member,
            opts=pulumi.ResourceOptions(parent=self),
        )
