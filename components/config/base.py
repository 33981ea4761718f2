"""What every stack config model shares: the base class and the patterns of values.

Config flows one way: these and the models (`models`, `jobs`) <- the checks (`checks`,
`job_checks`) <- the loader (`load`). Nothing here imports a check or the loader.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

# A Kubernetes/GCP name label: lowercase letters, digits and '-', starting with a letter, ending alphanumeric.
DNS_LABEL = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
VERSION_TAG = r"^v\d+\.\d+\.\d+$"
QUANTITY = r"^\d+(\.\d+)?([KMGTPE]i?|m)?$"
PROJECT_ID = r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$"
REGION = r"^[a-z]+-[a-z]+\d+$"
ZONE = r"^[a-z]+-[a-z]+\d+-[a-z]$"
STACK_NAME = r"^[A-Za-z0-9_.-]{1,100}$"  # what the Pulumi CLI accepts for a stack name
GKE_VERSION = r"^1\.\d+(\.\d+(-gke\.\d+)?)?$"  # a minor ("1.35") or a full GKE version ("1.35.2-gke.1842000")


class ConfigModel(BaseModel):
    """A section of the stack config: camelCase keys, unknown keys refused, immutable once parsed."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)
