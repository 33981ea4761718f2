"""The trainers' code, delivered content-addressed: `workloads/` zipped byte-for-byte reproducibly and
uploaded to the bucket under its own hash.

Jobs name the object by that hash, so editing a trainer changes the object's name and, with it, every job
that runs it: the preview shows the code change as a change of the job. Inside the cluster the bucket is
mounted at /data by GCS FUSE, so pods reach the archive as a file: Ray takes it as a `file://` working_dir
(no cloud-storage client needed in the image), torchrun jobs unpack it.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_gcp as gcp

PROJECT_DIR = Path(__file__).resolve().parents[1]
CACHE_DIR = PROJECT_DIR / ".cache" / "code"
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
    def object_name(self) -> str:
        return f"code/{PACKAGE}-{self.sha256[:16]}.zip"


def shipped_files(root: Path) -> list[Path]:
    """The package's source files, sorted: no caches, no bytecode, no tests."""
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


def cached_file(archive: CodeArchive, cache_dir: Path = CACHE_DIR) -> Path:
    """The archive on disk (the engine reads assets by path), written once per content."""
    path = cache_dir / f"{PACKAGE}-{archive.sha256}.zip"
    if not path.is_file():
        cache_dir.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_bytes(archive.data)
        partial.replace(path)
    return path


class WorkloadCode(pulumi.ComponentResource):
    """`path_in(mount)` is the archive inside a pod that mounts the bucket at `mount`."""

    archive: CodeArchive
    object: gcp.storage.BucketObject

    def __init__(self, name: str, bucket: gcp.storage.Bucket, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:k8s:WorkloadCode", name, None, opts)
        self.archive = build_archive()
        self.object = gcp.storage.BucketObject(
            self.archive.object_name,
            bucket=bucket.name,
            name=self.archive.object_name,
            source=pulumi.FileAsset(str(cached_file(self.archive))),
            content_type="application/zip",
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"object": self.object.name, "sha256": self.archive.sha256})

    def path_in(self, mount: str) -> str:
        return f"{mount.rstrip('/')}/{self.archive.object_name}"

    def ray_working_dir(self, mount: str) -> str:
        return f"file://{self.path_in(mount)}"
