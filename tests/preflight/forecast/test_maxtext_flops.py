"""The instant count of a MaxText step: MaxText's own FLOP count, the compiled matrix work, and a mixture of experts."""

from __future__ import annotations

import pytest

from benchmarks.maxtext_recipes import recipe
from preflight.diff.markdown import forecast_cell
from preflight.forecast.maxtext_flops import (
    architecture,
    flops_per_token,
    instant_work,
    instant_work_for_fit_argv,
    states_floor,
)
from preflight.forecast.maxtext_hbm import NoEstimate, base_yml_defaults, estimate
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
    """No HBM estimate sizes a mixture of experts: the step is forecast, and where its weights and AdamW state fit
    (~16 GiB a chip, sharded over both slices) the run fails (too close to call) until `make fit-check` compiles it."""

    def mixtral(values):
        values["trainyard:jobs"]["maxtext"][0].update(
            name="mixtral", modelName="mixtral-8x7b", perDeviceBatchSize=1, dcn={"fsdp": 2}
        )

    config = dev_config(mixtral)
    (result,) = [r for r in stack_forecasts(config, fit_check_root) if r.job == "mixtral"]
    assert isinstance(result, MaxTextJobForecast) and result.source == INSTANT
    assert result.forecast.estimate_s > 0 and result.forecast.work.tokens == 4096
    assert result.undecided and result.to_json()["undecided"] is True
    assert "TOO CLOSE TO CALL: no instant estimate for mixtral-8x7b" in result.lines()[-1]
    assert forecast_cell(result.to_json()).startswith("TOO CLOSE TO CALL (no HBM estimate): ")
    assert forecast_summary(result.to_json()).startswith("TOO CLOSE TO CALL (no HBM estimate): step ")


@pytest.mark.parametrize(
    ("model", "published"),
    [
        ("llama3-8b", 8.03e9),  # meta-llama/Meta-Llama-3-8B's model card
        ("mistral-7b", 7.24e9),  # mistralai/Mistral-7B-v0.1
        ("mixtral-8x7b", 46.7e9),  # mistralai/Mixtral-8x7B-v0.1
        ("mixtral-8x22b", 140.6e9),  # mistralai/Mixtral-8x22B-v0.1
    ],
)
def test_the_weights_of_the_counted_blocks_are_their_published_sizes(model, published):
    """A lower bound on HBM rests on these counts (PARAMS_COUNTED), so each is held to 1 % of its model card."""
    args = {**base_yml_defaults(), "model_name": model}
    assert architecture(args).params == pytest.approx(published, rel=0.01)


def test_a_mixture_of_experts_whose_states_alone_overflow_the_chips_does_not_fit(fit_check_root):
    """No HBM estimate sizes Mixtral, but its weights and AdamW state are counted: with the dev job's layout (each
    slice a data replica, the states sharded over its 16 chips) 8x7B's need ~32.6 GiB a chip of v6e's 31.2 before
    anything else, so the run stops at once, naming what to change."""

    def mixtral(values):
        values["trainyard:jobs"]["maxtext"][0].update(name="mixtral", modelName="mixtral-8x7b", perDeviceBatchSize=1)

    (result,) = [r for r in stack_forecasts(dev_config(mixtral), fit_check_root) if r.job == "mixtral"]
    assert result.cannot_run and not result.undecided
    assert "~32.6 GiB of HBM per chip for its weights and AdamW state alone" in result.reason
    assert "trainyard:jobs.maxtext[0].ici/dcn: fsdp rather than data" in result.reason
    params = architecture({**base_yml_defaults(), "model_name": "mixtral-8x7b"}).params
    assert states_floor(["model_name=mixtral-8x7b", "ici_tensor_parallelism=4", "dcn_data_parallelism=2"], 16, 2) == (
        pytest.approx(params * 12 / 16)
    )


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        (["optimizer_memory_host_offload=true"], "optimizer_memory_host_offload"),
        (["optimizer_memory_host_offload=1"], "optimizer_memory_host_offload"),  # MaxText reads 1, yes, on as true
        (["parameter_memory_host_offload=yes"], "parameter_memory_host_offload"),
        (["shard_optimizer_over_data=True"], "shard_optimizer_over_data"),  # ZeRO-1: the states span the data axis
        (["trainable_parameters_mask=['.*decoder.*']"], "trainable_parameters_mask"),
        (["opt_type=sgd"], "opt_type=sgd"),
    ],
)
def test_no_floor_and_no_estimate_where_the_states_may_live_elsewhere(extra, why):
    """Both the floor (any counted block) and the dense estimate leave such a job to the compile."""
    with pytest.raises(NoEstimate, match=why):
        states_floor(["model_name=mixtral-8x22b", *extra], 32, 1)
    with pytest.raises(NoEstimate, match=why):
        estimate([*LLAMA, *extra], 16, 1)


def test_a_false_switch_keeps_both_figures():
    off = ["optimizer_memory_host_offload=no", "shard_optimizer_over_data=0"]
    assert states_floor(["model_name=mixtral-8x22b", *off], 32, 1) == states_floor(["model_name=mixtral-8x22b"], 32, 1)
    assert estimate([*LLAMA, *off], 16, 1) == estimate(LLAMA, 16, 1)


@pytest.mark.parametrize(
    "args",
    [
        ["model_name=deepseek3-671b"],  # MLA, shared experts, dense first layers: not counted exactly
        ["model_name=gemma2-2b"],  # its output head is the embedding
        ["model_name=llama3-8b", "override_model_config=true", "logits_via_embedding=true"],  # the job's own tie
    ],
)
def test_no_floor_where_the_weights_are_not_counted_exactly(args):
    with pytest.raises(NoEstimate, match="not counted exactly"):
        states_floor(args, 32, 1)


def test_the_second_moment_keeps_the_weights_dtype():
    """optax's scale_by_adam takes mu_dtype for the first moment only: bf16 weights with an fp32 mu hold 2 + 4 + 2
    bytes a weight, not 2 + 4 + 4."""
    mixed = ["model_name=mixtral-8x7b", "weight_dtype=bfloat16", "mu_dtype=float32"]
    params = architecture({**base_yml_defaults(), "model_name": "mixtral-8x7b"}).params
    assert states_floor(mixed, 32, 1) == pytest.approx(params * 8 / 32)
    assert estimate([*LLAMA, "weight_dtype=bfloat16", "mu_dtype=float32"], 16, 1).states == pytest.approx(
        architecture({**base_yml_defaults(), "model_name": "llama3.1-8b"}).params * 8 / 16, rel=0.01
    )
