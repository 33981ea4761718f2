"""The trainyard policy pack: every rule wrapped as a pulumi-policy policy, with its level and config.

``policies/__main__.py`` hands ``POLICIES`` to ``PolicyPack`` under the real CLI; preflight's
``policy_runner`` drives the same policies through pulumi_policy's analyzer servicer. A policy's
description is the first line of its rule function's docstring.

Pack config (the CLI's --policy-pack-config JSON; each key is a policy name, ``all`` sets every level):
  allowed-regions           {"allowedRegions": ["us-east5", ...]}      empty list: any region
  tpu-queued-provisioning   {"allowTpuQueuedProvisioning": true}
  long-running-jobs-skip-await {"maxAwaitSeconds": 600}
  cost-within-budget        {"maxUsdPerHour": 500, "enforcementLevel": "mandatory"}  default 1000 USD/h
  runs-within-budget        {"maxUsdPerRun": 1000, "forecast": [...]}  default 2000 USD; forecast: preflight's
  max-cost-within-spread    {"maxSpread": 20}  default 10: maximum cost per hour over minimum
  privileged-only-where-allowed {"allowedPrivileged": ["DaemonSet/kube-system/nccl-rdma-installer"]}
  host-access-only-where-allowed {"allowedHostAccess": ["DaemonSet/kube-system/nccl-rdma-installer"]}
  pods-run-restricted       {"allowedUnrestricted": ["DaemonSet/kube-system/nccl-rdma-installer"]}
  service-account-token-only-where-needed {"allowedApiToken": []}
  (each list names Kind/namespace/name and replaces the default, the NCCL installer: an accepted risk,
  exempt only in its shape, components/facts/host_workloads.py)
  cis-gke-profile           {"production": true}   the stack holds every CIS GKE item (policies/config.prod-like.json)
  images-from-allowed-registries {"allowedRegistries": ["gke.gcr.io", "nvcr.io/nvidia", ...]}  host or host/path
                            prefix; replaces the default (components/facts/images.py TRUSTED_REGISTRIES); the
                            stack's own Artifact Registry repositories are always allowed
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationPolicy,
    StackValidationPolicy,
)

from components.facts.images import TRUSTED_REGISTRIES
from policies import (
    cis_rules,
    claim_rules,
    exposure_rules,
    gcp_rules,
    identity_rules,
    kube_rules,
    kueue_rules,
    namespace_rules,
    pod_rules,
    pool_rules,
    rbac_rules,
    secret_rules,
    stack_rules,
)
from policies.allow_lists import workload_list_config

PACK_NAME = "trainyard"
PACK_VERSION = "0.1.0"
MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY


def _describe(rule: Callable[..., Any]) -> str:
    return (rule.__doc__ or rule.__name__).strip().splitlines()[0]


def _name(rule: Callable[..., Any]) -> str:
    return rule.__name__.replace("_", "-")


def judging_any_shape(rule: Callable[..., Any]) -> Callable[..., Any]:
    """The rule, reporting a value it cannot read as a violation of its own instead of raising: a policy that raises
    stops `pulumi preview` with a stack trace, and a shape the rule cannot read is one it cannot pass either."""

    @functools.wraps(rule)
    def judged(args: Any, report_violation: ReportViolation) -> None:
        try:
            rule(args, report_violation)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as error:
            urn = getattr(args, "urn", None)
            report_violation(f"{_name(rule)} cannot read this {'resource' if urn else 'stack'}: {error}", urn)

    return judged


def resource_policy(
    rule: Callable[..., Any], level: EnforcementLevel = MANDATORY, config: PolicyConfigSchema | None = None
) -> ResourceValidationPolicy:
    return ResourceValidationPolicy(
        name=_name(rule),
        description=_describe(rule),
        validate=judging_any_shape(rule),
        enforcement_level=level,
        config_schema=config,
    )


def stack_policy(
    rule: Callable[..., Any], level: EnforcementLevel = MANDATORY, config: PolicyConfigSchema | None = None
) -> StackValidationPolicy:
    return StackValidationPolicy(
        name=_name(rule),
        description=_describe(rule),
        validate=judging_any_shape(rule),
        enforcement_level=level,
        config_schema=config,
    )


ALLOWED_REGIONS_CONFIG = PolicyConfigSchema(
    properties={
        "allowedRegions": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[a-zA-Z0-9-]+$"},
            "default": [],
            "description": "Regions (or multi-regions such as US) resources may use; empty allows all.",
        }
    }
)
TPU_QUEUED_CONFIG = PolicyConfigSchema(
    properties={
        "allowTpuQueuedProvisioning": {
            "type": "boolean",
            "default": False,
            "description": "Accept queued provisioning on TPU pools (unproven on GKE).",
        }
    }
)
AWAIT_CONFIG = PolicyConfigSchema(
    properties={
        "maxAwaitSeconds": {
            "type": "number",
            "minimum": 0,
            "default": kube_rules.DEFAULT_MAX_AWAIT_SECONDS,
            "description": "Jobs with an activeDeadlineSeconds up to this may be awaited by pulumi.",
        }
    }
)


PRIVILEGED_CONFIG = workload_list_config("allowedPrivileged", "run privileged containers")
HOST_ACCESS_CONFIG = workload_list_config(
    "allowedHostAccess", "use hostPID, hostNetwork, hostIPC, write hostPaths or mount the node's sensitive directories"
)
UNRESTRICTED_CONFIG = workload_list_config(
    "allowedUnrestricted", "add capabilities, escalate privileges, run as root or without seccomp"
)
API_TOKEN_CONFIG = workload_list_config("allowedApiToken", "mount a Kubernetes API token", default=())
BUDGET_CONFIG = PolicyConfigSchema(
    properties={
        "maxUsdPerHour": {
            "type": "number",
            "exclusiveMinimum": 0,
            "default": stack_rules.DEFAULT_MAX_USD_PER_HOUR,
            "description": (
                "Budget in USD per hour for the stack at maximum scale "
                f"(default {stack_rules.DEFAULT_MAX_USD_PER_HOUR:,.0f}; raise it for a bigger fleet)."
            ),
        }
    }
)
SPREAD_CONFIG = PolicyConfigSchema(
    properties={
        "maxSpread": {
            "type": "number",
            "minimum": 1,
            "default": stack_rules.DEFAULT_MAX_COST_SPREAD,
            "description": (
                "How many times its cost at minimum scale the stack may cost at maximum "
                f"(default {stack_rules.DEFAULT_MAX_COST_SPREAD:g})."
            ),
        }
    }
)
# maxUsdPerRun has no schema default on purpose: the CLI and preflight fill schema defaults in, and the rule
# must tell a budget the team set (which also reports jobs without a forecast) from its own default.
RUN_BUDGET_CONFIG = PolicyConfigSchema(
    properties={
        "maxUsdPerRun": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": (
                "Budget in USD per job run (MaxText: its steps; FSDP: its DWS window); unset: "
                f"{stack_rules.DEFAULT_MAX_USD_PER_RUN:,.0f} for forecast runs. Set, it also reports jobs "
                "without a forecast."
            ),
        },
        "forecast": {
            "type": "array",
            "items": {"type": "object"},
            "description": "The stack's forecast, as `python -m preflight forecast --pack-config` writes it.",
        },
    }
)

PRODUCTION_CONFIG = PolicyConfigSchema(
    properties={
        "production": {
            "type": "boolean",
            "default": False,
            "description": "The stack is production: it must hold every CIS GKE item (docs/security.md).",
        }
    }
)

ALLOWED_REGISTRIES_CONFIG = PolicyConfigSchema(
    properties={
        "allowedRegistries": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[a-zA-Z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)*$"},
            "default": list(TRUSTED_REGISTRIES),
            "description": (
                "Registries (a host, or a host and path prefix) pods may pull from besides the stack's own "
                "Artifact Registry repositories."
            ),
        }
    }
)

POLICIES: list[Policy] = [
    resource_policy(gcp_rules.accelerator_vpc_mtu),
    resource_policy(pool_rules.flex_start_pool_settings),
    resource_policy(pool_rules.queued_provisioning_pool_settings),
    resource_policy(pool_rules.tpu_queued_provisioning, config=TPU_QUEUED_CONFIG),
    resource_policy(pool_rules.multi_host_tpu_placement),
    resource_policy(pool_rules.dranet_pool_networks),
    resource_policy(gcp_rules.cluster_workload_identity),
    resource_policy(gcp_rules.cluster_no_legacy_auth),
    resource_policy(gcp_rules.cluster_shielded_nodes),
    resource_policy(exposure_rules.nodes_private),
    resource_policy(exposure_rules.pools_secure_boot),
    resource_policy(exposure_rules.control_plane_not_open),
    resource_policy(gcp_rules.pools_use_gke_metadata_server),
    resource_policy(gcp_rules.bucket_uniform_access),
    resource_policy(gcp_rules.bucket_soft_delete_on),
    resource_policy(identity_rules.no_public_iam_members),
    resource_policy(identity_rules.no_basic_roles),
    resource_policy(identity_rules.no_service_account_keys),
    resource_policy(identity_rules.no_hmac_keys),
    resource_policy(identity_rules.pools_run_as_their_own_service_account),
    resource_policy(gcp_rules.firewall_not_open_to_the_internet),
    resource_policy(identity_rules.no_sensitive_roles_for_broad_members),
    resource_policy(identity_rules.no_admin_or_token_creator_roles),
    resource_policy(identity_rules.identity_roles_name_one_workload),
    resource_policy(identity_rules.no_pool_wide_grants),
    resource_policy(identity_rules.registry_writes_only_by_the_deploy_account),
    resource_policy(gcp_rules.allowed_regions, config=ALLOWED_REGIONS_CONFIG),
    resource_policy(kube_rules.privileged_only_where_allowed, config=PRIVILEGED_CONFIG),
    resource_policy(kube_rules.images_pinned),
    stack_policy(kube_rules.images_from_allowed_registries, config=ALLOWED_REGISTRIES_CONFIG),
    resource_policy(secret_rules.no_secret_literals),
    resource_policy(kube_rules.host_access_only_where_allowed, config=HOST_ACCESS_CONFIG),
    resource_policy(pod_rules.pods_run_restricted, config=UNRESTRICTED_CONFIG),
    stack_policy(pod_rules.service_account_token_only_where_needed, config=API_TOKEN_CONFIG),
    resource_policy(identity_rules.no_cluster_admin_bindings),
    resource_policy(rbac_rules.roles_grant_no_escalation),
    stack_policy(rbac_rules.bindings_widen_no_role),
    resource_policy(exposure_rules.ray_ports_stay_in_the_cluster),
    stack_policy(exposure_rules.ray_head_not_routed),
    resource_policy(exposure_rules.ray_requires_token_auth),
    resource_policy(kube_rules.long_running_jobs_skip_await, config=AWAIT_CONFIG),
    stack_policy(kueue_rules.dws_workloads_use_kueue),
    stack_policy(kueue_rules.queued_provisioning_has_kueue),
    stack_policy(stack_rules.ray_worker_groups_match_pools),
    stack_policy(stack_rules.jax_trainer_workers_match_slices),
    stack_policy(kueue_rules.kueue_quotas_match_pools),
    stack_policy(kueue_rules.topology_requests_name_a_level),
    stack_policy(claim_rules.pod_claims_name_a_template),
    stack_policy(stack_rules.node_networks_allow_internal_ingress),
    stack_policy(namespace_rules.workload_namespaces_deny_by_default),
    stack_policy(namespace_rules.workload_pods_admission_enforced),
    stack_policy(cis_rules.cis_gke_profile, config=PRODUCTION_CONFIG),
    resource_policy(gcp_rules.cluster_deletion_protection_off, level=ADVISORY),
    resource_policy(pool_rules.accelerator_zone_offered, level=ADVISORY),
    resource_policy(pool_rules.pool_has_max_size, level=ADVISORY),
    resource_policy(exposure_rules.public_endpoint_names_its_ranges, level=ADVISORY),
    stack_policy(stack_rules.cost_within_budget, config=BUDGET_CONFIG),
    stack_policy(stack_rules.max_cost_within_spread, level=ADVISORY, config=SPREAD_CONFIG),
    stack_policy(stack_rules.runs_within_budget, level=ADVISORY, config=RUN_BUDGET_CONFIG),
]


def pack_arguments() -> dict[str, Any]:
    """Keyword arguments for ``PolicyPack`` (and for the analyzer servicer preflight drives)."""
    return {"name": PACK_NAME, "policies": POLICIES, "enforcement_level": MANDATORY}
