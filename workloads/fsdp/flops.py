"""Honest training FLOPs: useful tokens only (padding is not work), attention included.

Per sample of ``t`` tokens: ``(4*N + 2*N_trainable) * t + 12*L*H*Q * t**2``, where N counts the weights of
every matmul a token runs through (nn.Linear, lm_head and an MoE layer's router included; embeddings and norms
are lookups and elementwise). An MoE layer's experts, stacked in one 3-D weight per projection (transformers 5),
count as the share a token is routed to: num_experts_per_tok of their num_local_experts (or num_experts). Full
fine-tuning gives the usual ``6N`` per token; LoRA ``4N + 6*N_lora`` (frozen weights need no weight
gradient). The attention term is QK^T and AV forward and backward, attending over the sample's own tokens:
the figure ``torch.utils.flop_counter`` reports with eager attention on unpadded rows.

No torch at import: the stack's forecast (components/forecast) counts with the same formula.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class FlopModel:
    matmul_params: int  # the matmul weights (and biases) a token runs through, frozen or not
    trainable_matmul_params: int
    layers: int
    heads: int
    head_dim: int

    @classmethod
    def from_model(cls, model, hf_config) -> FlopModel:
        from torch import nn

        routed = routed_share(hf_config)
        total = trainable = 0
        for module in model.modules():
            if isinstance(module, nn.Embedding):
                continue
            for param in module.parameters(recurse=False):
                if isinstance(module, nn.Linear) or param.ndim >= 2:  # a router's or stacked experts' weight
                    count = round(param.numel() * routed) if param.ndim == 3 else param.numel()
                    total += count
                    trainable += count if param.requires_grad else 0
        head_dim = getattr(hf_config, "head_dim", None) or hf_config.hidden_size // hf_config.num_attention_heads
        return cls(total, trainable, hf_config.num_hidden_layers, hf_config.num_attention_heads, head_dim)

    def training_flops(self, sample_lengths: Sequence[int]) -> float:
        per_token = 4 * self.matmul_params + 2 * self.trainable_matmul_params
        attention = 12 * self.layers * self.heads * self.head_dim
        return float(sum(per_token * t + attention * t * t for t in sample_lengths))

    def forward_flops(self, sample_lengths: Sequence[int]) -> float:
        attention = 4 * self.layers * self.heads * self.head_dim
        return float(sum(2 * self.matmul_params * t + attention * t * t for t in sample_lengths))


def routed_share(hf_config) -> float:
    """The share of an MoE layer's experts one token runs through; 1 for a dense model."""
    experts = getattr(hf_config, "num_local_experts", None) or getattr(hf_config, "num_experts", None)
    per_token = getattr(hf_config, "num_experts_per_tok", None)
    return per_token / experts if experts and per_token else 1.0
