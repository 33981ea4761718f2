"""Architectures of the open models a job may name, from their published configs: what a forecast counts.

Each entry is the model's `config.json` on the Hugging Face Hub, `https://huggingface.co/<id>/blob/main/config.json`
for the id it is keyed by (docs/cloud-facts.md, Model architectures, lists them with the parameter counts their
model cards publish, which tests/components/facts/test_models.py holds the table to). The forecast counts their
FLOPs with the trainer's own formula (workloads/fsdp/flops.py), so a forecast and the trainer's logged MFU count
the same work. A model not here is described by its job (`trainyard:jobs.fsdp[].architecture`).

Counted: every matmul weight, the input embedding (once where the output head shares it) and the norms' scales
(two per layer and a final one, as Llama's). Not counted: Qwen2.5's q/k/v biases, Gemma 2's two extra norms per
layer and Qwen3's q/k norms, each under 0.01 % of the model.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

MLP_PROJECTIONS = ("gate_proj", "up_proj", "down_proj")  # an MoE layer has them once per expert


@dataclass(frozen=True)
class ModelArchitecture:
    """A Llama-style decoder: grouped-query attention and a gated MLP (SwiGLU, Gemma's GeGLU) in every layer, or in an
    MoE layer `experts` such MLPs of which a router sends each token through `experts_per_token`."""

    hidden: int
    intermediate: int  # the MLP's width; in an MoE layer each expert's
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    head_dim: int = field(default=0)  # 0: hidden / heads (Gemma and Qwen3 set their own)
    experts: int = 1  # MLPs per layer: 1 for a dense model
    experts_per_token: int = 1
    tied_embeddings: bool = False  # the output head is the input embedding (Llama 3.2 1B and 3B, Gemma)

    def __post_init__(self) -> None:
        if not self.head_dim:
            object.__setattr__(self, "head_dim", self.hidden // self.heads)

    @property
    def moe(self) -> bool:
        return self.experts > 1

    @property
    def layer_params(self) -> float:
        """One decoder layer's weights, every expert's included: what FSDP2 gathers per layer."""
        return (self.params - self._embedding_params) / self.layers

    def _attention_params(self) -> int:
        return self.hidden * self.head_dim * (2 * self.heads + 2 * self.kv_heads)

    def _mlp_params(self, experts: int) -> int:
        router = self.hidden * self.experts if self.moe else 0
        return experts * 3 * self.hidden * self.intermediate + router

    def _matmul_params(self, experts: int) -> int:
        return self.layers * (self._attention_params() + self._mlp_params(experts)) + self.hidden * self.vocab

    @property
    def matmul_params(self) -> int:
        """Weights of every nn.Linear: q, k, v, o and each expert's gate, up, down per layer (and an MoE layer's
        router), and the output head, shared or not."""
        return self._matmul_params(self.experts)

    @property
    def active_matmul_params(self) -> int:
        """The matmul weights one token runs through: the experts it is routed to, not the others."""
        return self._matmul_params(self.experts_per_token)

    @property
    def _embedding_params(self) -> int:
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def _other_params(self) -> int:
        """The input embedding where the head does not share it, and the RMSNorm scales."""
        return (0 if self.tied_embeddings else self.vocab * self.hidden) + (2 * self.layers + 1) * self.hidden

    @property
    def params(self) -> int:
        """All weights, every expert's."""
        return self.matmul_params + self._other_params

    @property
    def active_params(self) -> int:
        """The weights one token uses: an MoE model's routed experts only (Mixtral 8x7B: 12.9B of 46.7B)."""
        return self.active_matmul_params + self._other_params

    def projection_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) features of each decoder layer's projections, by the module names LoRA targets; an MoE layer's
        MLP projections are each expert's."""
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

    def copies_per_layer(self, projection: str) -> int:
        return self.experts if projection in MLP_PROJECTIONS else 1

    def copies_per_token(self, projection: str) -> int:
        """How many of a projection one token runs through: its routed experts' for an MLP projection."""
        return self.experts_per_token if projection in MLP_PROJECTIONS else 1

    def lora_params(self, rank: int, targets: Iterable[str]) -> int:
        """LoRA's A (rank x in) and B (out x rank) on each targeted projection of every layer (every expert's)."""
        shapes = self.projection_shapes()
        return self.layers * sum(
            rank * sum(shapes[name]) * self.copies_per_layer(name) for name in targets if name in shapes
        )


