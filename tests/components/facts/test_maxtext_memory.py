"""components/facts/maxtext_memory.py reads the pinned MaxText's model configs, and sizes only models it accepts."""

from __future__ import annotations

import pytest

from components.facts.maxtext import maxtext_settings
from components.facts.maxtext_memory import MAXTEXT_ARCHITECTURES


def test_every_model_sized_is_one_the_pinned_maxtext_accepts():
    assert set(MAXTEXT_ARCHITECTURES) <= maxtext_settings().model_names


@pytest.mark.parametrize("name", sorted(MAXTEXT_ARCHITECTURES))
def test_each_sized_model_is_dense_with_an_untied_head(name):
    config = maxtext_settings().model_config(name)
    assert config["head_dim"] == MAXTEXT_ARCHITECTURES[name].head_dim
    assert config.get("logits_via_embedding", False) is False  # an untied output head, as params counts
    assert config.get("num_experts", 1) == 1


def test_the_architectures_are_the_yml_values():
    llama = MAXTEXT_ARCHITECTURES["llama3.1-70b"]
    assert (llama.hidden, llama.intermediate, llama.layers, llama.heads, llama.kv_heads, llama.vocab) == (
        8192,
        28672,
        80,
        64,
        8,
        128256,
    )
