"""The forecast of each job of a stack: its step, throughput, MFU, and what its run or DWS window costs.

FSDP jobs are forecast from their shape (preflight/forecast.py); MaxText jobs from their compiled step, once
`make fit-check` has compiled them (preflight/maxtext_forecast_report.py).

.venv/bin/python -m preflight forecast [--stack dev]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.config.jobs import FsdpJobConfig
from components.config.load import ConfigError, load_stack_config
from components.config.models import GpuPoolConfig, StackConfig
from components.facts import cost
from components.facts.models import ARCHITECTURES
from components.jobs.torch_workloads import trainer_args
from preflight.forecast import Forecast, FsdpRun, Hardware, Memory, forecast, memory
from preflight.maxtext_forecast_report import MaxTextJobForecast, maxtext_forecasts
from preflight.priced_forecast import NoForecast, PricedForecast
from preflight.stack_files import read_stack_files
from workloads.fsdp.config import parse_config


def pool_hardware(pool: GpuPoolConfig) -> Hardware:
    machine = pool.machine
    return Hardware(
        machine.accelerator,
        machine.peak_bf16_flops_per_gpu,
        machine.gpus_per_vm,
        machine.nvlink_bytes_per_s,
        machine.network_bytes_per_s,
        machine.hbm_bytes,
    )


@dataclass(frozen=True)
class JobForecast(PricedForecast):
    run: FsdpRun
    forecast: Forecast
    synced_once: Forecast  # the same step with gradients reduced once per optimizer step
    window_s: int  # the DWS run window (maxRunDurationSeconds)
    hbm_bytes: float  # per GPU
    memory: Memory

    @property
    def step(self) -> Forecast:
        return self.forecast

    @property
    def steps_in_window(self) -> int:
        return int(self.window_s // self.forecast.estimate_s)

    def lines(self) -> list[str]:
        f, run = self.forecast, self.run
        shape = f"{run.rows_per_gpu} rows x {run.seq_len} tokens x {run.accumulation} micro-batches per GPU and step"
        if run.lora_params:
            shape += f", LoRA ({run.lora_params / 1e6:,.0f}M trainable parameters)"
        window_h = self.window_s / 3600
        about = "~" if self.price_estimated else ""
        window_usd = self.usd_per_hour * window_h
        window = f"the {window_h:g} h window runs {self.steps_in_window:,} steps for {about}${window_usd:,.0f}"
        return [
            f"{self.job}: {self.model}, {run.nodes} x {f.gpus // run.nodes} GPUs ({f.link} between nodes), {shape}",
            f"  step: {f.estimate_s:.1f} s estimated, {f.lower_bound_s:.1f} s at best; {f.bound}-bound (compute "
            + f"{f.compute_s:.1f} s, parameter and gradient traffic {f.communication_s:.1f} s)",
            self.throughput_line("GPU", f.tokens_per_s_per_gpu),
            self.cost_line(window),
            self._memory_line(),
            self._sync_once_line(),
        ]

    def _memory_line(self) -> str:
        m, gb = self.memory, 1e9
        parts = (
            f"weights, gradients and AdamW state {m.states / gb:,.0f} GB; activations ~{m.activations / gb:,.0f} GB "
            f"({'with' if self.run.activation_checkpointing else 'without'} activation checkpointing); "
            f"logits {m.logits / gb:,.0f} GB; gathered layers {m.gathered / gb:,.0f} GB"
        )
        line = f"  memory per GPU: ~{m.total / gb:,.0f} GB of {self.hbm_bytes / gb:,.0f} GB ({parts})"
        if self.hbm_bytes and m.total > self.hbm_bytes:
            return f"{line}; DOES NOT FIT: turn on activation-checkpointing, shorten rows or add nodes"
        return line

    def to_json(self) -> dict[str, Any]:
        f = self.forecast
        return {
            **self.summary_json(),
            "gpus": f.gpus,
            "tokensPerSecondPerGpu": round(f.tokens_per_s_per_gpu(), 1),
            "windowSeconds": self.window_s,
            "stepsInWindow": self.steps_in_window,
            "usdPerWindow": round(self.usd_per_hour * self.window_s / 3600, 2),
            "memoryGbPerGpu": round(self.memory.total / 1e9, 1),
            "hbmGbPerGpu": round(self.hbm_bytes / 1e9, 1),
        }

    def _sync_once_line(self) -> str:
        once = self.synced_once
        what = (
            f"  reducing gradients once per step, not per micro-batch: {once.estimate_s:.1f} s per step, "
            f"MFU {once.mfu():.1%}"
        )
        held = once.unsharded_gradient_bytes
        if self.hbm_bytes and held > self.hbm_bytes:
            return f"{what}, but not possible here: FSDP2 would hold {held / 1e9:,.0f} GB of unsharded fp32 " + (
                f"gradients per GPU, more than its {self.hbm_bytes / 1e9:,.0f} GB"
            )
        return f"{what}, holding {held / 1e9:,.0f} GB of unsharded fp32 gradients per GPU"


def job_forecast(config: StackConfig, job: FsdpJobConfig, prices: cost.PriceBook) -> JobForecast | NoForecast:
    """The job's forecast, or why there is none."""
    train = parse_config(trainer_args(job), environ={})
    architecture = ARCHITECTURES.get(train.model_id)
    if architecture is None:
        return NoForecast(job.name, f"no architecture facts for {train.model_id} (components/facts/models.py)")
    pool = config.gpu_pool(job.pool)
    run = FsdpRun(
        architecture, job.nodes, train.per_device_train_batch_size, train.max_seq_length,
        train.gradient_accumulation_steps, activation_checkpointing=train.activation_checkpointing,
        state_bytes_per_param=8 if train.param_dtype == "bf16" else 16,
        lora_params=architecture.lora_params(train.peft_r, train.target_modules) if train.peft else 0,
    )  # fmt: skip
    hardware = pool_hardware(pool)
    node_hour, price = prices.node_hour(pool.machine_type, config.region, cost.PRICE_COLUMN[pool.capacity])
    return JobForecast(
        job.name, train.model_id, node_hour * job.nodes, price.estimate, run, forecast(run, hardware),
        forecast(FsdpRun(**{**run.__dict__, "sync_every_micro_batch": False}), hardware),
        job.max_run_duration_seconds, hardware.hbm_bytes, memory(run, hardware.gpus_per_node),
    )  # fmt: skip


