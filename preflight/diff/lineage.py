"""What a job's new revision loses of the running one's work: its progress (it starts from step 0), its
checkpoint lineage (it resumes another model's checkpoints), or nothing (it resumes the run's newest checkpoint).

MaxText resumes from `<base_output_directory>/<run_name>` in the bucket the pods mount (the RayJob's
entrypoint and its GCS FUSE volume); an FSDP revision writes to a folder of its own, so it always starts over
(components/config/jobs.py).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from preflight.report import MAXTEXT_TRAINER
from workloads.maxtext.cli import split_maxtext_args


def maxtext_entrypoint_args(entrypoint: str) -> tuple[list[str], list[str]] | None:
    """(trainyard's flags, MaxText's key=value settings) of a RayJob entrypoint that runs the MaxText trainer: a
    revision's lineage is read from the objects it applied, whatever config made them."""
    words = shlex.split(entrypoint)
    if MAXTEXT_TRAINER not in words:
        return None
    return split_maxtext_args(words[words.index(MAXTEXT_TRAINER) + 1 :])


def _maxtext_settings(inputs: Mapping[str, Any]) -> dict[str, str]:
    arguments = maxtext_entrypoint_args(str((inputs.get("spec") or {}).get("entrypoint") or ""))
    settings = arguments[1] if arguments else []
    return dict(setting.split("=", 1) for setting in settings if "=" in setting)


def _buckets(value: Any) -> set[str]:
    """Every GCS FUSE bucket the object's pods mount."""
    if isinstance(value, Mapping):
        found = {str(value["bucketName"])} if "bucketName" in value else set()
        return found.union(*(_buckets(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(_buckets(item) for item in value))
    return set()


def lost_work(kind: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """One clause: what the new revision starts from, and so what it gives up."""
    if kind == "Job":
        return "it starts from step 0 in a folder of its own (the running revision's checkpoints stay in the bucket)"
    before, after = _maxtext_settings(old), _maxtext_settings(new)
    if not before or not after:
        return "it starts from step 0"
    old_run, new_run = before.get("run_name"), after.get("run_name")
    if _buckets(old) != _buckets(new) or before.get("base_output_directory") != after.get("base_output_directory"):
        return (
            f"it starts from step 0: its checkpoints are read from {', '.join(sorted(_buckets(new)))}, not from "
            f"where run `{old_run}` saved them ({', '.join(sorted(_buckets(old)))})"
        )
    if old_run != new_run:
        return f"it starts from step 0 as run `{new_run}` (run `{old_run}`'s checkpoints stay in the bucket, unread)"
    if before.get("model_name") != after.get("model_name"):
        return (
            f"**it resumes run `{new_run}`'s checkpoints, saved by `{before.get('model_name')}`, as "
            f"`{after.get('model_name')}`**: another model's weights; give it a new `runName` to start from step 0"
        )
    return f"it resumes run `{new_run}` from its newest checkpoint"
