"""The instant MaxText HBM estimate: what it counts, how preflight judges a job by it, when a compile overrides it."""

from __future__ import annotations

import dataclasses

import pytest

from components.facts.maxtext_memory import MAXTEXT_ARCHITECTURES, usable_hbm_bytes_per_chip
from preflight.forecast.maxtext_hbm import LOGIT_BYTES, NoEstimate, estimate
from preflight.forecast.maxtext_jobs import MaxTextJobForecast
from preflight.forecast.priced import NoForecast
from preflight.verdict import check
from tests.preflight.forecast.test_maxtext_forecast import WORK, cache_dev_verdict, dev_config, maxtext_results

LLAMA3_8B = MAXTEXT_ARCHITECTURES["llama3-8b"]
USABLE = usable_hbm_bytes_per_chip("v6e")
BASE = ["model_name=llama3-8b", "per_device_batch_size=2", "max_target_length=4096"]


def test_weights_and_adamw_state_are_sharded_over_every_axis_but_data():
    fsdp_only = estimate(BASE, chips_per_slice=16, slices=1)
    assert fsdp_only.states == pytest.approx(LLAMA3_8B.params * 12 / 16)  # fp32 weights, mu and nu
    assert fsdp_only.gradients == pytest.approx(LLAMA3_8B.params * 4 / 16)
    replicated = estimate([*BASE, "dcn_data_parallelism=2"], chips_per_slice=16, slices=2)
    assert replicated.states == pytest.approx(fsdp_only.states)
    sharded = estimate([*BASE, "dcn_fsdp_parallelism=2", "dcn_data_parallelism=1"], chips_per_slice=16, slices=2)
    assert sharded.states == pytest.approx(fsdp_only.states / 2)
    bf16 = estimate([*BASE, "weight_dtype=bfloat16"], chips_per_slice=16, slices=1)
    assert bf16.states == pytest.approx(fsdp_only.states / 2)


def test_activations_are_what_the_remat_policy_keeps_on_device():
    tokens = 2 * 4096
    full = estimate([*BASE, "remat_policy=full"], 16, 1)
    assert full.activations == pytest.approx(32 * tokens * 4096 * 2)  # each layer's input
    qkv = estimate([*BASE, "remat_policy=save_qkv_proj"], 16, 1)
    assert qkv.activations == pytest.approx(32 * tokens * (4096 + 4096 + 1024 + 1024) * 2)
    offloaded = ["remat_policy=custom", "decoder_layer_input=offload", "query_proj=offload", "mlpwo=device"]
    assert estimate([*BASE, *offloaded], 16, 1).activations == pytest.approx(32 * tokens * 4096 * 2)  # mlpwo only
    assert full.logits == pytest.approx(tokens * 128256 * LOGIT_BYTES)
    with pytest.raises(NoEstimate, match="remat_policy=sometimes"):
        estimate([*BASE, "remat_policy=sometimes"], 16, 1)
    with pytest.raises(NoEstimate, match="mixtral-8x7b"):
        estimate(["model_name=mixtral-8x7b"], 16, 1)


def test_the_estimate_holds_the_compiled_dev_jobs_within_15_percent():
    """Compiled here by `make fit-check` (benchmarks/README.md): llama3-8b 24.06 GB per chip; llama3-70b refused
    by libtpu for 49.82 GiB of temporaries (everything but the weights and AdamW state)."""
    config = dev_config()
    small, big = config.jobs.maxtext
    from preflight.forecast.maxtext_hbm import estimate_for_fit_argv
    from preflight.forecast.maxtext_jobs import fit_check_argv

    assert estimate_for_fit_argv(fit_check_argv(config, small)).total == pytest.approx(24.06e9, rel=0.15)
    held = estimate_for_fit_argv(fit_check_argv(config, big))
    assert held.total - held.states == pytest.approx(49.82 * 2**30, rel=0.15)


def enable_70b(values):
    values["trainyard:jobs"]["maxtext"][1]["enabled"] = True


def test_the_dev_files_70b_is_refused_without_a_compile(fit_check_root, dev_plan):
    results = {r.job: r for r in maxtext_results(dev_config(enable_70b), fit_check_root)}
    refused = results["llama3-70b"]
    assert isinstance(refused, NoForecast) and refused.cannot_run
    line = refused.lines()[0]
    assert line.startswith("llama3-70b: DOES NOT FIT: ~") and "by the instant estimate" in line
    assert "trainyard:jobs.maxtext[1].perDeviceBatchSize (2)" in line and "rematPolicy" in line and "slices" in line
    figure = float(line.split("~", 1)[1].split(" GiB", 1)[0])
    assert figure * 2**30 > USABLE * 1.15
    verdict = check(dev_plan, {})
    assert not verdict.failed  # the dev file's 70B is off: preflight checks the jobs a stack starts
    assert dataclasses.replace(verdict, forecast=[refused]).failed


