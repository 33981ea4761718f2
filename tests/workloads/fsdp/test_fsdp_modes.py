"""Other modes end to end: padding instead of packing (the seed's way), and a real inductor compile (slow)."""

from __future__ import annotations

import pytest
from fsdp_helpers import read_jsonl, run_torchrun, tiny_args


def test_padding_mode_trains_and_counts_only_real_tokens(tiny, tmp_path):
    out = tmp_path / "padded"
    run = run_torchrun(
        1,
        tiny_args(tiny, out, max_steps=4, packing="false", per_device_train_batch_size=3, eval_max_batches=2),
        out.with_suffix(".txt"),
    )
    assert run.returncode == 0, run.output[-3000:]
    steps = read_jsonl(out / "metrics.jsonl", "train")
    assert len(steps) == 4 and steps[-1]["loss"] < steps[0]["loss"]
    # Three samples of 120-420 tokens each, padded to 512: padding is not counted as useful tokens.
    assert all(3 * 100 < record["useful_tokens"] < 3 * 450 for record in steps)
    assert read_jsonl(out / "metrics.jsonl", "eval")[0]["tokens"] > 0


@pytest.mark.slow
def test_inductor_compile_trains(tiny, tmp_path):
    """A cold inductor compile takes about a minute here, hence slow; the default suite compiles with eager."""
    out = tmp_path / "inductor"
    run = run_torchrun(
        1,
        tiny_args(tiny, out, max_steps=3, compile="true", compile_backend="inductor"),
        out.with_suffix(".txt"),
        timeout_s=600,
    )
    assert run.returncode == 0, run.output[-3000:]
    assert len(read_jsonl(out / "metrics.jsonl", "train")) == 3
