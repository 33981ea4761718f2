"""What every stack config model shares: the base class and the patterns of values.

Config flows one way: these and the models (`models`, `jobs`) <- the checks (`checks`,
`job_checks`) <- the loader (`load`). Nothing here imports a check or the loader.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, AllowInfNan, BaseModel, BeforeValidator, ConfigDict
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from components.facts.images import PINNED_WORDS, REPOSITORY_ID, pin_problem

# A Kubernetes/GCP name label: lowercase letters, digits and '-', starting with a letter, ending alphanumeric.
DNS_LABEL = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
VERSION_TAG = r"^v[0-9]+\.[0-9]+\.[0-9]+$"
# Kubernetes' quantity grammar (gke.QUANTITY_PATTERN, unsigned), ASCII digits only: a binary suffix (Ki..Ei), a
# decimal one (n, u, m, k, M, G, T, P, E) or a decimal exponent. `K` is not one: `16000000K` is refused here.
QUANTITY = r"^[0-9]+(\.[0-9]+)?([KMGTPE]i|[numkMGTPE]|[eE][-+]?[0-9]+)?$"
PROJECT_ID = r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$"
REGION = r"^[a-z]+-[a-z]+[0-9]+$"
# A zone, or an AI zone (us-central1-ai1a: https://docs.cloud.google.com/compute/docs/regions-zones/ai-zones)
ZONE = r"^[a-z]+-[a-z]+[0-9]+-([a-z]|ai[0-9]+[a-z])$"
STACK_NAME = r"^[A-Za-z0-9_.-]{1,100}$"  # what the Pulumi CLI accepts for a stack name
GKE_VERSION = r"^1\.[0-9]+(\.[0-9]+(-gke\.[0-9]+)?)?$"  # a minor ("1.35") or a full GKE version ("1.35.2-gke.1842000")
MODEL_NAME = r"^[a-z0-9][-a-z0-9.]*$"
RUN_NAME = r"^[A-Za-z0-9][-_.A-Za-z0-9]*$"
# A run name is a folder of the bucket's mount (MaxText's and Ray Train's run directory): one path component,
# at most NAME_MAX (255) bytes on Linux and the GCS FUSE mount.
RUN_NAME_MAX = 255
CONFIG_KEY = r"^[a-z][-a-zA-Z0-9]*:[A-Za-z][A-Za-z0-9]*$"
DRIVER_VERSION = r"^[0-9]+\.[0-9]+(\.[0-9]+)?$"  # an NVIDIA driver version as nvidia-smi prints it
REPOSITORY = REPOSITORY_ID
KMS_KEY = (
    r"^projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/locations/[a-z0-9-]+"
    r"/keyRings/[-_A-Za-z0-9]{1,63}/cryptoKeys/[-_A-Za-z0-9]{1,63}$"
)

# What each pattern allows, in words: messages say this, not the regular expression.
PATTERN_WORDS = {
    DNS_LABEL: "lowercase letters, digits and '-', starting with a letter and ending with a letter or digit",
    VERSION_TAG: "a release tag such as v0.19.2",
    QUANTITY: "a Kubernetes quantity such as 8, 500m, 16Gi or 200G",
    PROJECT_ID: "a project ID: 6 to 30 lowercase letters, digits and '-', starting with a letter, not ending with '-'",
    REGION: "a region such as us-east5",
    ZONE: "a zone such as us-east5-b, or an AI zone such as us-central1-ai1a",
    STACK_NAME: "up to 100 letters, digits, '_', '.' and '-'",
    GKE_VERSION: "a GKE minor such as 1.35, or a full version such as 1.35.2-gke.1842000",
    MODEL_NAME: "lowercase letters, digits, '-' and '.', starting with a letter or digit (a MaxText model name)",
    RUN_NAME: "letters, digits, '-', '_' and '.', starting with a letter or digit",
    CONFIG_KEY: "a Pulumi config key such as huggingface:token",
    DRIVER_VERSION: "an NVIDIA driver version such as 580.95.05",
    KMS_KEY: "a Cloud KMS key's name: projects/PROJECT/locations/REGION/keyRings/RING/cryptoKeys/KEY",
    REPOSITORY: "an Artifact Registry repository ID: up to 63 lowercase letters, digits and '-', from a letter",
}


def _not_a_boolean(value: Any) -> Any:
    # pydantic reads true as 1; a YAML `count: true` is a mistake, not a count.
    if isinstance(value, bool):
        raise PydanticCustomError("not_a_number", "a boolean is not a number; allowed: a number such as 2")
    return value


def _pinned(reference: str) -> str:
    problem = pin_problem(reference)
    if problem:
        raise ValueError(f"{problem}; allowed: {PINNED_WORDS}")
    return reference


Int = Annotated[int, BeforeValidator(_not_a_boolean)]
PinnedImage = Annotated[str, AfterValidator(_pinned)]
Float = Annotated[float, BeforeValidator(_not_a_boolean), AllowInfNan(False)]  # .inf is YAML for infinity


class ConfigModel(BaseModel):
    """A section of the stack config: camelCase keys, unknown keys refused, immutable once parsed."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True, use_attribute_docstrings=True
    )
