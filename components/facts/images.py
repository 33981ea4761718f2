"""Container image references: what pins one, where one comes from, and where Artifact Registry keeps a stack's images.

A tag such as `latest` moves: two pods of one job (or a restart after preemption) can run different code.
A digest never moves; an exact version tag is the next best thing. Config and the policy pack read the rule
here, so both refuse the same references (docs/cloud-facts.md: image references).
"""

from __future__ import annotations

import re

REPOSITORY_TYPE = "gcp:artifactregistry/repository:Repository"
IMAGE_BUILD_TYPE = "docker-build:index:Image"
TRAINERS = ("fsdp", "maxtext")  # each builds from workloads/<trainer>/Dockerfile

PINNED_WORDS = (
    "an image pinned by digest (name@sha256:<64 hex digits>) or by an exact version tag (name:1.2.3); "
    "not :latest and not untagged"
)
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
_FLOATING_TAGS = frozenset({"latest", "stable", "nightly", "edge", "main", "master"})
# Artifact Registry repository IDs: lowercase letters, digits and hyphens, starting with a letter, up to 63.
REPOSITORY_ID = r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"


# The reference grammar registries and runtimes parse (github.com/distribution/reference, regexp.go): a domain
# (host components, an optional port), then lowercase path components joined by `.`, `_`, `__` or dashes, an
# optional tag of up to 128 word characters, an optional digest; the name at most 255 characters.
_HOST_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"{_HOST_COMPONENT}(?:\.{_HOST_COMPONENT})*(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REFERENCE = re.compile(
    rf"^(?P<name>(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$",
    re.ASCII,
)
MAX_NAME_LENGTH = 255


def reference_problem(reference: str) -> str | None:
    """Why `reference` is not an image reference a registry would take, or None."""
    match = _REFERENCE.match(reference)
    if match is None:
        return (
            "it is not an image reference a registry takes ([host[:port]/]path/name[:tag][@digest]: a lowercase "
            "path, a tag of at most 128 letters, digits, `_`, `.` and `-`, no spaces)"
        )
    if len(match.group("name")) > MAX_NAME_LENGTH:
        return f"its name is {len(match.group('name'))} characters, more than a registry takes ({MAX_NAME_LENGTH})"
    return None


def image_tag(reference: str) -> str | None:
    """The tag of `host[:port]/path/name[:tag][@digest]`, or None when there is none."""
    name = reference.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def pin_problem(reference: str) -> str | None:
    """Why `reference` is not pinned (or no reference at all), or None when it is."""
    if "@" in reference and not _DIGEST.search(reference):
        return "its digest is not sha256:<64 lowercase hex digits>"
    malformed = reference_problem(reference)
    if malformed:
        return malformed
    if _DIGEST.search(reference):
        return None
    tag = image_tag(reference)
    if tag is None:
        return "it has no tag, so it means :latest"
    if tag in _FLOATING_TAGS or not any(character.isdigit() for character in tag):
        return f"its tag :{tag} is not a version and moves"
    return None


# Registries (a host, or a host and a path prefix) pods may pull from besides the stack's own Artifact Registry
# repositories: GKE's (the NCCL installer's pause), Kubernetes' (Kueue), Google's gIB NCCL plugin and its TPU JAX
# images (the first-JAX smoke job), NVIDIA's DRA driver for GPUs (its one repository, not all of nvcr.io). Not
# Docker Hub: anyone may publish there, under a name one letter from a real one.
TRUSTED_REGISTRIES = (
    "gke.gcr.io",
    "registry.k8s.io",
    "us-docker.pkg.dev/gce-ai-infra",
    "us-docker.pkg.dev/cloud-tpu-images",
    "nvcr.io/nvidia/k8s-dra-driver-gpu",
)
# A reference without a registry host pulls from Docker Hub, and a one-part name from its `library/`
# (github.com/distribution/reference, normalize.go).
DOCKER_HUB, LEGACY_DOCKER_HUB, DOCKER_HUB_LIBRARY = "docker.io", "index.docker.io", "library"


def image_source(reference: str) -> str | None:
    """The repository `reference` pulls from, host and path as a registry resolves them (`nginx:1.27` is
    `docker.io/library/nginx`), the host in lower case; None when `reference` is not an image reference."""
    match = _REFERENCE.match(reference)
    if match is None:
        return None
    first, _, rest = match.group("name").partition("/")
    if rest and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        host = first.lower()
        return f"{DOCKER_HUB if host == LEGACY_DOCKER_HUB else host}/{rest}"
    return f"{DOCKER_HUB}/{match.group('name') if rest else f'{DOCKER_HUB_LIBRARY}/{first}'}"


def within_registry(source: str, registry: str) -> bool:
    """Whether the repository `source` (image_source's) lies in `registry`, a host or a host and path prefix:
    compared part by part, so `us-docker.pkg.dev/gce-ai-infra` holds neither `.../gce-ai-infra-x` nor a host
    `us-docker.pkg.dev.example.com`."""
    host, *path = registry.lower().rstrip("/").split("/")
    source_host, *source_path = source.split("/")
    return source_host == host and source_path[: len(path)] == path


# Artifact Registry's predefined roles that only read (docs/cloud-facts.md: the build cache); every other
# roles/artifactregistry.* role pushes, tags or deletes.
REGISTRY_READER_ROLE = "roles/artifactregistry.reader"
REGISTRY_WRITER_ROLE = "roles/artifactregistry.writer"
REGISTRY_READ_ROLES = (REGISTRY_READER_ROLE,)
REGISTRY_ROLE_PREFIX = "roles/artifactregistry."
# The account `pulumi up` runs as: bootstrap/ creates it (components/infra/ci_identity.py) in the stack's project.
DEPLOY_ACCOUNT_ID = "trainyard-deploy"
_DEPLOY_MEMBER = re.compile(
    rf"^serviceAccount:{DEPLOY_ACCOUNT_ID}@[a-z][-a-z0-9]{{4,28}}[a-z0-9]\.iam\.gserviceaccount\.com$"
)
CACHE_SUFFIX = "-cache"


def deploy_member(project: str) -> str:
    """The IAM member of the deploy account in `project`."""
    return f"serviceAccount:{DEPLOY_ACCOUNT_ID}@{project}.iam.gserviceaccount.com"


def is_deploy_member(member: str) -> bool:
    return bool(_DEPLOY_MEMBER.match(member))


def writes_the_registry(role: str) -> bool:
    """An Artifact Registry role that can push, move a tag or delete (anything but a reader)."""
    return role.startswith(REGISTRY_ROLE_PREFIX) and role not in REGISTRY_READ_ROLES


def cache_repository(repository: str) -> str:
    """The build cache's repository beside the images' one, still a valid repository ID (63 at most)."""
    return f"{repository[: 63 - len(CACHE_SUFFIX)]}{CACHE_SUFFIX}"


def registry_host(region: str) -> str:
    """Artifact Registry's Docker host for a region."""
    return f"{region}-docker.pkg.dev"


def repository_path(region: str, project: str, repository: str) -> str:
    return f"{registry_host(region)}/{project}/{repository}"
