"""The trainers' code, delivered content-addressed: `workloads/` zipped byte-for-byte reproducibly into an
immutable ConfigMap named by the archive's hash.

Jobs mount the ConfigMap by that name, so editing a trainer changes the ConfigMap's name and, with it,
every job that runs it: the preview shows the code change as a change of the job. Pods see the archive as
a file: Ray takes it as a `file://` working_dir (nothing to fetch, no cloud-storage client in the image),
torchrun jobs unpack it. A ConfigMap (not a bucket object) keeps the delivery a plain Kubernetes object
that preflight schema-checks, with no local file paths in the plan; it holds up to 1 MiB, ample for source.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

# The folder holding Pulumi.yaml, wherever this module sits below it (a fixed parents[n] breaks on a move).
PROJECT_DIR = next(folder for folder in Path(__file__).resolve().parents if (folder / "Pulumi.yaml").is_file())
MOUNT_DIR = "/opt/trainyard/code"
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
    sha256: str
    data: bytes

    @property
    def config_map_name(self) -> str:
        return f"{PACKAGE}-{self.sha256[:16]}"


def shipped_files(root: Path) -> list[Path]:
    """The package's source files, sorted: no caches, no bytecode, no tests; none found is an error."""
    if not (root / PACKAGE / "__init__.py").is_file():
        raise FileNotFoundError(f"no {PACKAGE}/ package under {root}: the trainer code would ship empty")
    return sorted(
        path
        for path in (root / PACKAGE).rglob("*")
        if path.is_file() and path.suffix in SHIPPED_SUFFIXES and "__pycache__" not in path.parts
    )


def build_archive(root: Path = PROJECT_DIR) -> CodeArchive:
    """A zip whose bytes depend only on the files' paths and contents (fixed times and modes)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in shipped_files(root):
            entry = zipfile.ZipInfo(f"{TOP_LEVEL}/{path.relative_to(root).as_posix()}", date_time=_FIXED_TIME)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, path.read_bytes())
    data = buffer.getvalue()
    return CodeArchive(hashlib.sha256(data).hexdigest(), data)


class CodeTooLarge(ValueError):
    """The archive would not fit in a ConfigMap."""


class WorkloadCode(pulumi.ComponentResource):
    """`volume`/`mount` put the archive at `archive_path` in a pod."""

    archive: CodeArchive
    config_map: k8s.core.v1.ConfigMap

    def __init__(
        self,
        name: str,
        provider: k8s.Provider,
        namespace: k8s.core.v1.Namespace,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("trainyard:k8s:WorkloadCode", name, None, opts)
        self.archive = build_archive()
        if len(self.archive.data) > MAX_ARCHIVE_BYTES:
            raise CodeTooLarge(
                f"{PACKAGE}/ zips to {len(self.archive.data)} bytes (allowed: up to {MAX_ARCHIVE_BYTES}); "
                f"keep data and weights out of {PACKAGE}/ (shipped suffixes: {', '.join(SHIPPED_SUFFIXES)})"
            )
        self.config_map = k8s.core.v1.ConfigMap(
            self.archive.config_map_name,
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=self.archive.config_map_name,
                namespace=namespace.metadata.name,
                labels={"app.kubernetes.io/part-of": "trainyard"},
            ),
            binary_data={ARCHIVE_FILE: base64.b64encode(self.archive.data).decode()},
            immutable=True,
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[namespace]),
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
