"""Dataset preparation: chat-format, tokenize, drop over-long samples, split; rank 0 once, cached on disk.

Works on a Hugging Face dataset id in the cluster and on a local directory (e.g. ``train.jsonl``)
anywhere; both go through ``datasets.load_dataset``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass

from workloads.fsdp.config import TrainConfig
from workloads.fsdp.distributed import DistInfo, main_process_first

SYSTEM_PROMPT = (
    "You are a text to SQL query translator. Users will ask you questions in English and you will generate "
    "a SQL query based on the provided SCHEMA.\nSCHEMA:\n{schema}"
)
PREPARED_FORMAT_VERSION = 1


@dataclass
class TokenizedSplits:
    train: list[list[int]]
    test: list[list[int]]


def to_messages(sample: dict) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT.format(schema=sample["sql_context"])},
        {"role": "user", "content": sample["sql_prompt"]},
        {"role": "assistant", "content": sample["sql"]},
    ]


def encode_sample(tokenizer, sample: dict) -> list[int]:
    """Token ids of one conversation; a plain prompt format when the tokenizer has no chat template."""
    if tokenizer.chat_template:
        return list(tokenizer.apply_chat_template(to_messages(sample), tokenize=True, return_dict=False))
    text = (
        f"{SYSTEM_PROMPT.format(schema=sample['sql_context'])}\n\n### Question:\n{sample['sql_prompt']}"
        f"\n\n### SQL:\n{sample['sql']}"
    )
    ids = tokenizer(text, add_special_tokens=True)["input_ids"]
    return ids + [tokenizer.eos_token_id]


def load_tokenizer(config: TrainConfig):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(config.tokenizer_id or config.model_id, token=os.environ.get("HF_TOKEN"))


def pad_token_id(tokenizer) -> int:
    if tokenizer.pad_token_id is not None:
        return tokenizer.pad_token_id
    return tokenizer.eos_token_id


def _cache_key(config: TrainConfig, tokenizer) -> str:
    """Anything that changes the prepared tokens changes the directory, so a stale cache is never read."""
    facts = {
        "dataset": config.dataset_id,
        "split": config.dataset_split,
        "samples": config.train_sample_size,
        "test_size": config.test_size,
        "seed": config.dataset_seed,
        "max_len": config.max_seq_length,
        "tokenizer": tokenizer.name_or_path,
        "vocab": len(tokenizer),
        "template": tokenizer.chat_template,
        "format": PREPARED_FORMAT_VERSION,
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def _build_prepared(config: TrainConfig, tokenizer, target: str) -> None:
    from datasets import load_dataset

    raw = load_dataset(config.dataset_id, split=config.dataset_split, token=os.environ.get("HF_TOKEN"))
    raw = raw.shuffle(seed=config.dataset_seed).select(range(min(config.train_sample_size, len(raw))))
    tokenized = raw.map(
        lambda sample: {"input_ids": encode_sample(tokenizer, sample)},
        remove_columns=raw.column_names,
        desc="tokenizing",
    )
    kept = tokenized.filter(lambda row: len(row["input_ids"]) <= config.max_seq_length, desc="length filter")
    if len(kept) < 2:
        raise ValueError(
            f"--dataset-id {config.dataset_id!r}: only {len(kept)} samples fit "
            f"--max-seq-length {config.max_seq_length}; need at least 2 to split"
        )
    splits = kept.train_test_split(test_size=config.test_size, seed=config.dataset_seed)
    staging = target + ".tmp"
    shutil.rmtree(staging, ignore_errors=True)
    splits.save_to_disk(staging)
    os.replace(staging, target)  # atomic: a half-written cache is never picked up


def prepare_splits(config: TrainConfig, tokenizer, info: DistInfo) -> TokenizedSplits:
    from datasets import load_from_disk

    target = os.path.join(config.prepared_dir, f"text2sql-{_cache_key(config, tokenizer)}")
    with main_process_first(info):
        if info.is_main and not os.path.isdir(target):
            os.makedirs(config.prepared_dir, exist_ok=True)
            _build_prepared(config, tokenizer, target)
    prepared = load_from_disk(target)
    return TokenizedSplits(train=list(prepared["train"]["input_ids"]), test=list(prepared["test"]["input_ids"]))
