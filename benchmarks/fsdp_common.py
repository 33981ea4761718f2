"""Shared set-up for the FSDP benchmarks: offline assets, a config, the trainer's own Job, timing helpers.

Run the scripts from the repository root with the FSDP venv, e.g.
``.venv-fsdp/bin/python benchmarks/fsdp_packing.py`` (one process, gloo, CPU). They also run under
``torchrun`` unchanged.
"""

from __future__ import annotations

import hashlib
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for `workloads`
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch

from workloads.fsdp.builder import Job, build_job
from workloads.fsdp.config import TrainConfig, parse_config
from workloads.fsdp.distributed import DistInfo, init_distributed
from workloads.fsdp.tiny import TinyModelShape, build_tiny_fixture

# One intra-op thread, as torchrun gives each worker: with more, OpenMP spin-waits make small ops on a shared
# 2-core machine erratic (measured: AdamW step 28 ms with 1 thread, 1.4 s with 2 under load).
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))

CACHE = Path(__file__).resolve().parents[1] / ".cache" / "fsdp-bench"
FSDP_DIR = Path(__file__).resolve().parents[1] / "workloads" / "fsdp"
BENCH_SHAPE = TinyModelShape(
    hidden_size=256, intermediate_size=704, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2
)


def _fixture_fingerprint() -> str:
    """Changes whenever the code that generates the model, tokenizer or data does, so a stale cache is rebuilt."""
    sources = ("tiny.py", "sample_data.py", "llama3_vocab.py", "data.py")
    digest = hashlib.sha256(b"".join((FSDP_DIR / name).read_bytes() for name in sources))
    return digest.hexdigest()[:10]


def bench_assets(shape: TinyModelShape = BENCH_SHAPE, samples: int = 1200) -> tuple[Path, Path]:
    root = CACHE / f"h{shape.hidden_size}-l{shape.num_hidden_layers}-n{samples}-{_fixture_fingerprint()}"
    if not (root / "model" / "config.json").exists():
        build_tiny_fixture(root, num_samples=samples, shape=shape)
    return root / "model", root / "dataset"


def bench_config(out_dir: Path, shape: TinyModelShape = BENCH_SHAPE, **overrides) -> TrainConfig:
    model_dir, dataset_dir = bench_assets(shape)
    flags = {
        "model_id": model_dir,
        "dataset_id": dataset_dir,
        "output_dir": out_dir,
        "max_seq_length": 512,
        "per_device_train_batch_size": 4,
        "gradient_accumulation_steps": 1,
        "compile": "false",
        "mixed_precision": "fp32",
        "param_dtype": "fp32",
        "max_steps": 1000,
        "warmup_ratio": 0,
        "progress": "off",
        "dist_timeout_s": 600,
        "checkpoint_epochs": 0,
    }
    flags.update(overrides)
    return parse_config([f"--{key.replace('_', '-')}={value}" for key, value in flags.items()], environ={})


_INFO: DistInfo | None = None


def job_for(config: TrainConfig) -> Job:
    global _INFO
    if _INFO is None:
        _INFO = init_distributed(config.dist_timeout_s)
    return build_job(config, _INFO)


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def median(values: list[float]) -> float:
    return statistics.median(values)


def say(line: str) -> None:
    if _INFO is None or _INFO.is_main:
        print(line, flush=True)
