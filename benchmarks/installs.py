"""What the install benchmarks share: running a command and weighing a folder."""

from __future__ import annotations

import subprocess
from pathlib import Path


def run(*command: str | Path) -> str:
    return subprocess.run([str(part) for part in command], check=True, capture_output=True, text=True).stdout


def tree_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())
