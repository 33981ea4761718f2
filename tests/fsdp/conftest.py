"""Fixtures for the FSDP trainer tests (run in ``.venv-fsdp``: torch, transformers, peft, datasets; no Pulumi).

Nothing touches the hub: the model, tokenizer and text-to-SQL set are built locally by
``workloads.fsdp.tiny`` and loaded through the trainer's own from_pretrained/load_dataset calls.
"""

from __future__ import annotations

import os

import pytest
from fsdp_helpers import OFFLINE_ENV, TinyFixture

os.environ.update(OFFLINE_ENV)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", help="also run tests marked slow")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: longer than CI's budget for the FSDP suite; run with --run-slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: pass --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyFixture:
    from workloads.fsdp.tiny import build_tiny_fixture

    model_dir, dataset_dir = build_tiny_fixture(tmp_path_factory.mktemp("tiny"), num_samples=600)
    return TinyFixture(model_dir, dataset_dir)
