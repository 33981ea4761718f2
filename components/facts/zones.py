"""Zones that offer each accelerator, from GCP's public pages, with the date they were read.

A stack whose zone is outside a TPU generation's table is refused when it loads, naming the zones that offer it
(components/config/cloud_checks.py): a zone without the accelerator, or no zone at all (`us-east5-z`), would
otherwise plan and fail at `pulumi up`. The table ages (GCP adds zones): when GCP lists a new zone, add it to the
generation's record with the date read; check one with `gcloud compute tpus accelerator-types list --zone=<zone>`.
The pack's `accelerator-zone-offered` policy reports the same per pool, for stacks planned without trainyard's
config load.

A4 (B200) has no table yet: GCP's GPU zone page could not be read offline, and the zones with Dynamic
Workload Scheduler capacity (https://cloud.google.com/batch/docs/locations) are only some of them, so a
table from those would flag zones that work.
"""

from __future__ import annotations

from components.facts import topology
from components.facts.topology import ZoneTable


def tables() -> list[ZoneTable]:
    """Every zone table: each lives on its TPU generation's record (components/facts/topology.py)."""
    return [generation.zones for generation in topology.TPU_GENERATIONS.values()]


def table_for(machine_type: str) -> ZoneTable | None:
    generation = topology.tpu_generation_of_machine(machine_type)
    return generation.zones if generation else None


def zone_advisory(machine_type: str, zone: str) -> str | None:
    """Why a zone may not offer the machine's accelerator (a line to show), or None when the table has it."""
    table = table_for(machine_type)
    if table is None or zone in table.zones:
        return None
    listed = ", ".join(sorted(table.zones))
    return (
        f"{zone} is not in the table of zones offering {table.accelerator} (read {table.read_on} from {table.source}: "
        f"{listed}); it may be newer than the table: check with gcloud before relying on it"
    )
