"""The MaxText forecast: a compiled step's work per chip turned into time and money, and shown where it is cached."""

from __future__ import annotations

import json

import pytest

from components.config.load import load_stack_config
from components.facts import cost
from components.facts.topology import TPU_GENERATIONS
from preflight.diff.markdown import forecast_cell
from preflight.engine.stack_files import read_stack_files
from preflight.forecast.calibration import tpu_calibration
from preflight.forecast.maxtext import forecast as forecast_at
from preflight.forecast.maxtext_flops import instant_work_for_fit_argv
from preflight.forecast.maxtext_jobs import INSTANT, MaxTextJobForecast, fit_check_argv
from preflight.forecast.priced import NoForecast
from preflight.forecast.report import stack_forecasts
from tests.helpers.plans import PROJECT_DIR, as_engine_config, dev_config_values
from tools.maxtext_fit.fit_cache import CACHE_DIR, cache_key, save_verdict
from tools.maxtext_fit.hlo_cost import StepWork

V6E = TPU_GENERATIONS["v6e"]
MXU_EFFICIENCY = tpu_calibration("v6e").efficiency


def forecast(work, generation, chips):
    return forecast_at(work, generation, chips, MXU_EFFICIENCY)


WORK = StepWork(
    matmul_flops=2_000e12,
    hbm_bytes=1.6e12,
    ici_bytes=60e9,
    dcn_bytes=1e9,
    model_flops=1_700e12,
    tokens=32768,
    steps=100,
)


def test_the_lower_bound_is_the_busiest_resource_and_the_estimate_runs_the_matrices_at_the_calibrated_rate():
    result = forecast(WORK, V6E, chips=256)
    assert result.compute_s == pytest.approx(2_000e12 / 918e12)
    assert result.memory_s == pytest.approx(1.6e12 / 1638e9) and result.ici_s == pytest.approx(60e9 / 400e9)
    assert result.dcn_s == pytest.approx(1e9 / 12.5e9)
    assert result.bound == "compute" and result.lower_bound_s == result.compute_s
    assert result.estimate_s == pytest.approx(result.compute_s / MXU_EFFICIENCY)
    assert result.tokens_per_s_per_chip() == pytest.approx(32768 / result.estimate_s)
    assert result.mfu() == pytest.approx(1_700e12 / result.estimate_s / 918e12)  # MaxText's count, not the HLO's
    assert result.run_s() == pytest.approx(100 * result.estimate_s)
    slow_network = forecast(StepWork(**{**WORK.__dict__, "dcn_bytes": 100e9}), V6E, chips=256)
    assert slow_network.bound == "DCN" and slow_network.estimate_s == slow_network.lower_bound_s == 8.0


def dev_config(edit=None):
    values = dev_config_values()
    if edit:
        edit(values)
    files = read_stack_files(PROJECT_DIR, "dev")
    return load_stack_config({**files.config, **as_engine_config(values)}, "dev")


def cache_dev_verdict(root, work: StepWork, needed_bytes: float = 24e9) -> None:
    """What `make fit-check` keeps for the dev stack's llama3-8b job, compiled at 2 x v6e-16."""
    config = dev_config()
    job = config.jobs.enabled_maxtext[0]
    argv = fit_check_argv(config, job)
    verdict = {
        "name": job.name,
        "target": "v6e-16",
        "slices": 2,
        "needed_bytes": needed_bytes,
        "available_bytes": 32e9,
        "compile_seconds": 150.0,
        "compiler_error": None,
        "cost": work.__dict__,
        "fits": needed_bytes <= 32e9,
    }
    save_verdict(root / CACHE_DIR, cache_key(argv, root), json.loads(json.dumps(verdict)))


def maxtext_results(config, root):
    return [r for r in stack_forecasts(config, root) if r.job.startswith("llama3-")]


# The dev job as `make fit-check STACK=dev` compiled it (benchmarks/README.md, "MaxText forecast"): step estimate,
# matrix time at peak, ICI and DCN seconds.
COMPILED_DEV_STEP = {"estimate_s": 2.01, "compute_s": 1.04, "ici_s": 0.45, "dcn_s": 0.08}


def test_without_a_compile_the_dev_job_gets_an_instant_step_within_15_percent_of_the_compiled_one(fit_check_root):
    """A clean checkout, no fit-check cache: the step, tokens/s, MFU and cost counted from the architecture and mesh."""
    (result,) = maxtext_results(dev_config(), fit_check_root)
    assert isinstance(result, MaxTextJobForecast) and result.source == INSTANT
    step = result.forecast
    for term, compiled in COMPILED_DEV_STEP.items():
        assert getattr(step, term) == pytest.approx(compiled, rel=0.15), term
    assert step.memory_s == 0  # HBM traffic is not counted: nothing calibrates it
    assert result.to_json()["source"] == "instant" and result.to_json()["hbmGibPerChip"] is None
    lines = result.lines()
    assert lines[0].endswith("(instant, from the architecture and the mesh)")
    assert lines[1].startswith(f"  step: {step.estimate_s:.2f} s estimated")
    assert "`make fit-check STACK=dev` compiles the job" in lines[-1]
    assert result.to_json()["usdPerRun"] == pytest.approx(result.usd_per_hour * 100 * step.estimate_s / 3600, 0.01)