def test_a_job_well_inside_the_hbm_is_passed_and_a_borderline_one_sent_to_the_fit_check(fit_check_root):
    (fits,) = maxtext_results(dev_config(), fit_check_root)
    assert isinstance(fits, MaxTextJobForecast) and not fits.cannot_run and not fits.undecided
    assert "by the instant estimate, fits" in fits.lines()[-1]

    def batch(size):
        def edit(values):
            values["trainyard:jobs"]["maxtext"][0]["perDeviceBatchSize"] = size

        return edit

    (close,) = maxtext_results(dev_config(batch(7)), fit_check_root)
    assert isinstance(close, NoForecast) and not close.cannot_run and close.undecided
    assert "too close to call" in close.reason and "make fit-check STACK=dev" in close.reason
    assert close.lines()[0].startswith("llama3-8b: TOO CLOSE TO CALL: ~")
    (over,) = maxtext_results(dev_config(batch(16)), fit_check_root)
    assert over.cannot_run


def test_a_job_too_close_to_call_fails_the_run_until_the_fit_check_decides(dev_plan, fit_check_root):
    """The instant estimate never passes what the compile may refuse: within its band the verdict is FAILED, named."""
    from cli.plan import verdict_line

    (close,) = maxtext_results(
        dev_config(lambda values: values["trainyard:jobs"]["maxtext"][0].update(perDeviceBatchSize=7)), fit_check_root
    )
    verdict = dataclasses.replace(check(dev_plan, {}), forecast=[close])
    assert verdict.failed
    assert "1 too close to call" in verdict_line(dev_plan, verdict)


def test_the_compiled_verdict_once_cached_overrides_the_estimate(fit_check_root):
    cache_dev_verdict(fit_check_root, WORK, needed_bytes=40 * 2**30)  # the estimate says it fits; the compile no
    (refused,) = maxtext_results(dev_config(), fit_check_root)
    assert refused.cannot_run and "make fit-check` says why" in refused.reason
    cache_dev_verdict(fit_check_root, WORK, needed_bytes=24.06e9)
    (forecast,) = maxtext_results(dev_config(), fit_check_root)
    assert isinstance(forecast, MaxTextJobForecast)
    assert "HBM per chip: 22.4 GiB compiled (instant estimate" in forecast.lines()[-1]
    assert forecast.to_json()["hbmGibPerChip"] == 22.4


def test_the_compiler_holds_every_layers_gathered_weights_only_under_its_prefetch_ceiling():
    """Measured: the dev 8B job holds them all (22.4 GiB compiled); a job they would push over the ceiling (0.865 of
    the chip's usable HBM, where the v6e recipes' compiles stopped: 26.9-28.0 GiB) holds what the ceiling leaves
    (the compiler gives up prefetching first), never fewer than two layers', which the need counts."""
    recipe = ["model_name=llama3.1-8b", "per_device_batch_size=4", "max_target_length=8192", "remat_policy=custom"]
    recipe.append("decoder_layer_input=offload")
    roomy = estimate(recipe, chips_per_slice=256, slices=1, usable_bytes=USABLE)
    layer = (LLAMA3_8B.params - 2 * 128256 * 4096) / 32 * 2
    assert roomy.total == pytest.approx(27.8 * 2**30, rel=0.15)
    short = estimate([*recipe[:1], "per_device_batch_size=1", *recipe[2:]], chips_per_slice=256, slices=1)
    assert short.gathered == pytest.approx(0.91 * 32 * layer) and short.total < 0.865 * USABLE
    assert estimate([*recipe[:1], "per_device_batch_size=1", *recipe[2:]], 256, 1, usable_bytes=USABLE) == short
    tight = estimate([*recipe[:1], "per_device_batch_size=2", *recipe[2:]], 8, 1, usable_bytes=USABLE)
    assert tight.total == pytest.approx(0.865 * USABLE) and tight.gathered < 0.91 * 32 * layer
    assert tight.need == pytest.approx(tight.total - tight.gathered + 2 * layer)
    unbounded = estimate([*recipe[:1], "per_device_batch_size=2", *recipe[2:]], 8, 1)
    assert unbounded.gathered == pytest.approx(0.91 * 32 * layer)


def test_every_weight_dtype_maxtext_accepts_has_a_size():
    """A dtype the config lets through must not crash plan or forecast with a KeyError."""
    from components.facts.maxtext import maxtext_settings
    from preflight.forecast.maxtext_hbm import DTYPE_BYTES

    (choices,) = maxtext_settings().kinds["weight_dtype"]
    assert set(choices["choices"]) <= set(DTYPE_BYTES)
    fp8 = estimate([*BASE, "weight_dtype=float8_e4m3fn"], chips_per_slice=16, slices=1)
    assert fp8.states < estimate(BASE, chips_per_slice=16, slices=1).states
