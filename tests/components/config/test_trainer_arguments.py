"""Trainer arguments are config: the FSDP trainer's own parser checks `args` when the stack loads, `extraArgs`
cannot repeat what trainyard sets, and no argument carries a token."""

from __future__ import annotations

import pytest

from components.config.load import ConfigError, load_stack_config
from tests.helpers.plans import as_engine_config, dev_config_values

TOKEN = "hf_SENTINELxq7Zt0kenValue0123456789"


def refused(values) -> list[str]:
    with pytest.raises(ConfigError) as error:
        load_stack_config(as_engine_config(values), "dev")
    return str(error.value).splitlines()


def fsdp_args(values) -> dict[str, str]:
    return values["trainyard:jobs"]["fsdp"][0]["args"]


def test_every_bad_flag_is_reported_at_once_in_the_trainers_words(capfd):
    values = dev_config_values()
    fsdp_args(values).update(
        {"learning-rate": "fast", "packing": "maybe", "warmup-ratio": "1.5", "model-id": "-x", "max-sq-length": "1"}
    )
    lines = refused(values)
    path = "trainyard:jobs.fsdp[0].args"
    assert lines == [
        (
            f'{path}.max-sq-length: "1" is not a flag of the FSDP trainer (allowed: max-seq-length or another flag of '
            "`python -m workloads.fsdp.train --help`)"
        ),
        (
            f'{path}.model-id: "-x" is refused by the FSDP trainer\'s parser: expected one argument (allowed: a value '
            "that does not start with '-', or a plain negative number)"
        ),
        f'{path}.learning-rate: "fast" is not valid for the FSDP trainer (allowed: a float)',
        f'{path}.packing: "maybe" is not valid for the FSDP trainer (allowed: true/false (or 1/0, yes/no, on/off))',
        f'{path}.warmup-ratio: "1.5" is not allowed by the FSDP trainer (allowed: a fraction in [0, 1))',
    ]
    assert capfd.readouterr() == ("", "")  # argparse's usage and exit are caught, nothing printed


def test_the_alias_the_trainer_knows_is_a_flag_and_a_parked_job_is_not_parsed():
    values = dev_config_values()
    fsdp_args(values).update(lora="true")
    load_stack_config(as_engine_config(values), "dev")
    values["trainyard:jobs"]["fsdp"][0].update(enabled=False)
    fsdp_args(values).update({"max-seq-length": "abc"})
    load_stack_config(as_engine_config(values), "dev")


def test_a_token_is_refused_everywhere_and_never_shown():
    values = dev_config_values()
    fsdp_args(values).update({"dataset-id": f"https://user:{TOKEN}@example.com/data", "max-seq-length": TOKEN})
    parked = values["trainyard:jobs"]["maxtext"][1]
    parked["extraArgs"] = {"hf_access_token": TOKEN, "num_moe_token_chunks": "2", "tokenizer_path": "t"}
    lines = refused(values)
    assert not any(TOKEN in line or "SENTINEL" in line for line in lines)
    assert [line.split(" is ")[0] for line in lines] == [
        'trainyard:jobs.maxtext[1].extraArgs.hf_access_token: "hf_…"',
        'trainyard:jobs.fsdp[0].args.dataset-id: "https://user:hf_…@example.com/data"',
        'trainyard:jobs.fsdp[0].args.max-seq-length: "hf_…"',
    ]
    assert all("is a secret in clear text" in line for line in lines)


def test_extra_args_repeat_none_of_the_arguments_trainyard_sets():
    """The refused keys are the ones the RayJob's entrypoint sets from the job's keys: one definition."""
    from components.config.models import StackConfig
    from components.jobs.ray_workloads import OUTPUT_DIR, maxtext_arguments

    values = dev_config_values()
    config: StackConfig = load_stack_config(as_engine_config(values), "dev")
    job, group = config.jobs.maxtext[1], config.tpu_slices[0]
    set_keys = list(job.own_arguments(OUTPUT_DIR))
    assert [argument.split("=")[0] for argument in maxtext_arguments(job, group)][: len(set_keys)] == set_keys
    values["trainyard:jobs"]["maxtext"][0]["extraArgs"] = {key: "1" for key in set_keys} | {"log_period": "5"}
    lines = refused(values)
    assert [line.split(":")[1].removeprefix("jobs.maxtext[0].extraArgs.") for line in lines] == set_keys
    assert all('"1" is set by trainyard (allowed: ' in line for line in lines)
