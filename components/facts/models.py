"""Architectures of the models the stack's jobs name, from their published configs: what a forecast counts.

Sources: each model's `config.json` on the Hugging Face Hub
(<https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json>,
<https://huggingface.co/meta-llama/Llama-3.1-70B/blob/main/config.json>) and the Llama 3 paper's table of
model sizes (<https://arxiv.org/abs/2407.21783>, Table 3). The forecast counts their FLOPs with the
trainer's own formula (workloads/fsdp/flops.py), so a forecast and the trainer's logged MFU count the same
work.
"""

from __future__ import annotations

from collections.abc import Iterable
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
    def layer_params(self) -> float:
        """One decoder layer's weights: the whole model less its embedding and output head, per layer."""
        return (self.params - 2 * self.vocab * self.hidden) / self.layers

    @property
    def matmul_params(self) -> int:
        """Weights of every nn.Linear: q, k, v, o and gate, up, down per layer, and the output head."""
        attention = self.hidden * self.head_dim * (2 * self.heads + 2 * self.kv_heads)
        mlp = 3 * self.hidden * self.intermediate
        return self.layers * (attention + mlp) + self.hidden * self.vocab

    def projection_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) features of each decoder layer's projections, by the module names LoRA targets."""
        kv = self.kv_heads * self.head_dim
        h, i = self.hidden, self.intermediate
        return {
            "q_proj": (h, self.heads * self.head_dim),
            "k_proj": (h, kv),
            "v_proj": (h, kv),
            "o_proj": (self.heads * self.head_dim, h),
            "gate_proj": (h, i),
            "up_proj": (h, i),
            "down_proj": (i, h),
        }

    def lora_params(self, rank: int, targets: Iterable[str]) -> int:
        """LoRA's A (rank x in) and B (out x rank) on each targeted projection of every layer."""
        shapes = self.projection_shapes()
        return self.layers * sum(rank * sum(shapes[name]) for name in targets if name in shapes)

    @property
    def params(self) -> int:
        """All weights: the matmuls, the input embedding and the RMSNorm scales (two per layer, one final)."""
        return self.matmul_params + self.vocab * self.hidden + (2 * self.layers + 1) * self.hidden


ARCHITECTURES: dict[str, ModelArchitecture] = {
    "meta-llama/Llama-3.1-8B": ModelArchitecture(4096, 14336, 32, 32, 8, 128256),
    "meta-llama/Llama-3.1-70B": ModelArchitecture(8192, 28672, 80, 64, 8, 128256),
}
