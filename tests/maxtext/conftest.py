"""Tests of the MaxText trainer; they run in .venv-maxtext (MaxText, JAX, Ray; no Pulumi, no torch)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: takes over a minute (a local Ray run or a compile)")


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT
