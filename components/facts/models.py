"""Architectures of the models the stack's jobs name, from their published configs: what a forecast counts.

Sources: each model's `config.json` on the Hugging Face Hub
(<https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json>,
<https://huggingface.co/meta-llama/Llama-3.1-70B/blob/main/config.json>) and the Llama 3 paper's table of
model sizes (<https://arxiv.org/abs/2407.21783>, Table 3). The forecast counts their FLOPs with the
trainer's own formula (workloads/fsdp/flops.py), so a forecast and the trainer's logged MFU count the same
work.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelArchitecture:
    """A Llama-style decoder: grouped-query attention, a SwiGLU MLP, an untied output head."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def matmul_params(self) -> int:
        """Weights of every nn.Linear: q, k, v, o and gate, up, down per layer, and the output head."""
        attention = self.hidden * self.head_dim * (2 * self.heads + 2 * self.kv_heads)
        mlp = 3 * self.hidden * self.intermediate
        return self.layers * (attention + mlp) + self.hidden * self.vocab

    @property
    def params(self) -> int:
        """All weights: the matmuls, the input embedding and the RMSNorm scales (two per layer, one final)."""
        return self.matmul_params + self.vocab * self.hidden + (2 * self.layers + 1) * self.hidden


ARCHITECTURES: dict[str, ModelArchitecture] = {
    "meta-llama/Llama-3.1-8B": ModelArchitecture(4096, 14336, 32, 32, 8, 128256),
    "meta-llama/Llama-3.1-70B": ModelArchitecture(8192, 28672, 80, 64, 8, 128256),
}
