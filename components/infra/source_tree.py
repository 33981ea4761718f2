"""What goes into a build: the git-tracked files under some paths, and one hash of their contents.

Names derived from this hash change exactly when a tracked file's path or bytes change: not when a file is
touched, recompressed or left untracked beside the code (a scratch file renames nothing).
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

# The folder holding Pulumi.yaml, wherever this module sits below it (a fixed parents[n] breaks on a move).
PROJECT_DIR = next(folder for folder in Path(__file__).resolve().parents if (folder / "Pulumi.yaml").is_file())


def tracked_files(root: Path, paths: tuple[str, ...]) -> list[str]:
    """The files git tracks under `paths` (relative to `root`), as sorted POSIX paths; outside a git work tree
    (an unpacked archive), every file there but caches and bytecode."""
    try:
        listing = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--", *paths], check=True, capture_output=True
        ).stdout
    except (FileNotFoundError, subprocess.CalledProcessError):
        return _files_on_disk(root, paths)
    return sorted(name for name in listing.decode().split("\0") if name)


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
    """What a trainer's image and code archive hold: the package marker and the trainer's folder."""
    return ("workloads/__init__.py", f"workloads/{trainer}")
