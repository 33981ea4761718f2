"""The FSDP forecast across the model table: small and MoE models, torch.compile off, a model described by its job."""

from __future__ import annotations

import pytest

from components.config.load import ConfigError
from components.facts.models import ARCHITECTURES
from preflight.forecast.fsdp import FsdpRun, Hardware, forecast
from preflight.forecast.fsdp_jobs import FsdpJobForecast
from preflight.forecast.priced import NoForecast
from tests.preflight.forecast.test_fsdp_forecast import stack_forecasts_of_dev

MIXTRAL = "mistralai/Mixtral-8x7B-v0.1"
NODE = Hardware("test GPU", peak_flops=1e15, gpus_per_node=8, nvlink_bytes_per_s=400e9, network_bytes_per_s=40e9)


def dev_job_with(**args: str):
    """The dev stack's FSDP job's forecast with its trainer flags changed."""
    (result,) = stack_forecasts_of_dev(lambda values: values["trainyard:jobs"]["fsdp"][0]["args"].update(args))
    return result


def assert_a_full_forecast(result) -> None:
    assert isinstance(result, FsdpJobForecast), getattr(result, "reason", result)
    step = result.forecast
    assert 0 < step.lower_bound_s <= step.estimate_s
    assert step.tokens_per_s_per_gpu() == pytest.approx(step.tokens_per_step / step.estimate_s)
    assert 0 < step.mfu() < 1
    assert result.usd_per_step == pytest.approx(result.usd_per_hour * step.estimate_s / 3600)
    summary = result.to_json()
    assert summary["tokensPerSecondPerGpu"] > 0 and summary["usdPerStep"] > 0


def test_a_llama_32_1b_fine_tune_gets_a_forecast():
    small = dev_job_with(**{"model-id": "meta-llama/Llama-3.2-1B"})
    assert_a_full_forecast(small)
    big = dev_job_with()
    assert small.model == "meta-llama/Llama-3.2-1B" and small.run.architecture.tied_embeddings
    assert small.forecast.estimate_s < big.forecast.estimate_s / 20  # 1.2B against 70.6B parameters
    assert "1.2B parameters" in small.lines()[0]


def test_a_mixtral_job_counts_flops_by_its_active_experts_and_traffic_by_all_of_them():
    mixtral = dev_job_with(**{"model-id": MIXTRAL})
    assert_a_full_forecast(mixtral)
    arch = ARCHITECTURES[MIXTRAL]
    dense_twin = FsdpRun(**{**mixtral.run.__dict__, "architecture": type(arch)(**{**arch.__dict__, "experts": 2})})
    moe, dense = forecast(mixtral.run, NODE, 0.4), forecast(dense_twin, NODE, 0.4)
    # Top-2 of 8 experts does the work of 2 MLPs per token (less a router of 6 more columns)...
    assert moe.flops_per_step == pytest.approx(dense.flops_per_step, rel=1e-4)
    # ...but FSDP2 gathers all 8.
    gathered = moe.gathered_bytes_per_step / dense.gathered_bytes_per_step
    assert gathered == pytest.approx(arch.params / dense_twin.architecture.params) and gathered > 3
    tokens = mixtral.run.accumulation * mixtral.run.rows_per_gpu * mixtral.run.seq_len
    assert (
        6 * arch.active_matmul_params * tokens
        < mixtral.forecast.flops_per_step
        < 8 * arch.active_matmul_params * tokens
    )
    assert mixtral.memory.states == pytest.approx(arch.params * 8 / mixtral.forecast.gpus)
    text = "\n".join(mixtral.lines())
    assert "46.7B parameters, 12.9B active: 2 of 8 experts" in text
    assert "not calibrated: traffic at the links' full rate; MoE experts at the dense efficiency" in text


def test_torch_compile_off_costs_the_published_eager_factor():
    compiled, eager = dev_job_with(), dev_job_with(compile="false")
    assert compiled.run.compiled and not eager.run.compiled
    # torchtitan's Llama 3.1 8B on 8 H100: 6,667 tokens/s/GPU compiled, 5,762 eager.
    assert eager.forecast.compute_s == pytest.approx(compiled.forecast.compute_s * 6667 / 5762)
    assert eager.forecast.bound == "compute" and eager.forecast.estimate_s > compiled.forecast.estimate_s * 1.15
    assert eager.forecast.lower_bound_s == compiled.forecast.lower_bound_s  # the peak does not move
    assert "torch.compile off, compute x1.157" in "\n".join(eager.lines())
    assert dev_job_with(**{"compile-backend": "eager"}).forecast.compute_s == eager.forecast.compute_s


def test_a_model_outside_the_table_without_an_architecture_is_refused_naming_the_key():
    unknown = dev_job_with(**{"model-id": "acme/Llama-Custom-5B"})
    assert isinstance(unknown, NoForecast)
    (line,) = unknown.lines()
    assert line == (
        "llama31-70b-fsdp: no forecast: trainyard:jobs.fsdp[0].args.model-id: 'acme/Llama-Custom-5B' is not in "
        "trainyard's model table (allowed: a model `trainyard catalog` lists, or its shape in "
        "trainyard:jobs.fsdp[0].architecture)"
    )


CUSTOM = {"hidden": 2048, "intermediate": 8192, "layers": 16, "heads": 32, "kvHeads": 8, "vocab": 128256}


def with_architecture(model_id: str, architecture: dict):
    def edit(values):
        job = values["trainyard:jobs"]["fsdp"][0]
        job["args"]["model-id"] = model_id
        job["architecture"] = architecture

    return edit


def test_a_model_outside_the_table_is_forecast_from_the_architecture_its_job_gives():
    (custom,) = stack_forecasts_of_dev(with_architecture("/models/my-llama", {**CUSTOM, "tiedEmbeddings": True}))
    assert_a_full_forecast(custom)
    assert custom.run.architecture == ARCHITECTURES["meta-llama/Llama-3.2-1B"]
    moe = {**CUSTOM, "experts": 8, "expertsPerToken": 2}
    (routed,) = stack_forecasts_of_dev(with_architecture("/models/my-moe", moe))
    assert routed.run.architecture.active_params < routed.run.architecture.params


@pytest.mark.parametrize(
    ("architecture", "words"),
    [
        (
            {**CUSTOM, "experts": 8, "expertsPerToken": 9},
            "trainyard:jobs.fsdp[0].architecture.expertsPerToken: 9 is more than experts (allowed: 1 to 8)",
        ),
        (
            {**CUSTOM, "kvHeads": 5},
            "trainyard:jobs.fsdp[0].architecture.kvHeads: 5 does not divide heads, 32 (allowed: a divisor of heads)",
        ),
    ],
)
def test_an_impossible_architecture_is_refused(architecture, words):
    with pytest.raises(ConfigError) as refused:
        stack_forecasts_of_dev(with_architecture("/models/x", architecture))
    assert words in str(refused.value)


def test_an_architecture_that_contradicts_the_table_is_refused():
    with pytest.raises(ConfigError) as refused:
        stack_forecasts_of_dev(with_architecture("meta-llama/Llama-3.1-8B", CUSTOM))
    assert (
        "trainyard:jobs.fsdp[0].architecture: differs from the shape of meta-llama/Llama-3.1-8B in trainyard's model "
        "table (allowed: unset, the table's shape applies; `trainyard catalog` lists it)"
    ) in str(refused.value)


@pytest.mark.parametrize("model", sorted(ARCHITECTURES))
def test_every_model_of_the_table_is_forecast(model):
    assert_a_full_forecast(dev_job_with(**{"model-id": model}))
