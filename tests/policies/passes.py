"""Compliant variations of the good stack, each with the pack config it runs under: no policy may fire."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.helpers import policy_stacks as fx
from tests.policies.policy_edits import (
    GPU_POOL,
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
)

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
    # In a release channel GKE keeps every pool's auto-upgrade on, flex-start pools too.
    ("flex-start pool with auto-upgrade on", edit(GPU_POOL, "management.autoUpgrade", True), None),
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
