"""Build an offline stand-in for the cluster's inputs: a tiny Llama, its tokenizer and a text-to-SQL set.

The trainer then loads them through the same ``from_pretrained`` / ``load_dataset`` calls it uses
for hub ids, by local path. ``python -m workloads.fsdp.tiny --out DIR`` writes ``DIR/model`` and
``DIR/dataset``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from workloads.fsdp.data import to_messages
from workloads.fsdp.llama3_vocab import corpus_tokenizer
from workloads.fsdp.sample_data import generate_samples, write_jsonl_dataset

# Llama 3.1's layout, including the knowledge-date lines its template puts into the system turn, so a sample
# here is as long (in turns and headers) as the seed's Llama 3.1 sample.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n"
    "{% if message['role'] == 'system' %}Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n{% endif %}"
    "{{ message['content'] | trim }}<|eot_id|>{% endfor %}"
)


@dataclass(frozen=True)
class TinyModelShape:
    hidden_size: int = 64
    intermediate_size: int = 176
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2


def build_tokenizer(samples: list[dict[str, str]]):
    """Llama 3's tokenizer, restricted to what these samples need: their exact Llama 3 lengths, no download."""
    return corpus_tokenizer([to_messages(sample) for sample in samples], CHAT_TEMPLATE)


def build_tiny_model(tokenizer, shape: TinyModelShape, seed: int = 0):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=shape.hidden_size,
        intermediate_size=shape.intermediate_size,
        num_hidden_layers=shape.num_hidden_layers,
        num_attention_heads=shape.num_attention_heads,
        num_key_value_heads=shape.num_key_value_heads,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def build_tiny_fixture(
    out_dir: str | Path, num_samples: int = 600, shape: TinyModelShape = TinyModelShape(), seed: int = 0
) -> tuple[Path, Path]:
    """Write ``out_dir/model`` (config, weights, tokenizer) and ``out_dir/dataset/train.jsonl``."""
    out_dir = Path(out_dir)
    model_dir, dataset_dir = out_dir / "model", out_dir / "dataset"
    write_jsonl_dataset(dataset_dir, num_samples, seed)
    tokenizer = build_tokenizer(generate_samples(num_samples, seed))
    model = build_tiny_model(tokenizer, shape, seed)
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    return model_dir, dataset_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, help="directory to write model/ and dataset/ into")
    parser.add_argument("--samples", type=int, default=600, help="text-to-SQL samples to generate")
    parser.add_argument("--hidden-size", type=int, default=TinyModelShape.hidden_size)
    parser.add_argument("--layers", type=int, default=TinyModelShape.num_hidden_layers)
    args = parser.parse_args()
    shape = TinyModelShape(
        hidden_size=args.hidden_size, intermediate_size=args.hidden_size * 11 // 4, num_hidden_layers=args.layers
    )
    model_dir, dataset_dir = build_tiny_fixture(args.out, args.samples, shape)
    print(f"tiny model: {model_dir}\ntext-to-SQL set: {dataset_dir}")


if __name__ == "__main__":
    main()
