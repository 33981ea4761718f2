"""A trainer's code, delivered content-addressed: its git-tracked source zipped byte-for-byte reproducibly
into an immutable ConfigMap named by the trainer and the hash of those files' contents.

Jobs mount the ConfigMap by that name, so editing a trainer changes its ConfigMap's name and, with it, the
jobs that run that trainer, and no others: the preview shows the code change as a change of those jobs.
The name hashes the tracked files' paths and bytes (not the zip, not untracked scratch files). Pods see the
archive as a file: Ray takes it as a `file://` working_dir (nothing to fetch, no cloud-storage client in the
image), torchrun jobs unpack it. A ConfigMap (not a bucket object) keeps the delivery a plain Kubernetes
object that preflight schema-checks, with no local file paths in the plan; it holds up to 1 MiB, ample for
source.
"""

from __future__ import annotations

import base64
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from components.infra.source_tree import PROJECT_DIR, content_hash, deployed_files

MOUNT_DIR = "/opt/trainyard/code"
CODE_LABEL = "trainyard/code"  # the trainer whose archive a ConfigMap holds: what a cleanup selects
ARCHIVE_FILE = "workloads.zip"
# The API server refuses objects over 1 MiB; base64 grows the archive by a third.
MAX_ARCHIVE_BYTES = 700 * 1024
# Ray unpacks a working_dir archive by dropping its single top-level folder; the package sits under it.
TOP_LEVEL = "trainyard"
PACKAGE = "workloads"
SHIPPED_SUFFIXES = (".py", ".txt", ".yaml", ".yml", ".json", ".txtpb")
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class CodeArchive:
    trainer: str
    sha256: str  # of the shipped files' paths and contents
    data: bytes

    @property
    def config_map_name(self) -> str:
        return f"{PACKAGE}-{self.trainer}-{self.sha256[:16]}"


def shipped_files(root: Path, trainer: str) -> list[str]:
    """The trainer's tracked source files, sorted: no data, no caches; no package found is an error."""
    files = [name for name in deployed_files(root, trainer) if Path(name).suffix in SHIPPED_SUFFIXES]
    if f"{PACKAGE}/__init__.py" not in files or not (root / PACKAGE / "__init__.py").is_file():
        raise FileNotFoundError(f"no {PACKAGE}/ package under {root}: the trainer code would ship empty")
    return [name for name in files if (root / name).is_file()]


def build_archive(trainer: str, root: Path = PROJECT_DIR) -> CodeArchive:
    """A zip whose bytes depend only on the files' paths and contents (fixed times and modes)."""
    files = shipped_files(root, trainer)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in files:
            entry = zipfile.ZipInfo(f"{TOP_LEVEL}/{name}", date_time=_FIXED_TIME)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, (root / name).read_bytes())
    return CodeArchive(trainer, content_hash(root, files), buffer.getvalue())


class CodeTooLarge(ValueError):
    """The archive would not fit in a ConfigMap."""


@dataclass(frozen=True)
class WorkloadCodeArgs:
    trainer: str  # workloads/<trainer>
    namespace: k8s.core.v1.Namespace
    provider: k8s.Provider


class WorkloadCode(pulumi.ComponentResource):
    """`volume`/`mount` put the archive at `archive_path` in a pod."""

    archive: CodeArchive
    config_map: k8s.core.v1.ConfigMap

    def __init__(self, name: str, args: WorkloadCodeArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:k8s:WorkloadCode", name, None, opts)
        trainer, namespace = args.trainer, args.namespace
        self.archive = build_archive(trainer)
        if len(self.archive.data) > MAX_ARCHIVE_BYTES:
            raise CodeTooLarge(
                f"{PACKAGE}/{trainer} zips to {len(self.archive.data)} bytes (allowed: up to {MAX_ARCHIVE_BYTES}); "
                f"keep data and weights out of {PACKAGE}/ (shipped suffixes: {', '.join(SHIPPED_SUFFIXES)})"
            )
        self.config_map = k8s.core.v1.ConfigMap(
            self.archive.config_map_name,
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=self.archive.config_map_name,
                namespace=namespace.metadata.name,
                labels={"app.kubernetes.io/part-of": "trainyard", CODE_LABEL: trainer},
            ),
            binary_data={ARCHIVE_FILE: base64.b64encode(self.archive.data).decode()},
            immutable=True,
            # A superseded job revision keeps running on the code it started with: its pods mount this by name at
            # every (re)start, so a new revision's archive leaves this one in the cluster rather than deleting it.
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.provider, depends_on=[namespace], retain_on_delete=True
            ),
        )
        self.register_outputs({"configMap": self.archive.config_map_name, "sha256": self.archive.sha256})

    @property
    def archive_path(self) -> str:
        return f"{MOUNT_DIR}/{ARCHIVE_FILE}"

    @property
    def ray_working_dir(self) -> str:
        return f"file://{self.archive_path}"

    def volume(self) -> dict:
        """The pod volume, in the API's camelCase (typed pods wrap it with VolumeArgs)."""
        return {"name": "trainyard-code", "configMap": {"name": self.archive.config_map_name}}

    def mount(self) -> dict:
        return {"name": "trainyard-code", "mountPath": MOUNT_DIR, "readOnly": True}
