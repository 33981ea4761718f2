"""What a job's new revision does to the running one, under the job's updatePolicy (components/config/jobs.py):
``keep`` leaves the running revision (retainOnDelete) and Kueue decides, by preflight's own admission model,
whether the new one starts at once beside it -- billing both; ``replace`` deletes the running revision first
(deleteBeforeReplace), so the two never overlap."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.facts.gke import WORKLOAD_LABEL
from preflight.checks.admission import admitted_beside


@dataclass(frozen=True)
class Revision:
    policy: str  # "keep", "replace", or "" for an object that carries neither option
    starts_at_once: bool  # keep: Kueue admits the new revision while the old one holds its quota
    waits_for: str  # keep, not at once: Kueue's reason
    overlap_usd_per_hour: float | None  # keep, at once: the new revision's own price while both run


def workload_label(inputs: Mapping[str, Any]) -> str:
    metadata = inputs.get("metadata") or {}
    return str((metadata.get("labels") or {}).get(WORKLOAD_LABEL) or metadata.get("name", "?"))


def _reasons(verdict: list[tuple[str, str]]) -> str:
    return "; ".join(f"{pod_set}: {reason}" for pod_set, reason in verdict)


def revision(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    head_resources: list[Mapping[str, Any]],
    forecasts: list[Mapping[str, Any]],
) -> Revision:
    """``old`` and ``new`` are the base and head plan resources of one job whose object name changed."""
    if (new.get("options") or {}).get("deleteBeforeReplace"):
        return Revision("replace", False, "", None)
    if not (old.get("options") or {}).get("retainOnDelete"):
        return Revision("", False, "", None)
    verdict = admitted_beside(head_resources, new.get("inputs") or {}, old.get("inputs") or {})
    if not isinstance(verdict, dict):
        return Revision("keep", False, _reasons(verdict), None)
    job = workload_label(new.get("inputs") or {})
    price = next((f.get("usdPerHour") for f in forecasts if f.get("job") == job), None)
    return Revision("keep", True, "", price)
