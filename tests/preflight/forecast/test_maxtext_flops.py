"""The instant count of a MaxText step: MaxText's own FLOP count, the compiled matrix work, and a mixture of experts."""

from __future__ import annotations

import pytest

from benchmarks.maxtext_recipes import recipe
from preflight.diff.markdown import forecast_cell
from preflight.forecast.maxtext_flops import architecture, flops_per_token, instant_work, instant_work_for_fit_argv
from preflight.forecast.maxtext_hbm import base_yml_defaults
from preflight.forecast.maxtext_jobs import INSTANT, MaxTextJobForecast
from preflight.forecast.report import stack_forecasts
from preflight.report import forecast_summary
from tests.preflight.forecast.test_maxtext_forecast import dev_config

LLAMA = ["model_name=llama3.1-8b", "per_device_batch_size=4", "max_target_length=8192"]


def test_model_flops_are_maxtexts_own_count():
    """MaxText 0.2.5 counts 1,687 TFLOP per chip for the 8B v6e-256 recipe's step (benchmarks/README.md, "MaxText
    forecast": the compiled step's model FLOPs, as its step log would)."""
    work, _ = instant_work_for_fit_argv(recipe("Llama 3.1 8B, v6e-256").fit_argv(), steps=15)
    assert work.model_flops == pytest.approx(1_687e12, rel=0.005)
    assert work.tokens == 4 * 8192


def test_the_matrix_work_adds_what_the_remat_policy_recomputes():
    def matmul(*remat: str) -> float:
        return instant_work([*LLAMA, *remat], 16, 1, steps=1).matmul_flops

    kept = matmul("remat_policy=minimal")
    assert kept == pytest.approx(instant_work(LLAMA, 16, 1, steps=1).model_flops)  # nothing recomputed
    offloaded = matmul("remat_policy=custom", "query_proj=offload", "key_proj=offload", "value_proj=offload")
    full = matmul("remat_policy=full")
    assert kept < offloaded < full
    layer_forward = 2 * 32 * (4096 * (4096 + 1024 + 1024 + 4096) + 2 * 4096 * 14336) * 4 * 8192  # all but mlpwo
    assert full - kept == pytest.approx(layer_forward)


def test_a_mixture_of_experts_counts_the_experts_each_token_meets():
    """Mixtral 8x7B is Mistral 7B's attention and vocabulary with eight experts' MLPs, two per token, and a router."""
    args = {**base_yml_defaults(), "max_target_length": "4096", "remat_policy": "minimal"}
    dense = flops_per_token(architecture({**args, "model_name": "mistral-7b"}), args, 4096)
    moe_args = {**args, "model_name": "mixtral-8x7b"}
    moe = flops_per_token(architecture(moe_args), moe_args, 4096)
    expert = 3 * 4096 * 14336
    assert moe.model - dense.model == pytest.approx(6 * 32 * (expert + 4096 * 8))
    dropping = {**moe_args, "capacity_factor": "1.25"}  # each expert computes its capacity, padded
    padded = flops_per_token(architecture(dropping), dropping, 4096)
    assert padded.model == moe.model and padded.matmul - moe.matmul == pytest.approx(6 * 32 * 2 * expert * 0.25)


def test_a_mixtral_job_gets_an_instant_step_but_the_run_waits_for_the_fit_check(fit_check_root):
    """No HBM estimate sizes a mixture of experts: the step is forecast, and the run fails (too close to call) until
    `make fit-check` compiles it."""

    def mixtral(values):
        values["trainyard:jobs"]["maxtext"][0].update(name="mixtral", modelName="mixtral-8x7b", perDeviceBatchSize=1)

    config = dev_config(mixtral)
    (result,) = [r for r in stack_forecasts(config, fit_check_root) if r.job == "mixtral"]
    assert isinstance(result, MaxTextJobForecast) and result.source == INSTANT
    assert result.forecast.estimate_s > 0 and result.forecast.work.tokens == 4096
    assert result.undecided and result.to_json()["undecided"] is True
    assert "TOO CLOSE TO CALL: no instant estimate for mixtral-8x7b" in result.lines()[-1]
    assert forecast_cell(result.to_json()).startswith("TOO CLOSE TO CALL (no HBM estimate): ")
    assert forecast_summary(result.to_json()).startswith("TOO CLOSE TO CALL (no HBM estimate): step ")
