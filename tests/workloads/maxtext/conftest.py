"""Tests of the MaxText trainer; they run in .venv-maxtext (MaxText, JAX, Ray; no Pulumi, no torch)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]  # on sys.path through pyproject.toml's pythonpath


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT
