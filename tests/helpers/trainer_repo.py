"""A tiny git repository with both trainers' packages committed, for tests of names derived from tracked files."""

from __future__ import annotations

import subprocess
from pathlib import Path

FILES = (
    "workloads/__init__.py",
    "workloads/fsdp/train.py",
    "workloads/fsdp/README.md",
    "workloads/fsdp/fsdp.mk",
    "workloads/fsdp/tiny.py",
    "workloads/maxtext/train.py",
    "workloads/maxtext/local.py",
)


def commit_tiny_trainers(root: Path) -> None:
    for name in FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name}\n")
    commit(root, "one")


def commit(root: Path, message: str) -> None:
    for args in (("init", "-q"), ("add", "."), ("commit", "-qm", message)):
        subprocess.run(
            ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com", *args], check=True
        )
