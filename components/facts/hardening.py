"""The production profile's names (the CIS GKE Benchmark items docs/security.md lists), each written once.

The stack writes these values when its config turns an item on; the policy `cis-gke-profile` reads them back from
the plan. Sources, per item: docs/cloud-facts.md, "The production profile".
"""

from __future__ import annotations

# Pulumi type token of a project's audit config for one service (Data Access audit logs).
AUDIT_CONFIG_TYPE = "gcp:projects/iAMAuditConfig:IAMAuditConfig"
CONTAINER_SERVICE = "container.googleapis.com"  # the GKE API, and the Kubernetes API's reads and writes with it
STORAGE_SERVICE = "storage.googleapis.com"
ALL_SERVICES = "allServices"  # an audit config for every service of the project
# Admin reads (IAM policies, bucket metadata) and reads and writes of data: what CIS GCP 2.1 asks to log.
DATA_ACCESS_LOG_TYPES = ("ADMIN_READ", "DATA_READ", "DATA_WRITE")
DATA_LOG_TYPES = ("DATA_READ", "DATA_WRITE")  # without these an audit config logs no object or API read or write

# The kubelet's unauthenticated port 10255, as GKE's node config and node pool defaults spell on and off.
KUBELET_READ_ONLY_PORT = {True: "TRUE", False: "FALSE"}
BINARY_AUTHORIZATION_ENFORCE = "PROJECT_SINGLETON_POLICY_ENFORCE"
SECURITY_POSTURE_ON = ("BASIC", "ENTERPRISE")
# GKE retired the posture's workload vulnerability scanning (its standard tier shut down on 2025-07-31, Advanced
# Vulnerability Insights deprecated on 2025-06-16): a cluster that turns the posture on states it off.
VULNERABILITY_SCANNING_OFF = "VULNERABILITY_DISABLED"

# VPC flow logs: a record per flow every 5 seconds (the shortest interval), with every metadata field.
FLOW_LOG_INTERVAL = "INTERVAL_5_SEC"
FLOW_LOG_METADATA = "INCLUDE_ALL_METADATA"
