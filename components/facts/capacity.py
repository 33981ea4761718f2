"""Capacity modes: how a pool's VMs are obtained, in the stack config's words, and what each implies.

The one place the mode names are written. Config, infra, kube, jobs, preflight and the policy pack read what a
mode means from here (docs/cloud-facts.md: which capacity reaches nodes through which path):

- flex-start (`flexStart`, and `dwsQueued`, which is flex-start with queued provisioning): VMs from Dynamic
  Workload Scheduler, billed at the flex-start price, never repaired or upgraded in place, no reservation,
  scaled from zero by the cluster autoscaler or, queued, by a ProvisioningRequest (Kueue's admission check);
- `spot`: preemptible VMs at the spot price, labelled by GKE;
- `reservation`: a specific reservation, billed as on-demand; `onDemand`: neither.

TPU slices take every mode but `dwsQueued`: GKE rejects queued provisioning on TPU flex-start pools
(AI-Hypercomputer/xpk PR #900), and a flex-start slice is already provisioned whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from components.facts.gke import FLEX_START_LABEL, SPOT_LABEL

SPECIFIC_RESERVATION = "SPECIFIC_RESERVATION"


class Capacity(StrEnum):
    ON_DEMAND = "onDemand"
    SPOT = "spot"
    FLEX_START = "flexStart"
    DWS_QUEUED = "dwsQueued"
    RESERVATION = "reservation"

    @property
    def flex_start(self) -> bool:
        """VMs from Dynamic Workload Scheduler: no repair or upgrade in place, no reservation, scaled from 0."""
        return self in (Capacity.FLEX_START, Capacity.DWS_QUEUED)

    @property
    def queued(self) -> bool:
        """Provisioned through a ProvisioningRequest (GKE's queued provisioning; Kueue's admission check)."""
        return self is Capacity.DWS_QUEUED

    @property
    def node_label(self) -> str | None:
        """The label GKE puts on the mode's nodes, which a Kueue flavor can select them by."""
        return {Capacity.SPOT: SPOT_LABEL, Capacity.FLEX_START: FLEX_START_LABEL}.get(self)

    @property
    def price_column(self) -> str:
        """The price book's column: DWS is billed at flex-start prices, a reservation as on-demand."""
        if self.flex_start:
            return "flex-start"
        return "spot" if self is Capacity.SPOT else "on-demand"


PRICE_COLUMNS = ("on-demand", "spot", "flex-start")
# Which modes each accelerator kind takes, in the order the config reference lists them.
TPU_CAPACITIES = (Capacity.ON_DEMAND, Capacity.SPOT, Capacity.FLEX_START, Capacity.RESERVATION)
GPU_CAPACITIES = (Capacity.DWS_QUEUED, Capacity.FLEX_START, Capacity.SPOT, Capacity.ON_DEMAND, Capacity.RESERVATION)


def node_pool_capacity(inputs: Mapping[str, Any]) -> Capacity:
    """A node pool's capacity mode, read back from its engine-shaped inputs."""
    node_config = inputs.get("nodeConfig") or {}
    if (inputs.get("queuedProvisioning") or {}).get("enabled") is True:
        return Capacity.DWS_QUEUED
    if node_config.get("flexStart") is True:
        return Capacity.FLEX_START
    if node_config.get("spot") is True or node_config.get("preemptible") is True:
        return Capacity.SPOT
    affinity = (node_config.get("reservationAffinity") or {}).get("consumeReservationType")
    return Capacity.RESERVATION if affinity == SPECIFIC_RESERVATION else Capacity.ON_DEMAND
