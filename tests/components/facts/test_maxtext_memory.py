"""components.facts.maxtext_memory.py agrees with the model configs of the MaxText the trainer pins."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from components.facts.maxtext import maxtext_models
from components.facts.maxtext_memory import MAXTEXT_ARCHITECTURES, config_values

REPO = Path(__file__).resolve().parents[3]
INSTALLED = sorted(REPO.glob(".venv-maxtext/lib/python3*/site-packages/maxtext/configs/models"))


def test_every_copied_model_is_one_the_pinned_maxtext_defines():
    _, names = maxtext_models()
    assert set(MAXTEXT_ARCHITECTURES) <= names


@pytest.mark.skipif(not INSTALLED, reason="no .venv-maxtext here (make test-maxtext installs it)")
@pytest.mark.parametrize("name", sorted(MAXTEXT_ARCHITECTURES))
def test_the_copy_matches_the_installed_config(name):
    installed = yaml.safe_load((INSTALLED[0] / f"{name}.yml").read_text())
    assert {key: installed[key] for key in config_values(name)} == config_values(name)
    assert installed["head_dim"] == MAXTEXT_ARCHITECTURES[name].head_dim
    assert installed.get("logits_via_embedding", False) is False  # an untied output head, as params counts
    assert installed.get("num_experts", 1) == 1
