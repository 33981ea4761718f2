"""Honest training FLOPs: useful tokens only (padding is not work), attention included.

Per sample of ``t`` tokens: ``(4*N + 2*N_trainable) * t + 12*L*H*Q * t**2``, where N counts the weights of
every matmul (nn.Linear, lm_head included; embeddings and norms are lookups and elementwise). Full
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
    matmul_params: int  # all nn.Linear weights (and biases), frozen or not
    trainable_matmul_params: int
    layers: int
    heads: int
    head_dim: int

    @classmethod
    def from_model(cls, model, hf_config) -> FlopModel:
        from torch import nn

        total = trainable = 0
        for module in model.modules():
            if isinstance(module, nn.Linear):
                for param in module.parameters(recurse=False):
                    total += param.numel()
                    trainable += param.numel() if param.requires_grad else 0
        head_dim = getattr(hf_config, "head_dim", None) or hf_config.hidden_size // hf_config.num_attention_heads
        return cls(total, trainable, hf_config.num_hidden_layers, hf_config.num_attention_heads, head_dim)

    def training_flops(self, sample_lengths: Sequence[int]) -> float:
        per_token = 4 * self.matmul_params + 2 * self.trainable_matmul_params
        attention = 12 * self.layers * self.heads * self.head_dim
        return float(sum(per_token * t + attention * t * t for t in sample_lengths))

    def forward_flops(self, sample_lengths: Sequence[int]) -> float:
        attention = 4 * self.layers * self.heads * self.head_dim
        return float(sum(2 * self.matmul_params * t + attention * t * t for t in sample_lengths))
