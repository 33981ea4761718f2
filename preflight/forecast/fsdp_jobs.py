"""The forecast of each FSDP job of a stack, from its shape (preflight/forecast/fsdp.py) and its pool's price."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.config.jobs import FsdpJobConfig
from components.config.models import GpuPoolConfig, StackConfig
from components.facts import cost
from components.facts.gpu_machines import GpuMachine
from components.facts.models import ModelArchitecture, known_architecture
from components.jobs.torch_workloads import trainer_args
from preflight.forecast.calibration import EAGER, NoCalibration, gpu_calibration
from preflight.forecast.fsdp import Checkpointing, Forecast, FsdpRun, Hardware, Memory, forecast, memory
from preflight.forecast.priced import NoForecast, PricedForecast, node_price
from workloads.fsdp.config import parse_config


def pool_hardware(pool: GpuPoolConfig) -> Hardware:
    return pool_hardware_of(pool.machine)


def pool_hardware_of(machine: GpuMachine) -> Hardware:
    return Hardware(
        machine.accelerator,
        machine.peak_bf16_flops_per_gpu,
        machine.gpus_per_vm,
        machine.nvlink_bytes_per_s,
        machine.network_bytes_per_s,
        machine.hbm_bytes,
        machine.nvlink_domain_vms or 1,  # a job spanning VMs there gets a ComputeDomain (components/kube/nvidia_dra.py)
    )


@dataclass(frozen=True)
class FsdpJobForecast(PricedForecast):
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
            f"{self.job}: {self.model} ({self._size()}), {run.nodes} x {f.gpus // run.nodes} GPUs ({f.link} between "
            + f"nodes), {shape}",
            f"  step: {f.estimate_s:.1f} s estimated, {f.lower_bound_s:.1f} s at best; {f.bound}-bound (compute "
            + f"{f.compute_s:.1f} s, parameter and gradient traffic {f.communication_s:.1f} s); "
            + self.calibration_note(),
            self.throughput_line("GPU", f.tokens_per_s_per_gpu),
            self.cost_line(window),
            self._memory_line(),
            self._sync_once_line(),
            *self._terms_lines(),
        ]

    def _size(self) -> str:
        arch = self.run.architecture
        size = f"{arch.params / 1e9:,.1f}B parameters"
        if arch.moe:
            size += f", {arch.active_params / 1e9:,.1f}B active: {arch.experts_per_token} of {arch.experts} experts"
        return size if self.run.compiled else f"{size}, eager"

    def _terms_lines(self) -> list[str]:
        """Which of the step's terms rest on published runs and which do not."""
        calibrated = [f"compute efficiency ({self.calibration.label})"]
        if not self.run.compiled:
            calibrated.append(f"torch.compile off, compute x{EAGER.compute_factor:.3f} ({EAGER.label})")
        uncalibrated = ["traffic at the links' full rate"]
        if self.run.architecture.moe:
            uncalibrated.append("MoE experts at the dense efficiency (no published MoE run)")
        return [f"  calibrated: {'; '.join(calibrated)}", f"  not calibrated: {'; '.join(uncalibrated)}"]

    @property
    def cannot_run(self) -> bool:
        return bool(self.hbm_bytes) and self.memory.total > self.hbm_bytes

    def _memory_line(self) -> str:
        m, gb = self.memory, 1e9
        parts = (
            f"weights, gradients and AdamW state {m.states / gb:,.0f} GB; activations ~{m.activations / gb:,.0f} GB "
            f"({'with' if self.run.activation_checkpointing else 'without'} activation checkpointing); "
            f"logits {m.logits / gb:,.0f} GB; gathered layers {m.gathered / gb:,.0f} GB"
        )
        line = f"  memory per GPU: ~{m.total / gb:,.0f} GB of {self.hbm_bytes / gb:,.0f} GB ({parts})"
        if self.cannot_run:
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
            "params": self.run.architecture.params,
            "activeParams": self.run.architecture.active_params,
            "compiled": self.run.compiled,
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


def job_architecture(job: FsdpJobConfig, model_id: str) -> ModelArchitecture | None:
    """The table's architecture of the job's model, else the one its config gives."""
    return known_architecture(model_id) or (job.architecture.facts() if job.architecture else None)


def unknown_model(config: StackConfig, job: FsdpJobConfig, model_id: str) -> NoForecast:
    index = next(i for i, named in enumerate(config.jobs.fsdp) if named.name == job.name)
    return NoForecast(
        job.name,
        f"trainyard:jobs.fsdp[{index}].args.model-id: {model_id!r} is not in trainyard's model table (allowed: a "
        f"model `trainyard catalog` lists, or its shape in trainyard:jobs.fsdp[{index}].architecture)",
    )


def job_forecast(config: StackConfig, job: FsdpJobConfig, prices: cost.PriceBook) -> FsdpJobForecast | NoForecast:
    """The job's forecast, or why there is none."""
    train = parse_config(trainer_args(job), environ={})
    architecture = job_architecture(job, train.model_id)
    if architecture is None:
        return unknown_model(config, job, train.model_id)
    pool = config.gpu_pool(job.pool)
    run = FsdpRun(
        architecture=architecture,
        nodes=job.nodes,
        rows_per_gpu=train.per_device_train_batch_size,
        seq_len=train.max_seq_length,
        accumulation=train.gradient_accumulation_steps,
        checkpointing=Checkpointing.FULL if train.activation_checkpointing else Checkpointing.NONE,
        state_bytes_per_param=8 if train.param_dtype == "bf16" else 16,
        lora_params=architecture.lora_params(train.peft_r, train.target_modules) if train.peft else 0,
        # The calibration's runs used inductor; another backend (eager, aot_eager) fuses nothing.
        compiled=train.compile and train.compile_backend == "inductor",
    )
    hardware = pool_hardware(pool)
    try:
        calibration = gpu_calibration(hardware.name)
    except NoCalibration as error:
        return NoForecast(job.name, str(error))
    priced = node_price(job.name, prices, pool.machine_type, config.region, pool.capacity)
    if isinstance(priced, NoForecast):
        return priced
    node_hour, price = priced
    return FsdpJobForecast(
        job=job.name,
        model=train.model_id,
        usd_per_hour=node_hour * job.nodes,
        price_estimated=price.estimate,
        calibration=calibration,
        run=run,
        forecast=forecast(run, hardware, calibration.efficiency),
        synced_once=forecast(
            FsdpRun(**{**run.__dict__, "sync_every_micro_batch": False}), hardware, calibration.efficiency
        ),
        window_s=job.max_run_duration_seconds,
        hbm_bytes=hardware.hbm_bytes,
        memory=memory(run, hardware.gpus_per_node),
    )


def fsdp_forecasts(config: StackConfig, prices: cost.PriceBook) -> list[FsdpJobForecast | NoForecast]:
    return [job_forecast(config, job, prices) for job in config.jobs.enabled_fsdp]
