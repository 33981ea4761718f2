"""Local mode: the same entrypoint on a local Ray cluster, CPU workers, a tiny model and synthetic data.

    python -m workloads.maxtext.local [--workers 2] [--steps 20] [--fail-once-at-step 7 --max-failures 1]
        [-- more MaxText key=value arguments]

Each worker is one JAX process with one CPU device, so the workers form a one-slice "1xN" topology and
MaxText's default ici_fsdp_parallelism=-1 shards the model across them.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from workloads.maxtext.cli import split_maxtext_args

# A two-layer Llama-style model MaxText trains on CPU in milliseconds per step. Synthetic batches are
# the same every step, so the loss falls quickly: a visible sign the optimizer works end to end.
TINY_MODEL_ARGS: tuple[str, ...] = (
    "hardware=cpu",
    "attention=dot_product",
    "dtype=float32",
    "dataset_type=synthetic",
    "base_emb_dim=64",
    "base_num_query_heads=4",
    "base_num_kv_heads=4",
    "base_mlp_dim=128",
    "base_num_decoder_layers=2",
    "head_dim=16",
    "vocab_size=256",
    "max_target_length=64",
    "per_device_batch_size=2",
    "learning_rate=1e-2",
    "enable_tensorboard=false",
    "enable_checkpointing=true",
    "async_checkpointing=false",
    # MaxText logs every one of its ~900 settings at INFO otherwise.
    "log_config=false",
)


def parse_flags(flags: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m workloads.maxtext.local", description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="Ray workers = JAX processes (one CPU each)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--checkpoint-period", type=int, default=5)
    parser.add_argument("--storage-path", help="default: a new folder under out/maxtext-local/")
    parser.add_argument("--name", default="tiny")
    parser.add_argument("--max-failures", type=int, default=0)
    parser.add_argument("--fail-once-at-step", type=int)
    return parser.parse_args(flags)


def train_argv(namespace: argparse.Namespace, extra_maxtext_args: Sequence[str]) -> list[str]:
    storage = namespace.storage_path or f"out/maxtext-local/{time.strftime('%Y%m%d-%H%M%S')}"
    argv = [
        "--accelerator-type", "CPU",
        "--topology", f"1x{namespace.workers}",
        "--slices", "1",
        "--hosts-per-slice", str(namespace.workers),
        "--chips-per-host", "1",
        "--storage-path", str(Path(storage).resolve()),
        "--name", namespace.name,
        "--max-failures", str(namespace.max_failures),
        "--worker-package", "none",
    ]  # fmt: skip
    if namespace.fail_once_at_step is not None:
        argv += ["--fail-once-at-step", str(namespace.fail_once_at_step)]
    maxtext_args = [*TINY_MODEL_ARGS, f"steps={namespace.steps}", f"checkpoint_period={namespace.checkpoint_period}"]
    return [*argv, "--", *maxtext_args, *extra_maxtext_args]


def require_token_auth() -> str:
    """Token authentication on, as on the cluster (KubeRay's authOptions): every Ray process of this run, and any
    client, must present RAY_AUTH_TOKEN. A fresh token per run unless one is set; never written to ~/.ray."""
    os.environ["RAY_AUTH_MODE"] = "token"
    return os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))


def start_local_ray(workers: int):
    """A local Ray cluster with token authentication; its RayContext (addresses, dashboard URL)."""
    # Set before Ray is imported: faster failure detection, and every worker's step lines shown
    # rather than folded into "[repeated Nx across cluster]".
    os.environ.setdefault("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "0.5")
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    require_token_auth()
    import ray

    return ray.init(num_cpus=workers, log_to_driver=True)


def main(argv: Sequence[str] | None = None) -> int:
    flags, extra_maxtext_args = split_maxtext_args(sys.argv[1:] if argv is None else argv)
    namespace = parse_flags(flags)
    start_local_ray(namespace.workers)
    from workloads.maxtext import train

    return train.main(train_argv(namespace, extra_maxtext_args))


if __name__ == "__main__":
    sys.exit(main())
