"""What goes into a build: the git-tracked files under some paths, and one hash of their contents.

Names derived from this hash change exactly when a tracked file's path or bytes change: not when a file is
touched, recompressed or left untracked beside the code (a scratch file renames nothing).
"""

from __future__ import annotations

import hashlib
import subprocess
from fnmatch import fnmatch
from pathlib import Path

# The folder holding Pulumi.yaml, wherever this module sits below it (a fixed parents[n] breaks on a move).
PROJECT_DIR = next(folder for folder in Path(__file__).resolve().parents if (folder / "Pulumi.yaml").is_file())


def tracked_files(root: Path, paths: tuple[str, ...], excluded: tuple[str, ...] = ()) -> list[str]:
    """The files git tracks under `paths` (relative to `root`) but not under `excluded`, as sorted POSIX paths;
    outside a git work tree (an unpacked archive), every such file there but caches and bytecode."""
    try:
        pathspecs = [*paths, *(f":(exclude){path}" for path in excluded)]
        listing = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--", *pathspecs], check=True, capture_output=True
        ).stdout
        files = [name for name in listing.decode().split("\0") if name]
    except (FileNotFoundError, subprocess.CalledProcessError):
        files = _files_on_disk(root, paths)
    return sorted(name for name in files if not any(fnmatch(name, path) for path in excluded))


def _files_on_disk(root: Path, paths: tuple[str, ...]) -> list[str]:
    found = set()
    for path in paths:
        start = root / path
        candidates = [start] if start.is_file() else start.rglob("*")
        found.update(
            candidate.relative_to(root).as_posix()
            for candidate in candidates
            if candidate.is_file() and "__pycache__" not in candidate.parts and candidate.suffix != ".pyc"
        )
    return sorted(found)


def content_hash(root: Path, files: list[str]) -> str:
    """sha256 over each file's path and bytes, in order; a missing tracked file (deleted, not yet staged)
    counts as absent."""
    digest = hashlib.sha256()
    for name in files:
        path = root / name
        if not path.is_file():
            continue
        data = path.read_bytes()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def trainer_paths(trainer: str) -> tuple[str, ...]:
    """What a trainer's image and code archive hold: the package marker and the trainer's folder..."""
    return ("workloads/__init__.py", f"workloads/{trainer}")


# ...but for what never runs in the cluster: its docs, its make fragment and the local stand-ins (a tiny model with
# its cut-down tokenizer, generated data, the local Ray rehearsal), so editing them rolls no image and no job.
# Workstation tools live outside workloads/ (tools/: the MaxText fit check). tests/components/infra/
# test_deployed_files.py holds what is left to the import closure of the modules the jobs start, plus the build files.
_LOCAL_ONLY = {
    "fsdp": ("README.md", "*.mk", "tiny.py", "sample_data.py", "llama3_vocab.py", "requirements-local.txt"),
    "maxtext": ("README.md", "*.mk", "local.py"),
}


def local_only_paths(trainer: str) -> tuple[str, ...]:
    """The trainer's files that stay out of its image and code archive (git pathspec and fnmatch patterns)."""
    return tuple(f"workloads/{trainer}/{name}" for name in _LOCAL_ONLY.get(trainer, ()))


def deployed_files(root: Path, trainer: str) -> list[str]:
    """The tracked files a trainer's image and code archive are built from."""
    return tracked_files(root, trainer_paths(trainer), local_only_paths(trainer))
