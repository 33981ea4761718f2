"""Workloads named by their content: a running job is never changed under it, only superseded.

A Job's pod template is immutable and KubeRay does not restart a running RayJob for a new spec, so any change
to a job must be a new object. Naming it `<job>-<revision>`, the revision a hash of everything its pods get
(image digest, code ConfigMap, arguments, resources), makes every change a new object. The job's updatePolicy
decides what happens to the running one: "replace" (default) deletes it first (deleteBeforeReplace); "keep"
retains it (`retainOnDelete`): Pulumi forgets it, it runs to its end in the cluster beside the new one (Kueue
admits both when the quota holds them), and `ttlSecondsAfterFinished` removes it later.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pulumi

REVISION_LENGTH = 6  # a 40-character job name stays within KubeRay's 47 for a RayJob
FINISHED_TTL_SECONDS = 3 * 24 * 3600  # finished Jobs stay this long for their logs and status


def _plain(value: Any) -> Any:
    """Typed Args (resolved by from_input) as their properties."""
    return {type(value).__name__: vars(value)}


def _digest(template: Any) -> str:
    text = json.dumps(template, default=_plain, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:REVISION_LENGTH]


def revision_name(base: str, template: Any) -> pulumi.Output[str]:
    """`<base>-<hash of template>`, with every Output in the template resolved first (unknown in a preview only
    when something it holds is unknown, e.g. an image being rebuilt)."""
    return pulumi.Output.concat(base, "-", pulumi.Output.from_input(template).apply(_digest))


def retained(opts: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(retain_on_delete=True))


def superseded(opts: pulumi.ResourceOptions, update_policy: str) -> pulumi.ResourceOptions:
    """A job's revision under its update policy (components/config/jobs.py UpdatePolicy): "keep" retains the
    running revision; "replace" deletes it before its successor is created, so the two never run at once."""
    if update_policy == "keep":
        return retained(opts)
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(delete_before_replace=True))
