"""The FSDP forecast (preflight/forecast/fsdp.py) against what is published, per GPU generation, and the dev job.

Every anchor is a torchtitan FSDP2 run with per-op selective activation checkpointing (its `_save_list` policy,
modelled as preflight/forecast/fsdp.py's Checkpointing.PER_OP), bf16 compute, fp32 parameters and AdamW state,
compiled with torch.compile unless it says eager:
- H100: torchtitan's Llama 3.1 8B runs (benchmarks/llama3_h100_202412_torchtitan.md in pytorch/torchtitan,
  commit 9dec370 of 2024-12-26): Grand Teton hosts, 8 H100 (500 W, 96 GB HBM2e) on NVLink per host, 400 Gb/s
  RDMA per GPU, sequence 8192, local batch 2. Table 1 (8 GPUs) calibrates: its compiled run the efficiency, its
  eager run (5,762 against 6,667 tokens/s/GPU) the eager factor; Table 3 (128 GPUs, traffic over RDMA; 5,605
  eager, 6,514 compiled) is the check of both.
- B200: the bf16 baseline of torchtitan's MXFP8 page (torchtitan/components/quantization/mxfp8.md, from
  torchao's prototype/mx_formats benchmarks; torchtitan commit 6fc499f): Llama 3 8B on 8 B200 held to 750 W
  (the README's first wording, pytorch/ao d8bb51f, says "limited to 750W"; later "power limited"), local batch 1,
  sequence 8192, 8,307.5 median tokens/s/GPU, 33.71 GB peak. It calibrates B200: the only published B200 run
  whose settings are all stated. The check is torchtitan PR #1196's "before" line (2025-05-14, merged as
  3b85aa3): step 70 of the default Llama 3 8B config at that commit (local batch 1, sequence 8192, per-op SAC, no
  torch.compile), flash attention, 10,902 tokens/s/GPU, 46.39 GiB at 26.01 % of a 178 GiB B200; its power limit is
  not stated (NVIDIA's default for HGX B200 is 1,000 W). The forecast at the 750 W efficiency is expected to
  fall short of it: by how much says what the power limit is worth.
The efficiency each run implies is derived here; preflight/forecast/calibration.py holds the figures in use.
torchtitan's 70B figures use tensor parallelism and Float8, which the trainer does not: not compared.

    .venv/bin/python benchmarks/fsdp_forecast.py
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_DIR))

from components.config.load import load_stack_config
from components.config.models import StackConfig
from components.facts import cost
from components.facts.gpu_machines import A4_MACHINE_TYPE, gpu_machine
from components.facts.models import ARCHITECTURES
from preflight.engine.stack_files import read_stack_files
from preflight.forecast.calibration import gpu_calibration
from preflight.forecast.fsdp import Checkpointing, FsdpRun, Hardware, forecast, memory
from preflight.forecast.fsdp_jobs import FsdpJobForecast, job_forecast, pool_hardware_of
from preflight.forecast.priced import NoForecast
from preflight.forecast.report import stack_forecasts

GIB = 2**30
# H100 SXM: 989 TFLOP/s dense bf16 (NVIDIA H100 datasheet); NVLink 4 at 900 GB/s per GPU, both directions.
# torchtitan's H100s ran at 500 W with 96 GB of HBM2e, below the SXM peak they (and this) divide by.
GRAND_TETON = Hardware("nvidia-h100", 989e12, 8, 450e9, 50e9, 96e9)
# HGX B200 (NVIDIA: 2.25 PFLOP/s dense bf16 at 1,000 W): the A4 machine's facts. A4 publishes no power limit.
B200_NODE = pool_hardware_of(gpu_machine(A4_MACHINE_TYPE))


@dataclass(frozen=True)
class Anchor:
    name: str
    hardware: Hardware
    run: FsdpRun
    published_tokens: float  # per GPU and second
    published_peak_gib: float  # torchtitan's logged peak (max reserved, GiB)
    calibrates: bool
    at_calibrated_power: bool = True  # False: its GPUs ran at another power limit than the calibration's


def torchtitan_run(model: str, hosts: int, rows: int, compiled: bool = True) -> FsdpRun:
    """torchtitan's llama3 8B training: fp32 parameters and AdamW moments (16 bytes per parameter), per-op SAC."""
    return FsdpRun(
        ARCHITECTURES[model],
        hosts,
        rows_per_gpu=rows,
        seq_len=8192,
        accumulation=1,
        checkpointing=Checkpointing.PER_OP,
        state_bytes_per_param=16,
        compiled=compiled,
    )


