"""Tests of the MaxText fit check; like the trainer's, they run in .venv-maxtext (MaxText, JAX; no Pulumi)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]  # on sys.path through pyproject.toml's pythonpath


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT
