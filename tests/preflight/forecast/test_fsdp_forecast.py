"""The FSDP forecast: the published model sizes, the traffic FSDP2 moves, which link carries it, the dev job."""

from __future__ import annotations

import dataclasses

import pytest

from cli.main import main as preflight_main
from components.config.load import load_stack_config
from components.facts.models import ARCHITECTURES
from preflight.engine.stack_files import read_stack_files
from preflight.forecast.fsdp import Checkpointing, FsdpRun, Hardware, memory
from preflight.forecast.fsdp import forecast as forecast_at
from preflight.forecast.priced import NoForecast
from preflight.forecast.report import stack_forecasts
from preflight.verdict import check
from tests.helpers.plans import PROJECT_DIR, as_engine_config, dev_config_values

LLAMA_8B, LLAMA_70B = ARCHITECTURES["meta-llama/Llama-3.1-8B"], ARCHITECTURES["meta-llama/Llama-3.1-70B"]
NODE = Hardware("test GPU", peak_flops=1e15, gpus_per_node=8, nvlink_bytes_per_s=400e9, network_bytes_per_s=40e9)
EFFICIENCY = 0.4


def forecast(run, hardware):
    return forecast_at(run, hardware, EFFICIENCY)


def test_architectures_hold_the_published_parameter_counts():
    assert LLAMA_8B.params == pytest.approx(8.03e9, rel=1e-3)
    assert LLAMA_70B.params == pytest.approx(70.55e9, rel=1e-3)


def test_traffic_per_step_is_two_gathers_of_bf16_params_and_fp32_gradients_per_micro_batch():
    result = forecast(FsdpRun(LLAMA_70B, nodes=2, rows_per_gpu=1, seq_len=1024, accumulation=4), NODE)
    ring = 15 / 16
    assert result.gathered_bytes_per_step == pytest.approx(4 * 2 * LLAMA_70B.params * 2 * ring)
    assert result.reduced_bytes_per_step == pytest.approx(4 * LLAMA_70B.params * 4 * ring)
    assert result.link == "RDMA"
    assert result.communication_s == pytest.approx(
        (result.gathered_bytes_per_step + result.reduced_bytes_per_step) / 40e9
    )
    once = forecast(
        FsdpRun(LLAMA_70B, nodes=2, rows_per_gpu=1, seq_len=1024, accumulation=4, sync_every_micro_batch=False), NODE
    )
    assert once.reduced_bytes_per_step == pytest.approx(result.reduced_bytes_per_step / 4)
    assert once.estimate_s < result.estimate_s


def test_one_node_talks_over_nvlink_and_a_big_batch_is_compute_bound():
    result = forecast(FsdpRun(LLAMA_8B, nodes=1, rows_per_gpu=2, seq_len=8192, accumulation=1), NODE)
    assert result.link == "NVLink" and result.bound == "compute"
    assert result.lower_bound_s < result.estimate_s
    tokens = 2 * 8192
    assert result.tokens_per_s_per_gpu() == pytest.approx(tokens / result.estimate_s)
    assert result.mfu() == pytest.approx(result.flops_per_step / result.estimate_s / 1e15)
    assert 6 * LLAMA_8B.matmul_params * tokens < result.flops_per_step < 8 * LLAMA_8B.matmul_params * tokens


