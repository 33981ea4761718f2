"""The trainers' images: an Artifact Registry repository and one BuildKit build per trainer the stack runs.

Each image builds from `workloads/<trainer>/Dockerfile` with the repository root as context (its
`Dockerfile.dockerignore` admits only `source_tree.trainer_paths`), is tagged by the hash of the git-tracked files in
those paths and of the build's settings, and reaches pods as `tag@digest`: a trainer change is a new tag and a new
digest, an unchanged trainer is neither rebuilt nor redeployed. A stack that names a prebuilt image
(`trainyard:images`) skips the build. The images' repository keeps its tags immutable (a pushed tag always names
the digest first pushed under it); the BuildKit cache, rewritten by every build, lives in a repository of its own,
`<repository>-cache`, which only the deploy account writes (docs/security.md: the build cache). Pushing needs
Docker with BuildKit where `pulumi up` runs and credentials for both registry paths
(`gcloud auth configure-docker <region>-docker.pkg.dev`); previews build nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_docker_build as docker_build
import pulumi_gcp as gcp

from components.config.models import ImagesConfig
from components.facts.images import (
    REGISTRY_READER_ROLE,
    REGISTRY_WRITER_ROLE,
    cache_repository,
    deploy_member,
    repository_path,
)
from components.infra.fixed_names import fixed_name_options
from components.infra.source_tree import PROJECT_DIR, content_hash, deployed_files

TAG_LENGTH = 16
CACHE_TAG = "buildcache"


def dockerfile(trainer: str) -> str:
    return f"workloads/{trainer}/Dockerfile"


def source_tag(trainer: str, root: Path = PROJECT_DIR) -> str:
    """The content hash of what goes into the trainer's image."""
    return content_hash(root, deployed_files(root, trainer))[:TAG_LENGTH]


DEFAULT_PLATFORMS = ("linux/amd64",)


def build_tag(
    trainer: str, cache_ref: str, root: Path = PROJECT_DIR, platforms: tuple[str, ...] = DEFAULT_PLATFORMS
) -> str:
    """The image's tag: its trainer's content hash and the build's own settings (the cache it reads and writes, the
    platforms it is built for, when not only amd64).

    A change of settings rebuilds the image, and a rebuild is not byte-identical; under immutable tags it must push
    a tag of its own, or the registry refuses the push.
    """
    recipe = f"{source_tag(trainer, root)}\n{cache_ref}"
    if platforms != DEFAULT_PLATFORMS:
        recipe += f"\n{','.join(platforms)}"
    return hashlib.sha256(recipe.encode()).hexdigest()[:TAG_LENGTH]


@dataclass(frozen=True)
class TrainerImagesArgs:
    project: str
    region: str
    stack: str
    images: ImagesConfig  # the repository's name and any prebuilt images
    trainers: tuple[str, ...]  # the trainers the stack runs
    readers: dict[str, pulumi.Input[str]]  # node role -> IAM member that pulls the images
    platforms: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)  # trainer -> its nodes' platforms


class TrainerImages(pulumi.ComponentResource):
    """`refs[trainer]`: the image reference pods use, `tag@digest` when built here, the prebuilt one otherwise."""

    refs: dict[str, pulumi.Input[str]]

    def __init__(self, name: str, args: TrainerImagesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:infra:TrainerImages", name, None, opts)
        self._args = args
        images = args.images
        self.refs = {trainer: images.prebuilt(trainer) for trainer in args.trainers if images.prebuilt(trainer)}
        to_build = [trainer for trainer in args.trainers if trainer not in self.refs]
        self.repository = self._repository() if to_build else None
        self.cache = self._cache_repository() if to_build else None
        if self.repository is not None:
            self._grant_read()
            self._grant_cache_write()
        self.builds = {trainer: self._build(trainer) for trainer in to_build}
        for trainer, build in self.builds.items():
            self.refs[trainer] = pulumi.Output.concat(build.tags[0], "@", build.digest)
        self.register_outputs({"images": self.refs})

    def _repository(self) -> gcp.artifactregistry.Repository:
        config = self._args
        return gcp.artifactregistry.Repository(
            "registry",
            project=config.project,
            location=config.region,
            repository_id=config.images.repository,
            format="DOCKER",
            description=f"trainyard stack {config.stack}: the trainers' images",
            docker_config=gcp.artifactregistry.RepositoryDockerConfigArgs(immutable_tags=True),
            opts=fixed_name_options(self),
        )

    def _cache_repository(self) -> gcp.artifactregistry.Repository:
        """BuildKit's cache: rewritten by every build, so it cannot live under immutable tags; it feeds the next
        build, so only the deploy account writes it."""
        config = self._args
        return gcp.artifactregistry.Repository(
            "build-cache",
            project=config.project,
            location=config.region,
            repository_id=cache_repository(config.images.repository),
            format="DOCKER",
            description=f"trainyard stack {config.stack}: the trainers' build cache (deploy account only)",
            opts=fixed_name_options(self),
        )

    def _grant_cache_write(self) -> None:
        config = self._args
        self.cache_writer = gcp.artifactregistry.RepositoryIamMember(
            "build-cache-writer-deploy",
            project=config.project,
            location=config.region,
            repository=self.cache.repository_id,
            role=REGISTRY_WRITER_ROLE,
            member=deploy_member(config.project),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _grant_read(self) -> None:
        """The nodes pull the images: Artifact Registry read on this repository only, per node role."""
        config = self._args
        for role, member in config.readers.items():
            gcp.artifactregistry.RepositoryIamMember(
                f"registry-reader-{role}",
                project=config.project,
                location=config.region,
                repository=self.repository.repository_id,
                role=REGISTRY_READER_ROLE,
                member=member,
                opts=pulumi.ResourceOptions(parent=self),
            )

    def _build(self, trainer: str) -> docker_build.Image:
        config = self._args
        repository = repository_path(config.region, config.project, config.images.repository)
        cache_path = repository_path(config.region, config.project, cache_repository(config.images.repository))
        cache = f"{cache_path}/{trainer}:{CACHE_TAG}"
        platforms = config.platforms.get(trainer, DEFAULT_PLATFORMS)
        return docker_build.Image(
            f"image-{trainer}",
            context=docker_build.BuildContextArgs(location="."),
            dockerfile=docker_build.DockerfileArgs(location=dockerfile(trainer)),
            platforms=[docker_build.Platform(platform) for platform in platforms],
            tags=[f"{repository}/{trainer}:{build_tag(trainer, cache, platforms=platforms)}"],
            push=True,
            # A preview of a multi-gigabyte CUDA image would take longer than the review it serves.
            build_on_preview=False,
            cache_from=[docker_build.CacheFromArgs(registry=docker_build.CacheFromRegistryArgs(ref=cache))],
            cache_to=[
                docker_build.CacheToArgs(
                    registry=docker_build.CacheToRegistryArgs(
                        ref=cache, mode=docker_build.CacheMode.MAX, image_manifest=True, oci_media_types=True
                    )
                )
            ],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.repository, self.cache, self.cache_writer]),
        )
