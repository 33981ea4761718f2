"""Preflight's MaxText argument check (components/config/maxtext_args.py) against MaxText's own config loader.

For each job below, MaxText's pyconfig.initialize (what the trainer calls at start, here without devices) reads
the arguments the RayJob would pass, and the offline check reads the same job: both take it, or both refuse it,
and where MaxText words its refusal (the dataset rule, the model-config rule) the check quotes those words.
"""

from __future__ import annotations

from pathlib import Path

import maxtext
import pytest
from maxtext.configs import pyconfig

from components.config.jobs import MaxTextJobConfig
from components.config.maxtext_args import cli_value, maxtext_argument_problems

BASE_YML = Path(maxtext.__file__).parent / "configs" / "base.yml"
JOB = {"name": "llama", "slices": "v6e-16", "modelName": "llama3-8b", "steps": 10, "perDeviceBatchSize": 2}
JOB |= {"maxTargetLength": 2048, "rematPolicy": "full"}

# (extraArgs or other job keys, the key preflight names when it refuses, or None when both take it)
CASES = [
    ({"extraArgs": {"learning_rate": "1e-4"}}, None),  # a float without a dot: OmegaConf's rule, not YAML 1.1's
    ({"extraArgs": {"learning_rate": "3e-4x"}}, "extraArgs.learning_rate"),
    ({"extraArgs": {"learning_rate": "-0.001"}}, "extraArgs.learning_rate"),  # Field(ge=0): the bound is MaxText's
    ({"extraArgs": {"gradient_accumulation_steps": "0"}}, "extraArgs.gradient_accumulation_steps"),  # gt=0
    ({"extraArgs": {"opt_type": "adam"}}, "extraArgs.opt_type"),
    ({"extraArgs": {"opt_type": "sgd", "gradient_clipping_threshold": "0.5"}}, None),
    ({"extraArgs": {"enable_goodput_recording": "yes"}}, None),  # YAML 1.1 reads yes as true
    ({"extraArgs": {"enable_goodput_recording": "maybe"}}, "extraArgs.enable_goodput_recording"),
    ({"extraArgs": {"gradient_clipping_treshold": "1.0"}}, "extraArgs.gradient_clipping_treshold"),
    ({"extraArgs": {"hf_path": "123"}}, "extraArgs.hf_path"),  # an int where MaxText wants a string
    ({"extraArgs": {"dropout_rate": "none"}}, "extraArgs.dropout_rate"),
    ({"extraArgs": {"log_period": "2_000"}}, None),
    ({"extraArgs": {"base_num_decoder_layers": "8"}}, "extraArgs.base_num_decoder_layers"),
    ({"extraArgs": {"base_num_decoder_layers": "32"}}, None),  # the model's own value
    ({"extraArgs": {"base_num_decoder_layers": "8", "override_model_config": "true"}}, None),
    ({"datasetType": "hf"}, "extraArgs.hf_path"),
    ({"datasetType": "hf", "extraArgs": {"hf_path": "allenai/c4"}}, None),
    ({"datasetType": "grain"}, "extraArgs.grain_train_files"),
    ({"datasetType": "grain", "extraArgs": {"grain_train_files": "gs://b/train*.arrayrecord"}}, None),
    ({"modelName": "llama3.1-70b", "extraArgs": {"weight_dtype": "bfloat16"}}, None),
    ({"extraArgs": {"dump_hlo_module_name": ""}}, None),  # pyconfig gives the empty string back
    ({"extraArgs": {"lora_rank": "8"}}, "extraArgs.lora_rank"),  # a field of the nested lora setting, set flat
    ({"extraArgs": {"override_model_config": "1", "base_num_decoder_layers": "8"}}, None),
    ({"name": "off"}, "name"),  # the run name MaxText reads as a boolean
    ({"runName": "1e5"}, "runName"),
]


def maxtext_refusal(job: MaxTextJobConfig) -> str | None:
    """MaxText's own verdict on the job's arguments: its error text, or None when its config loader takes them."""
    arguments = {**job.own_arguments("gs://bucket/maxtext"), **job.extra_args}
    argv = ["train", str(BASE_YML), *(f"{key}={value}" for key, value in arguments.items() if value is not None)]
    try:
        pyconfig._initialize_pydantic(argv)  # what initialize() calls, without writing /dev/termination-log
    except (ValueError, TypeError) as error:  # pydantic's ValidationError is a ValueError
        return str(error)
    return None


@pytest.mark.parametrize(("edit", "refused_key"), CASES, ids=[str(edit) for edit, _ in CASES])
def test_the_offline_check_and_maxtext_agree(edit, refused_key):
    job = MaxTextJobConfig.model_validate(JOB | edit)
    problems = list(maxtext_argument_problems("job", job, job.extra_args))
    refusal = maxtext_refusal(job)
    if refused_key is None:
        assert refusal is None and problems == []
    else:
        assert refusal is not None, "MaxText takes what preflight refuses"
        assert [problem.path for problem in problems] == [f"job.{refused_key}"]
        setting = {"name": "run_name", "runName": "run_name"}.get(refused_key, refused_key.rpartition(".")[2])
        assert setting in refusal, f"MaxText refused for another reason: {refusal[:300]}"


def test_the_check_quotes_maxtexts_own_words():
    for edit, words in (
        ({"datasetType": "hf"}, "hf_path can't be empty when dataset_type=hf"),
        ({"datasetType": "grain"}, "When dataset_type=grain, set grain_train_files"),
        ({"extraArgs": {"base_num_decoder_layers": "8"}}, "override_model_config"),
    ):
        job = MaxTextJobConfig.model_validate(JOB | edit)
        (problem,) = maxtext_argument_problems("job", job, job.extra_args)
        assert words in problem.message and words in maxtext_refusal(job)


@pytest.mark.parametrize("text", ["1e-4", "3.0e-5", "1_000", "yes", "off", "none", "None", "2024-01-01", "[1, 2]", "x"])
def test_values_read_as_omegaconf_reads_them(text):
    import omegaconf

    read = omegaconf.OmegaConf.to_container(omegaconf.OmegaConf.from_cli([f"key={text}"]))["key"]
    expected = None if isinstance(read, str) and read.lower() == "none" else read
    assert cli_value(text) == expected
