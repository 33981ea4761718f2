"""Data Access audit logs: a project's audit config for one service, which logs who read or wrote what."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.facts.hardening import DATA_ACCESS_LOG_TYPES


def data_access_logs(name: str, project: str, service: str, parent: pulumi.Resource) -> gcp.projects.IAMAuditConfig:
    """Admin reads and data reads and writes of `service` in the project are logged, for every principal. The config
    is the project's one for that service (the provider replaces any other) and covers every resource of the service
    in the project, not only the stack's; Cloud Logging bills the entries by volume."""
    return gcp.projects.IAMAuditConfig(
        name,
        project=project,
        service=service,
        audit_log_configs=[
            gcp.projects.IAMAuditConfigAuditLogConfigArgs(log_type=log_type) for log_type in DATA_ACCESS_LOG_TYPES
        ],
        opts=pulumi.ResourceOptions(parent=parent),
    )
