"""Architectures of MaxText's dense Llama-family models, from its model configs at the pinned release.

Read from components/facts/maxtext_settings.json (each model's `maxtext/configs/models/<name>.yml` as the pinned
MaxText loads it; base_emb_dim, base_mlp_dim, base_num_decoder_layers, base_num_query_heads, base_num_kv_heads,
vocab_size), so that preflight can size a MaxText job without MaxText installed. Every model here has
head_dim = emb_dim / query heads and an untied output head (logits_via_embedding: false), which
tests/components/facts/test_maxtext_memory.py checks. Other models (MoE, Gemma, DeepSeek...) get no instant
estimate: `make fit-check` compiles them.
"""

from __future__ import annotations

from components.facts import topology
from components.facts.maxtext import maxtext_settings
from components.facts.models import ModelArchitecture

DENSE_LLAMA_FAMILY = (
    "llama2-7b",
    "llama2-13b",
    "llama2-70b",
    "llama3-8b",
    "llama3-70b",
    "llama3.1-8b",
    "llama3.1-70b",
    "llama3.1-405b",
    "llama3.3-70b",
    "mistral-7b",
)
# The yml keys, in ModelArchitecture's order.
CONFIG_KEYS = (
    "base_emb_dim",
    "base_mlp_dim",
    "base_num_decoder_layers",
    "base_num_query_heads",
    "base_num_kv_heads",
    "vocab_size",
)


def config_values(name: str) -> dict[str, int]:
    """The model's yml values the architecture reads, by MaxText's key."""
    config = maxtext_settings().model_config(name)
    return {key: int(config[key]) for key in CONFIG_KEYS}


MAXTEXT_ARCHITECTURES: dict[str, ModelArchitecture] = {
    name: ModelArchitecture(*config_values(name).values()) for name in DENSE_LLAMA_FAMILY
}


def usable_hbm_bytes_per_chip(generation: str) -> float:
    """HBM a chip leaves compiled programs (topology.TpuGeneration.usable_hbm_bytes_per_chip), read from the record
    when asked."""
    return topology.tpu_generation(generation).usable_hbm_bytes_per_chip
