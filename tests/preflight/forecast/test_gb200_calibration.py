"""GB200 (A4X) is forecast from published peak figures until a published run calibrates it, and says so."""

from __future__ import annotations

import pytest

from components.facts.gpu_machines import A4X_MACHINE_TYPE, gpu_machine
from preflight.forecast.calibration import gpu_calibration


def test_gb200_runs_at_the_uncapped_b200_share_of_its_own_peak():
    gb200, b200 = gpu_calibration("nvidia-gb200"), gpu_calibration("nvidia-b200")
    assert gb200.calibrated_on == () and gb200.assumed
    assert gb200.efficiency == pytest.approx(b200.efficiency * 1.31, abs=0.001)
    assert gb200.label.startswith("GB200, from published peak figures (")
    assert gb200.label.endswith("); no published run yet")
    assert gpu_machine(A4X_MACHINE_TYPE).peak_bf16_flops_per_gpu == 2.5e15


def test_a_calibrated_row_keeps_its_runs_label():
    assert gpu_calibration("nvidia-b200").label == "B200 at 750 W, from 1 published run"
