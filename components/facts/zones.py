"""Zones that offer each accelerator, from GCP's public pages, with the date they were read.

The table ages: GCP adds zones. So a zone outside it is an advisory (the policy `accelerator-zone-offered`),
never an error; check a zone with `gcloud compute accelerator-types list --filter=zone:<zone>` or
`gcloud compute tpus accelerator-types list --zone=<zone>`.

A4 (B200) has no table yet: GCP's GPU zone page could not be read offline, and the zones with Dynamic
Workload Scheduler capacity (https://cloud.google.com/batch/docs/locations) are only some of them, so a
table from those would flag zones that work.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.facts import topology


@dataclass(frozen=True)
class ZoneTable:
    accelerator: str
    zones: frozenset[str]
    read_on: str
    source: str


TABLES: dict[str, ZoneTable] = {
    "v6e": ZoneTable(
        accelerator="TPU v6e",
        zones=frozenset(
            {"us-central1-b", "us-east1-d", "us-east5-a", "us-east5-b", "europe-west4-a", "asia-northeast1-b"}
        ),
        read_on="2026-11-24",
        source="https://cloud.google.com/tpu/docs/regions-zones (asia-northeast1-b: https://cloud.google.com/kubernetes-engine/docs/concepts/dws)",
    ),
}


def table_for(machine_type: str) -> ZoneTable | None:
    generation = topology.tpu_generation_of_machine(machine_type)
    return TABLES.get(generation.name if generation else machine_type)


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
