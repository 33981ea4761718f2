"""A tiny git repository with both trainers' packages committed, for tests of names derived from tracked files."""

from __future__ import annotations

import subprocess
from pathlib import Path

FILES = ("workloads/__init__.py", "workloads/fsdp/train.py", "workloads/maxtext/train.py")


def commit_tiny_trainers(root: Path) -> None:
    for name in FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name}\n")
    for args in (("init", "-q"), ("add", "."), ("commit", "-qm", "one")):
        subprocess.run(
            ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com", *args], check=True
        )
