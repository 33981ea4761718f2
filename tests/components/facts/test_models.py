"""The model table against what each model's card publishes: total and, for MoE, active parameters."""

from __future__ import annotations

import pytest

from components.facts.models import ARCHITECTURES, known_architecture

# Each model card's figure (docs/cloud-facts.md, Model architectures), in billions: (total, active).
PUBLISHED_BILLIONS = {
    "meta-llama/Llama-3.2-1B": (1.24, None),
    "meta-llama/Llama-3.2-3B": (3.21, None),
    "meta-llama/Llama-3.1-8B": (8.03, None),
    "meta-llama/Llama-3.1-70B": (70.6, None),
    "meta-llama/Llama-3.3-70B-Instruct": (70.6, None),
    "meta-llama/Llama-3.1-405B": (406, None),
    "google/gemma-2-2b": (2.61, None),
    "google/gemma-2-9b": (9.24, None),
    "google/gemma-2-27b": (27.2, None),
    "Qwen/Qwen2.5-7B": (7.61, None),
    "Qwen/Qwen2.5-14B": (14.7, None),
    "Qwen/Qwen2.5-32B": (32.5, None),
    "Qwen/Qwen2.5-72B": (72.7, None),
    "Qwen/Qwen3-8B": (8.2, None),
    "Qwen/Qwen3-14B": (14.8, None),
    "Qwen/Qwen3-32B": (32.8, None),
    "Qwen/Qwen3-30B-A3B": (30.5, 3.3),
    "mistralai/Mistral-7B-v0.3": (7.25, None),
    "mistralai/Mixtral-8x7B-v0.1": (46.7, 12.9),
    "mistralai/Mixtral-8x22B-v0.1": (141, 39),
}


def test_every_model_of_the_table_is_held_to_its_published_size():
    assert set(PUBLISHED_BILLIONS) == set(ARCHITECTURES)


@pytest.mark.parametrize("model", sorted(PUBLISHED_BILLIONS))
def test_parameter_counts_match_the_model_cards(model):
    total, active = PUBLISHED_BILLIONS[model]
    arch = ARCHITECTURES[model]
    assert arch.params / 1e9 == pytest.approx(total, rel=0.01)
    assert arch.active_params / 1e9 == pytest.approx(active or total, rel=0.02)
    assert (arch.active_params < arch.params) == arch.moe


def test_the_issues_figures_to_the_published_precision():
    assert ARCHITECTURES["meta-llama/Llama-3.1-8B"].params == pytest.approx(8.03e9, rel=1e-3)
    assert ARCHITECTURES["meta-llama/Llama-3.1-70B"].params == pytest.approx(70.55e9, rel=1e-3)
    assert ARCHITECTURES["meta-llama/Llama-3.2-1B"].params == pytest.approx(1.236e9, rel=1e-3)
    mixtral = ARCHITECTURES["mistralai/Mixtral-8x7B-v0.1"]
    assert mixtral.params == pytest.approx(46.7e9, rel=1e-3) and mixtral.active_params == pytest.approx(
        12.9e9, rel=2e-3
    )


def test_a_tied_head_is_counted_once_and_a_head_dim_of_its_own_is_kept():
    llama_1b = ARCHITECTURES["meta-llama/Llama-3.2-1B"]
    untied = type(llama_1b)(**{**llama_1b.__dict__, "tied_embeddings": False})
    assert untied.params - llama_1b.params == 128256 * 2048
    assert untied.matmul_params == llama_1b.matmul_params  # the head is a matmul either way
    assert ARCHITECTURES["Qwen/Qwen3-32B"].head_dim == 128 != 5120 // 64
    assert ARCHITECTURES["google/gemma-2-9b"].head_dim == 256


def test_an_instruct_release_has_its_base_models_architecture():
    assert known_architecture("meta-llama/Llama-3.1-8B-Instruct") is ARCHITECTURES["meta-llama/Llama-3.1-8B"]
    assert known_architecture("mistralai/Mixtral-8x7B-Instruct-v0.1") is ARCHITECTURES["mistralai/Mixtral-8x7B-v0.1"]
    assert known_architecture("google/gemma-2-9b-it") is ARCHITECTURES["google/gemma-2-9b"]
    assert known_architecture("/models/my-own") is None
