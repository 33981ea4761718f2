"""Architectures of MaxText's dense Llama-family models, from its model configs at the pinned release.

Copied from `maxtext/configs/models/<name>.yml` of the MaxText that components/facts/maxtext_models.txt pins
(base_emb_dim, base_mlp_dim, base_num_decoder_layers, base_num_query_heads, base_num_kv_heads, vocab_size; all
have head_dim = emb_dim / query heads and an untied output head, logits_via_embedding: false), so that preflight
can size a MaxText job without MaxText installed. tests/components/facts/test_maxtext_architectures.py compares
them with the installed configs where .venv-maxtext exists. Other models (MoE, Gemma, DeepSeek...) get no instant
estimate: `make fit-check` compiles them.
"""

from __future__ import annotations

from components.facts import topology
from components.facts.models import ModelArchitecture

# name -> (emb_dim, mlp_dim, decoder layers, query heads, kv heads, vocab)
_CONFIGS: dict[str, tuple[int, int, int, int, int, int]] = {
    "llama2-7b": (4096, 11008, 32, 32, 32, 32000),
    "llama2-13b": (5120, 13824, 40, 40, 40, 32000),
    "llama2-70b": (8192, 28672, 80, 64, 8, 32000),
    "llama3-8b": (4096, 14336, 32, 32, 8, 128256),
    "llama3-70b": (8192, 28672, 80, 64, 8, 128256),
    "llama3-405b": (16384, 53248, 126, 128, 8, 128256),
    "llama3.1-8b": (4096, 14336, 32, 32, 8, 128256),
    "llama3.1-70b": (8192, 28672, 80, 64, 8, 128256),
    "llama3.1-405b": (16384, 53248, 126, 128, 8, 128256),
    "llama3.3-70b": (8192, 28672, 80, 64, 8, 128256),
    "mistral-7b": (4096, 14336, 32, 32, 8, 32000),
}
# The yml keys, in _CONFIGS' order.
CONFIG_KEYS = (
    "base_emb_dim",
    "base_mlp_dim",
    "base_num_decoder_layers",
    "base_num_query_heads",
    "base_num_kv_heads",
    "vocab_size",
)

MAXTEXT_ARCHITECTURES: dict[str, ModelArchitecture] = {
    name: ModelArchitecture(hidden, mlp, layers, heads, kv_heads, vocab)
    for name, (hidden, mlp, layers, heads, kv_heads, vocab) in _CONFIGS.items()
}


def config_values(name: str) -> dict[str, int]:
    """The model's yml values this module copies, by MaxText's key."""
    return dict(zip(CONFIG_KEYS, _CONFIGS[name], strict=True))


# HBM a chip leaves a compiled program, per TPU generation (topology.TpuGeneration.usable_hbm_bytes_per_chip).
USABLE_HBM_BYTES_PER_CHIP: dict[str, float] = {
    name: generation.usable_hbm_bytes_per_chip
    for name, generation in topology.TPU_GENERATIONS.items()
    if generation.usable_hbm_bytes_per_chip
}