def test_the_dev_fine_tune_is_forecast(capsys):
    (dev,) = stack_forecasts_of_dev()
    assert dev.forecast.gpus == 16 and dev.run.checkpointing is Checkpointing.FULL
    slowest = max(dev.forecast.compute_s, dev.forecast.communication_s)
    assert slowest < dev.forecast.estimate_s < slowest * 1.05
    assert dev.usd_per_hour == pytest.approx(2 * 52.7, rel=0.05)
    assert dev.steps_in_window == int(7200 // dev.forecast.estimate_s)
    assert preflight_main(["forecast", "--stack", "dev"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("llama31-70b-fsdp: meta-llama/Llama-3.1-70B (70.6B parameters), 2 x 8 GPUs (RDMA between")
    assert "-bound" in out and "MFU" in out and "with activation checkpointing" in out
    assert "efficiency 0.234 of peak (B200 at 750 W, from 1 published run)" in out


def stack_forecasts_of_dev(edit=None):
    """The dev stack's forecasts, after `edit` changes its config values."""
    values = dev_config_values()
    if edit:
        edit(values)
    files = read_stack_files(PROJECT_DIR, "dev")
    results = stack_forecasts(load_stack_config({**files.config, **as_engine_config(values)}, "dev"))
    return [result for result in results if result.job.endswith("-fsdp")]


def test_skipping_gradient_sync_is_offered_only_where_the_unsharded_gradients_fit():
    (dev,) = stack_forecasts_of_dev()
    assert dev.synced_once.unsharded_gradient_bytes == pytest.approx(LLAMA_70B.params * 4)
    (once,) = [line for line in dev.lines() if "reducing gradients once per step" in line]
    assert "but not possible here" in once and "180 GB" in once
    small = forecast(
        FsdpRun(LLAMA_8B, nodes=2, rows_per_gpu=1, seq_len=1024, accumulation=4, sync_every_micro_batch=False),
        NODE,
    )
    assert (
        small.unsharded_gradient_bytes == pytest.approx(LLAMA_8B.params * 4) and small.unsharded_gradient_bytes < 180e9
    )


def test_the_plan_json_and_the_pr_diff_carry_the_forecast(dev_plan, plan_with):
    from preflight.diff import compare
    from preflight.diff.markdown import render_markdown
    from preflight.forecast.report import plan_forecasts

    (base,) = [f for f in plan_forecasts(dev_plan.to_json()) if f["job"].endswith("-fsdp")]
    assert base["job"] == "llama31-70b-fsdp" and base["bound"] == "compute" and base["gpus"] == 16
    assert base["calibration"] == "B200 at 750 W, from 1 published run" and base["efficiency"] == 0.234

    def four_nodes(values):
        values["trainyard:jobs"]["fsdp"][0]["nodes"] = 4
        values["trainyard:jobs"]["fsdp"][0]["args"]["per-device-train-batch-size"] = "16"

    head = plan_with(four_nodes)
    diff = compare.compare(dev_plan.to_json(), head.to_json())
    (changed,) = [f for f in diff.head_forecast if f["job"].endswith("-fsdp")]
    assert changed["gpus"] == 32 and changed["stepSeconds"] != base["stepSeconds"]
    markdown = render_markdown(diff, "base")
    assert "### Forecast" in markdown
    assert f"| `llama31-70b-fsdp` | {base['stepSeconds']:.1f} s/step" in markdown
    unchanged = render_markdown(compare.compare(dev_plan.to_json(), dev_plan.to_json()), "base")
    assert "### Forecast" not in unchanged


def test_memory_counts_sharded_states_activations_logits_and_gathered_layers():
    run = FsdpRun(LLAMA_70B, nodes=2, rows_per_gpu=8, seq_len=512, accumulation=8)
    held = memory(run, gpus_per_node=8)
    assert held.states == pytest.approx(LLAMA_70B.params * 8 / 16)
    assert held.activations == pytest.approx(80 * 8 * 512 * 8192 * 34)
    assert held.logits == pytest.approx(8 * 512 * 128256 * 10)
    recomputed = memory(FsdpRun(**{**run.__dict__, "checkpointing": Checkpointing.FULL}), gpus_per_node=8)
    assert recomputed.activations < held.activations / 10
    assert recomputed.states == held.states


def test_a_job_that_cannot_fit_says_so():
    def crowd(values):
        args = values["trainyard:jobs"]["fsdp"][0]["args"]
        args.update({"per-device-train-batch-size": "32", "activation-checkpointing": "false"})

    (crowded,) = stack_forecasts_of_dev(crowd)
    assert crowded.memory.total > 180e9 and crowded.cannot_run
    assert "DOES NOT FIT" in crowded.lines()[4]
    (dev,) = stack_forecasts_of_dev()
    assert dev.memory.total < 180e9 and "DOES NOT FIT" not in "\n".join(dev.lines()) and not dev.cannot_run
    assert dev.to_json()["memoryGbPerGpu"] == pytest.approx(dev.memory.total / 1e9, abs=0.1)


def test_lora_gathers_every_weight_but_reduces_and_keeps_state_only_for_the_adapters():
    adapters = LLAMA_70B.lora_params(16, ("q_proj", "k_proj", "v_proj", "o_proj"))
    assert adapters == 80 * 16 * ((8192 + 8192) * 2 + (8192 + 1024) * 2)
    full = FsdpRun(LLAMA_70B, nodes=2, rows_per_gpu=8, seq_len=512, accumulation=8)
    lora = FsdpRun(**{**full.__dict__, "lora_params": adapters})
    assert forecast(lora, NODE).reduced_bytes_per_step == pytest.approx(8 * adapters * 4 * 15 / 16)
    assert forecast(lora, NODE).gathered_bytes_per_step > forecast(full, NODE).gathered_bytes_per_step
    assert forecast(lora, NODE).flops_per_step < forecast(full, NODE).flops_per_step
    assert memory(lora, 8).states == pytest.approx((LLAMA_70B.params * 2 + adapters * 8) / 16)


def test_a_lora_job_is_forecast():
    (lora,) = stack_forecasts_of_dev(lambda values: values["trainyard:jobs"]["fsdp"][0]["args"].update(lora="true"))
    assert lora.run.lora_params > 0 and "LoRA (" in lora.lines()[0]


def test_activation_checkpointing_costs_a_second_forward_that_mfu_does_not_count():
    plain = FsdpRun(LLAMA_70B, nodes=1, rows_per_gpu=4, seq_len=512, accumulation=1)
    recomputed = FsdpRun(**{**plain.__dict__, "checkpointing": Checkpointing.FULL})
    base, again = forecast(plain, NODE), forecast(recomputed, NODE)
    assert again.flops_per_step == base.flops_per_step
    assert again.compute_s == pytest.approx(base.compute_s * 4 / 3, rel=0.02)  # 2N more on 6N per token


def test_preflight_hands_the_forecast_to_the_run_budget_policy_and_writes_it_for_the_cli(dev_plan, capsys, tmp_path):
    import json

    from preflight.checks import policy_runner
    from preflight.forecast.report import pack_config_with_forecast

    config = {"runs-within-budget": {"maxUsdPerRun": 100}, "allowed-regions": {"allowedRegions": []}}
    with_forecast = pack_config_with_forecast(config, stack_forecasts_of_dev())
    assert with_forecast["allowed-regions"] == config["allowed-regions"]
    verdicts = policy_runner.evaluate(dev_plan.to_json(), with_forecast)
    (fsdp,) = [v for v in verdicts if v.policy == "runs-within-budget" and "llama31-70b-fsdp" in v.message]
    assert "per DWS window" in fsdp.message and fsdp.level == "advisory"
    pack_file = tmp_path / "pack.json"
    pack_file.write_text(json.dumps(config))
    assert preflight_main(["forecast", "--stack", "dev", "--pack-config", str(pack_file)]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written["runs-within-budget"]["maxUsdPerRun"] == 100
    assert {f["job"] for f in written["runs-within-budget"]["forecast"]} >= {"llama31-70b-fsdp", "llama3-8b"}


def test_a_forecast_that_does_not_fit_fails_the_run(dev_plan):
    def crowd(values):
        values["trainyard:jobs"]["fsdp"][0]["args"].update(
            {"per-device-train-batch-size": "32", "activation-checkpointing": "false"}
        )

    verdict = check(dev_plan, {})
    assert not verdict.failed
    assert dataclasses.replace(verdict, forecast=stack_forecasts_of_dev(crowd)).failed


def test_per_op_checkpointing_recomputes_every_second_matmul_of_a_layer_and_keeps_the_others():
    """torchtitan's per-op SAC: of q, k, v, o, gate, up, down it runs k, o and up again and keeps q, v, gate, down,
    the layer's input and flash attention's output (and its fp32 log-sum-exp)."""
    plain = FsdpRun(LLAMA_8B, nodes=1, rows_per_gpu=1, seq_len=8192, accumulation=1)
    per_op = FsdpRun(**{**plain.__dict__, "checkpointing": Checkpointing.PER_OP})
    full = FsdpRun(**{**plain.__dict__, "checkpointing": Checkpointing.FULL})
    recomputed = forecast(per_op, NODE).compute_s - forecast(plain, NODE).compute_s
    k, o, up = 4096 * 1024, 4096 * 4096, 4096 * 14336
    assert recomputed == pytest.approx(2 * 8192 * 32 * (k + o + up) / (1e15 * EFFICIENCY))
    assert forecast(plain, NODE).compute_s < forecast(per_op, NODE).compute_s < forecast(full, NODE).compute_s
    kept_per_token = (4096 + 4096 + 1024 + 14336 + 4096 + 4096) * 2 + 32 * 4
    transient = 8192 * 4096 * 34
    assert memory(per_op, 8).activations == pytest.approx(32 * 8192 * kept_per_token + transient)
    assert memory(full, 8).activations < memory(per_op, 8).activations < memory(plain, 8).activations


def test_each_gpu_generation_runs_at_its_own_calibrated_efficiency():
    from components.facts.gpu_machines import GPU_MACHINES
    from preflight.forecast.calibration import GPU_COMPUTE_EFFICIENCY, NoCalibration, gpu_calibration

    assert {machine.accelerator for machine in GPU_MACHINES.values()} <= set(GPU_COMPUTE_EFFICIENCY)
    b200, h100 = gpu_calibration("nvidia-b200"), gpu_calibration("nvidia-h100")
    assert b200.efficiency < h100.efficiency  # the B200s held to 750 W ran further from their peak
    assert (
        b200.label == "B200 at 750 W, from 1 published run" and h100.label == "H100, from 1 published run, checked on 1"
    )
    with pytest.raises(NoCalibration, match="no published run calibrates nvidia-a100"):
        gpu_calibration("nvidia-a100")


def test_the_published_runs_are_forecast_within_their_targets():
    """benchmarks/fsdp_forecast.py's anchors: the B200 run within ±15 %, the H100 runs within ±10 %; a B200 run at
    another power limit than the calibration's 750 W is faster than its forecast, not within a target."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("fsdp_forecast", PROJECT_DIR / "benchmarks" / "fsdp_forecast.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # dataclasses look their module up
    spec.loader.exec_module(bench)
    from preflight.forecast.calibration import gpu_calibration

    for anchor in bench.ANCHORS:
        tolerance = 0.15 if anchor.hardware.name == "nvidia-b200" else 0.10
        efficiency = gpu_calibration(anchor.hardware.name).efficiency
        tokens = forecast_at(anchor.run, anchor.hardware, efficiency).tokens_per_s_per_gpu()
        if not anchor.at_calibrated_power:
            assert tokens < anchor.published_tokens, anchor.name
            continue
        assert tokens == pytest.approx(anchor.published_tokens, rel=tolerance), anchor.name
        assert anchor.run.checkpointing is Checkpointing.PER_OP


def test_a_gpu_without_calibration_gets_no_forecast(monkeypatch):
    from preflight.forecast import calibration

    monkeypatch.delitem(calibration.GPU_COMPUTE_EFFICIENCY, "nvidia-b200")
    (dev,) = stack_forecasts_of_dev()
    assert isinstance(dev, NoForecast) and "no published run calibrates nvidia-b200" in dev.reason