def test_a_cached_fit_check_gives_the_dev_job_its_step_tokens_mfu_and_dollars_per_run(fit_check_root):
    cache_dev_verdict(fit_check_root, WORK)
    (result,) = maxtext_results(dev_config(), fit_check_root)
    assert isinstance(result, MaxTextJobForecast)
    assert result.forecast.chips == 32 and result.slices == 2
    node_hour, _ = cost.load_prices().node_hour("ct6e-standard-4t", dev_config().region, "on-demand")
    assert result.usd_per_hour == pytest.approx(node_hour * 4 * 2)  # 4 VMs per v6e-16 slice, 2 slices
    assert result.forecast.work.steps == 100  # the job's steps, from the config
    summary = result.to_json()
    assert summary["usdPerRun"] == pytest.approx(result.usd_per_hour * 100 * result.forecast.estimate_s / 3600, 0.01)
    lines = "\n".join(result.lines())
    assert result.source == "compiled" and "(from make fit-check's compiled step)" in lines
    assert lines.startswith("llama3-8b: MaxText llama3-8b, 2 x v6e-16 (32 chips)")
    assert "compute-bound" in lines and "tokens/s/chip" in lines and "100 steps take" in lines


def test_a_cached_verdict_that_does_not_fit_fails_the_job(fit_check_root):
    cache_dev_verdict(fit_check_root, WORK, needed_bytes=40 * 2**30)
    (result,) = maxtext_results(dev_config(), fit_check_root)
    assert isinstance(result, NoForecast) and result.cannot_run and result.to_json()["cannotRun"] is True
    expected = "40.0 GiB of HBM per chip needed, 29.8 GiB usable on 2 x v6e-16: `make fit-check` says why"
    assert result.lines() == [f"llama3-8b: DOES NOT FIT: {expected}"]


def test_any_change_to_what_is_compiled_leaves_the_job_without_a_forecast(fit_check_root):
    cache_dev_verdict(fit_check_root, WORK)

    def bigger_batch(values):
        values["trainyard:jobs"]["maxtext"][0]["perDeviceBatchSize"] = 8

    def more_steps(values):
        values["trainyard:jobs"]["maxtext"][0]["steps"] = 300

    (changed,) = maxtext_results(dev_config(bigger_batch), fit_check_root)
    assert isinstance(changed, NoForecast) or changed.source == INSTANT
    (longer,) = maxtext_results(dev_config(more_steps), fit_check_root)
    assert isinstance(longer, MaxTextJobForecast) and longer.forecast.work.steps == 300


def test_the_pr_diff_shows_a_maxtext_forecast_in_tokens_per_chip_and_dollars_per_run(fit_check_root):
    cache_dev_verdict(fit_check_root, WORK)
    (result,) = maxtext_results(dev_config(), fit_check_root)
    cell = forecast_cell(result.to_json())
    assert "tokens/s/chip" in cell and f"{result.forecast.estimate_s:.1f} s/step" in cell
    assert cell.endswith(f"per run ({result.to_json()['calibration']})")


def test_a_tpu7x_job_is_forecast_per_chip_from_a_devices_work_compiled_or_counted(fit_check_root):
    """MaxText's step is one JAX device's and a TPU7x chip is two: the compiled and the counted work are both a
    device's, so a cached compile of the counted work forecasts the same step, and its HBM is a chip's."""

    def tpu7x(values):
        values["gcp:region"], values["trainyard:zone"] = "us-central1", "us-central1-c"
        values["trainyard:network"]["dcnRanges"] = ["10.50.0.0/16"]
        values["trainyard:tpuSlices"] = [{"name": "ironwood", "generation": "tpu7x", "topology": "2x2x4", "count": 2}]
        values["trainyard:jobs"]["maxtext"][0]["slices"] = "ironwood"

    config = dev_config(tpu7x)
    job = config.jobs.enabled_maxtext[0]
    (instant,) = maxtext_results(config, fit_check_root)
    argv = fit_check_argv(config, job)
    device_work, _ = instant_work_for_fit_argv(argv, job.steps)
    assert instant.forecast.work.tokens == 2 * device_work.tokens  # per chip: two devices' tokens
    verdict = {
        "name": job.name,
        "target": "tpu7x-32",
        "slices": 2,
        "needed_bytes": 10 * 2**30,  # a device's program
        "available_bytes": 90 * 2**30,
        "compile_seconds": 150.0,
        "compiler_error": None,
        "cost": device_work.__dict__,
        "fits": True,
    }
    save_verdict(fit_check_root / CACHE_DIR, cache_key(argv, fit_check_root), json.loads(json.dumps(verdict)))
    (compiled,) = maxtext_results(config, fit_check_root)
    assert compiled.source == "compiled"
    assert compiled.forecast.estimate_s == pytest.approx(instant.forecast.estimate_s)
    assert compiled.to_json()["hbmGibPerChip"] == 20.0
