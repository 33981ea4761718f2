"""Cross-field rules on sizes and reserved names (issue 36 item 4): what the trainer, Kueue, etcd and the bucket's
mount would refuse after `pulumi up`, refused when the stack loads, naming the key to change."""

from __future__ import annotations

import pytest

from components.config.load import load_stack_config
from tests.components.config.test_grammars import _refusal
from tests.helpers.plans import as_engine_config, dev_config_values


def _fsdp_args(values) -> dict[str, str]:
    return values["trainyard:jobs"]["fsdp"][0]["args"]


def test_a_test_split_that_leaves_no_training_step_is_refused_naming_test_size():
    """Dev's FSDP job takes 32 rows x 16 GPUs x 2 micro-batches = 1,024 rows a step from 12,500 samples: a test
    size of 0.95 leaves 625 training rows, and the trainer would stop before its first step."""
    message = _refusal(lambda values: _fsdp_args(values).update({"test-size": "0.95"}))
    assert message.startswith('trainyard:jobs.fsdp[0].args.test-size: "0.95" leaves at most 625 training rows')
    assert "fewer than one step's 1,024 (per-device-train-batch-size 32 x 16 GPUs" in message
    values = dev_config_values()
    _fsdp_args(values)["test-size"] = "0.9"  # 1,250 rows: one step fits
    load_stack_config(as_engine_config(values), "dev")


def test_too_few_samples_for_one_step_name_train_sample_size_when_test_size_is_unset():
    message = _refusal(lambda values: _fsdp_args(values).update({"train-sample-size": "1000"}))
    assert message.startswith('trainyard:jobs.fsdp[0].args.train-sample-size: "1000" leaves at most 900 training')


def test_arguments_larger_than_etcd_stores_are_refused_naming_the_largest():
    huge = "gs://bucket/" + "a" * 1_100_000
    message = _refusal(lambda values: values["trainyard:jobs"]["maxtext"][0].update(extraArgs={"dataset_path": huge}))
    assert message.startswith('trainyard:jobs.maxtext[0].extraArgs.dataset_path: "gs://bucket/aaaa')
    assert "(1,100,014 characters)" in message and "etcd" in message and "(allowed: 1,048,576 bytes" in message
    message = _refusal(lambda values: _fsdp_args(values).update({"model-id": "m" * 1_100_000}))
    assert message.startswith("trainyard:jobs.fsdp[0].args.model-id:")


@pytest.mark.parametrize(("name", "says"), [("head", '"head" is reserved for the head group'), ("submitter", "")])
def test_a_slice_group_named_as_a_rayjob_pod_set_is_refused_with_kueues_reason(name, says):
    def rename(values):
        values["trainyard:tpuSlices"][0]["name"] = name
        for job in values["trainyard:jobs"]["maxtext"]:
            job["slices"] = name

    message = _refusal(rename)
    assert message.startswith(f'trainyard:tpuSlices[0].name: "{name}" names the Ray worker group, and Kueue')
    assert says in message and "(allowed: any name but head, submitter)" in message


def test_a_run_name_longer_than_a_folder_name_is_refused_and_shown_short():
    message = _refusal(lambda values: values["trainyard:jobs"]["maxtext"][0].update(runName="r" * 3000))
    (line,) = [line for line in message.splitlines() if "runName" in line]
    assert "(3,002 characters)" in line and "at most 255 characters" in line and len(line) < 200