LLAMA_31_8B = "meta-llama/Llama-3.1-8B"  # Llama 3 8B has the same shapes
ANCHORS = (
    Anchor("Llama 3.1 8B, 8 H100", GRAND_TETON, torchtitan_run(LLAMA_31_8B, 1, 2), 6667, 77.0, True),
    Anchor("Llama 3.1 8B, 128 H100", GRAND_TETON, torchtitan_run(LLAMA_31_8B, 16, 2), 6514, 62.0, False),
    # The eager factor's own pair (preflight/forecast/calibration.py EAGER), then its check at 128 GPUs.
    Anchor("Llama 3.1 8B, 8 H100, eager", GRAND_TETON, torchtitan_run(LLAMA_31_8B, 1, 2, False), 5762, 82.4, False),
    Anchor("Llama 3.1 8B, 128 H100, eager", GRAND_TETON, torchtitan_run(LLAMA_31_8B, 16, 2, False), 5605, 67.0, False),
    Anchor("Llama 3 8B, 8 B200 at 750 W", B200_NODE, torchtitan_run(LLAMA_31_8B, 1, 1), 8307.5, 33.71, True),
    Anchor(
        "Llama 3 8B, 8 B200, power not stated, eager",
        B200_NODE,
        torchtitan_run(LLAMA_31_8B, 1, 1, compiled=False),
        10902,
        46.39,
        calibrates=False,
        at_calibrated_power=False,
    ),
)


def implied_efficiency(anchor: Anchor) -> float:
    """The compute efficiency at which the forecast meets the published tokens/s."""
    return anchor.published_tokens / forecast(anchor.run, anchor.hardware, 1.0).tokens_per_s_per_gpu()


def anchor_line(anchor: Anchor) -> str:
    calibration = gpu_calibration(anchor.hardware.name)
    result = forecast(anchor.run, anchor.hardware, calibration.efficiency)
    estimate, best = result.tokens_per_s_per_gpu(), result.tokens_per_s_per_gpu(result.lower_bound_s)
    held = memory(anchor.run, anchor.hardware.gpus_per_node)
    role = "calibration" if anchor.calibrates else "check"
    return (
        f"{anchor.name} ({role}): forecast {estimate:,.0f} tokens/s/GPU (bound {best:,.0f}), published "
        f"{anchor.published_tokens:,}, ratio {estimate / anchor.published_tokens:.3f}; {result.bound}-bound, "
        f"MFU {result.mfu():.1%}; memory {held.total / GIB:.1f} GiB (states {held.states / GIB:.1f}, activations "
        f"{held.activations / GIB:.1f}, logits {held.logits / GIB:.1f}, gathered {held.gathered / GIB:.1f}), "
        f"published {anchor.published_peak_gib} GiB, ratio {held.total / GIB / anchor.published_peak_gib:.2f}"
    )


def bounds_line(anchor: Anchor) -> str:
    """The run with no recompute and with full recompute, at the same efficiency: what modelling per-op SAC decides."""
    calibration = gpu_calibration(anchor.hardware.name)
    figures = []
    for policy in Checkpointing:
        run = FsdpRun(**{**anchor.run.__dict__, "checkpointing": policy})
        tokens = forecast(run, anchor.hardware, calibration.efficiency).tokens_per_s_per_gpu()
        figures.append(f"{policy.value} {tokens:,.0f} ({tokens / anchor.published_tokens:.2f})")
    return f"  {anchor.name}, by recompute policy at {calibration.efficiency}: " + ", ".join(figures)


def model_line(model: str, result: FsdpJobForecast | NoForecast) -> str:
    """One table model as the dev fine-tune's shape would run it."""
    if isinstance(result, NoForecast):
        return f"  {model}: {result.reason}"
    f, arch = result.forecast, result.run.architecture
    fits = "DOES NOT FIT" if result.cannot_run else f"{result.memory.total / 1e9:,.0f} GB/GPU"
    return (
        f"  {model} ({arch.params / 1e9:,.1f}B, {arch.active_params / 1e9:,.1f}B active): {f.estimate_s:.1f} s/step, "
        f"{f.tokens_per_s_per_gpu():,.0f} tokens/s/GPU, MFU {f.mfu():.1%}, ${result.usd_per_step:.2f}/step, {fits}"
    )


def model_lines(config: StackConfig) -> list[str]:
    """The dev fine-tune's shape (2 A4 nodes, 32 rows x 512 tokens x 2 micro-batches, full recompute) on every model
    of the table, compiled and, for the first, eager."""
    job = config.jobs.enabled_fsdp[0]
    prices = cost.load_prices()
    lines = [f"{job.name}'s shape on every model of components/facts/models.py:"]
    for model in ARCHITECTURES:
        edited = job.model_copy(update={"args": {**job.args, "model-id": model}})
        lines.append(model_line(model, job_forecast(config, edited, prices)))
    return lines


def main() -> None:
    for anchor in ANCHORS:
        if anchor.calibrates:
            print(
                f"calibration, {anchor.name}: published {anchor.published_tokens:,} tokens/s/GPU = "
                f"{implied_efficiency(anchor):.3f} of peak FLOP/s, recompute included (in use: "
                f"{gpu_calibration(anchor.hardware.name).efficiency}, {gpu_calibration(anchor.hardware.name).label})"
            )
    for anchor in ANCHORS:
        print(anchor_line(anchor))
    for anchor in ANCHORS:
        print(bounds_line(anchor))
    files = read_stack_files(PROJECT_DIR, "dev")
    config = load_stack_config(files.config, "dev")
    for result in stack_forecasts(config):
        print("\n".join(result.lines()))
    print("\n".join(model_lines(config)))


if __name__ == "__main__":
    main()
