"""Fixtures of the forecast tests."""

from __future__ import annotations

import shutil

import pytest

from tests.helpers.plans import PROJECT_DIR
from tools.maxtext_fit.fit_cache import KEYED_FILES


@pytest.fixture
def fit_check_root(tmp_path):
    """A checkout with an empty fit-check cache: the files the cache key reads, and nothing cached."""
    for name in KEYED_FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PROJECT_DIR / name, tmp_path / name)
    return tmp_path