def _llama3(hidden: int, intermediate: int, layers: int, heads: int, tied: bool = False) -> ModelArchitecture:
    return ModelArchitecture(hidden, intermediate, layers, heads, 8, 128256, tied_embeddings=tied)


def _gemma2(hidden: int, intermediate: int, layers: int, heads: int, kv_heads: int, head_dim: int) -> ModelArchitecture:
    return ModelArchitecture(hidden, intermediate, layers, heads, kv_heads, 256000, head_dim, tied_embeddings=True)


def _qwen(hidden: int, intermediate: int, layers: int, heads: int, vocab: int, **moe: int) -> ModelArchitecture:
    return ModelArchitecture(hidden, intermediate, layers, heads, moe.pop("kv_heads", 8), vocab, 128, **moe)


ARCHITECTURES: dict[str, ModelArchitecture] = {
    "meta-llama/Llama-3.2-1B": _llama3(2048, 8192, 16, 32, tied=True),
    "meta-llama/Llama-3.2-3B": _llama3(3072, 8192, 28, 24, tied=True),
    "meta-llama/Llama-3.1-8B": _llama3(4096, 14336, 32, 32),
    "meta-llama/Llama-3.1-70B": _llama3(8192, 28672, 80, 64),
    "meta-llama/Llama-3.3-70B-Instruct": _llama3(8192, 28672, 80, 64),
    "meta-llama/Llama-3.1-405B": _llama3(16384, 53248, 126, 128),
    "google/gemma-2-2b": _gemma2(2304, 9216, 26, 8, 4, 256),
    "google/gemma-2-9b": _gemma2(3584, 14336, 42, 16, 8, 256),
    "google/gemma-2-27b": _gemma2(4608, 36864, 46, 32, 16, 128),
    "Qwen/Qwen2.5-7B": _qwen(3584, 18944, 28, 28, 152064, kv_heads=4),
    "Qwen/Qwen2.5-14B": _qwen(5120, 13824, 48, 40, 152064),
    "Qwen/Qwen2.5-32B": _qwen(5120, 27648, 64, 40, 152064),
    "Qwen/Qwen2.5-72B": _qwen(8192, 29568, 80, 64, 152064),
    "Qwen/Qwen3-8B": _qwen(4096, 12288, 36, 32, 151936),
    "Qwen/Qwen3-14B": _qwen(5120, 17408, 40, 40, 151936),
    "Qwen/Qwen3-32B": _qwen(5120, 25600, 64, 64, 151936),
    "Qwen/Qwen3-30B-A3B": _qwen(2048, 768, 48, 32, 151936, kv_heads=4, experts=128, experts_per_token=8),
    "mistralai/Mistral-7B-v0.3": ModelArchitecture(4096, 14336, 32, 32, 8, 32768),
    "mistralai/Mixtral-8x7B-v0.1": ModelArchitecture(4096, 14336, 32, 32, 8, 32000, experts=8, experts_per_token=2),
    "mistralai/Mixtral-8x22B-v0.1": ModelArchitecture(6144, 16384, 56, 48, 8, 32000, experts=8, experts_per_token=2),
}


def known_architecture(model_id: str) -> ModelArchitecture | None:
    """The table's architecture of `model_id`, or of the base model an instruct release (`-Instruct`, Gemma's
    `-it`) was tuned from, whose architecture it keeps; None for a model not in the table."""
    for name in (model_id, model_id.replace("-Instruct", ""), model_id.removesuffix("-it")):
        if name in ARCHITECTURES:
            return ARCHITECTURES[name]
    return None
