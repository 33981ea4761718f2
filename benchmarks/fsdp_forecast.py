"""The FSDP forecast (preflight/forecast/fsdp.py) against what is published, and the dev job's forecast.

No B200 FSDP figure is published, so the model is checked on H100s against torchtitan's Llama 3.1 runs
(benchmarks/llama3_h100_202412_torchtitan.md in https://github.com/pytorch/torchtitan, commit 9dec370 of
2024-12-26): Grand Teton hosts, 8 H100 on NVLink per host, 400 Gb/s RDMA per GPU; Llama 3.1 8B, sequence
8192 (train_configs/llama3_8b.toml at that commit), local batch 2, FSDP + torch.compile, selective
activation checkpointing.
- Table 1 (8 GPUs, one host: the parameter traffic hides under compute) calibrates COMPUTE_EFFICIENCY;
- Table 3 (128 GPUs, 16 hosts: the traffic crosses RDMA) is the check, forecast against published.
Their 70B figures (Table 4) use tensor parallelism and Float8, which the trainer does not: not comparable.

    .venv/bin/python benchmarks/fsdp_forecast.py
"""

from __future__ import annotations

import sys
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_DIR))

from components.config.load import load_stack_config
from components.facts.models import ARCHITECTURES
from preflight.engine.stack_files import read_stack_files
from preflight.forecast.fsdp import COMPUTE_EFFICIENCY, FsdpRun, Hardware, forecast
from preflight.forecast.report import stack_forecasts

# H100 SXM: 989 TFLOP/s dense bf16 (NVIDIA H100 datasheet); NVLink 4 at 900 GB/s per GPU, both directions.
# torchtitan's H100s ran at 500 W with HBM2e, below the SXM peak they (and this) divide by.
GRAND_TETON = Hardware("H100 (torchtitan)", 989e12, 8, 450e9, 50e9)
LLAMA_8B = ARCHITECTURES["meta-llama/Llama-3.1-8B"]
PUBLISHED = {1: 6667, 16: 6514}  # hosts -> tokens/s/GPU, FSDP + torch.compile, Tables 1 and 3


def run(hosts: int) -> FsdpRun:
    return FsdpRun(LLAMA_8B, hosts, rows_per_gpu=2, seq_len=8192, accumulation=1)


def main() -> None:
    one_host = forecast(run(1), GRAND_TETON, efficiency=1.0)
    calibrated = PUBLISHED[1] / one_host.tokens_per_s_per_gpu()
    print(
        f"calibration, 8 GPUs: published {PUBLISHED[1]:,} tokens/s/GPU = {calibrated:.3f} of peak model FLOP/s "
        f"(COMPUTE_EFFICIENCY in use: {COMPUTE_EFFICIENCY})"
    )
    for hosts, published in PUBLISHED.items():
        result = forecast(run(hosts), GRAND_TETON)
        estimate, best = result.tokens_per_s_per_gpu(), result.tokens_per_s_per_gpu(result.lower_bound_s)
        print(
            f"Llama 3.1 8B, {hosts * 8} H100: forecast {estimate:,.0f} tokens/s/GPU (bound {best:,.0f}), "
            f"published {published:,}, ratio {estimate / published:.3f}; {result.bound}-bound, "
            f"MFU {result.mfu():.1%}"
        )
    files = read_stack_files(PROJECT_DIR, "dev")
    for result in stack_forecasts(load_stack_config(files.config, "dev")):
        print("\n".join(result.lines()))


if __name__ == "__main__":
    main()