AnyForecast = JobForecast | MaxTextJobForecast | NoForecast


def stack_forecasts(config: StackConfig, root: Path | None = None) -> list[AnyForecast]:
    """Every enabled job's forecast; MaxText jobs' from the fit-check cache under `root` (default: this checkout,
    where `make fit-check` keeps it)."""
    prices = cost.load_prices()
    fsdp = [job_forecast(config, job, prices) for job in config.jobs.enabled_fsdp]
    return [*fsdp, *maxtext_forecasts(config, prices, root or CHECKOUT)]


BUDGET_POLICY = "runs-within-budget"
CHECKOUT = Path(__file__).resolve().parents[1]


def pack_config_with_forecast(pack_config: Mapping[str, Any], forecasts: list[AnyForecast]) -> dict[str, Any]:
    """The policy pack config with the stack's forecast handed to the run budget policy (policies/stack_rules.py:
    runs_within_budget), which cannot compute it: a forecast is not a resource."""
    budget = dict(pack_config.get(BUDGET_POLICY) or {})
    budget["forecast"] = [result.to_json() for result in forecasts]
    return {**pack_config, BUDGET_POLICY: budget}


def plan_forecasts(plan_json: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The forecasts of a plan's FSDP jobs as JSON, from the config the plan was made with; none when that
    config no longer parses (an old base plan in a diff)."""
    try:
        config = load_stack_config(plan_json.get("config") or {}, str(plan_json.get("stack", "dev")))
    except ConfigError:
        return []
    return [result.to_json() for result in stack_forecasts(config)]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m preflight forecast", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="dev", help="stack name: reads Pulumi.<stack>.yaml (default: dev)")
    parser.add_argument(
        "--pack-config",
        type=Path,
        metavar="FILE",
        help="print FILE (a policy pack config) with the forecast added for runs-within-budget, as JSON for "
        "`pulumi preview --policy-pack-config`",
    )
    args = parser.parse_args(argv)
    files = read_stack_files(Path.cwd(), args.stack)
    forecasts = stack_forecasts(load_stack_config(files.config, args.stack))
    if args.pack_config is not None:
        pack_config = json.loads(args.pack_config.read_text()) if args.pack_config.is_file() else {}
        print(json.dumps(pack_config_with_forecast(pack_config, forecasts), indent=2))
        return 0
    for result in forecasts:
        print("\n".join(result.lines()))
    return 0
