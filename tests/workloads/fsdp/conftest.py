"""Fixtures for the FSDP trainer tests (run in ``.venv-fsdp``: torch, transformers, peft, datasets; no Pulumi).

Nothing touches the hub: the model, tokenizer and text-to-SQL set are built locally by
``workloads.fsdp.tiny`` and loaded through the trainer's own from_pretrained/load_dataset calls.
Slow tests follow the project's convention (pyproject: ``-m 'not slow'`` by default; ``-m slow`` runs them).
"""

from __future__ import annotations

import os

import pytest
from fsdp_helpers import OFFLINE_ENV, TinyFixture

os.environ.update(OFFLINE_ENV)


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyFixture:
    from workloads.fsdp.tiny import build_tiny_fixture

    model_dir, dataset_dir = build_tiny_fixture(tmp_path_factory.mktemp("tiny"), num_samples=600)
    return TinyFixture(model_dir, dataset_dir)
