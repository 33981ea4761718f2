"""A MaxText job's arguments as the pinned MaxText takes them, checked without MaxText installed.

At start, MaxText (maxtext/configs/pyconfig.py and types.py at the pinned release) reads each `key=value` with
OmegaConf (YAML, with OmegaConf's float rule and no timestamps), refuses a key that is not one of its settings,
validates each value against the setting's pydantic type, refuses a key the model's config sets to another value
unless `override_model_config=true`, and refuses a dataset_type whose dataset keys are missing. Each refusal
would come after the slices were provisioned; components/facts/maxtext_settings.json carries the facts here.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Annotated, Any, Literal, Union

import pydantic
import yaml

from components.config.jobs import MaxTextJobConfig
from components.config.problem import UNSET, ConfigProblem, show
from components.facts.maxtext import PARALLELISM_ARGUMENT, MaxTextSettings, maxtext_settings


class _OmegaConfLoader(yaml.SafeLoader):
    """OmegaConf's value loader (omegaconf/_yaml.py): YAML 1.1 safe, floats also without a dot (1e-4), no timestamps."""


_OmegaConfLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?[0-9]+(?:_[0-9]+)*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?[0-9]+(?:_[0-9]+)*(?:[eE][-+]?[0-9]+)
        |\.[0-9]+(?:_[0-9]+)*(?:[eE][-+][0-9]+)?
        |[-+]?[0-9]+(?:_[0-9]+)*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.VERBOSE,
    ),
    list("-+0123456789."),
)
_OmegaConfLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _OmegaConfLoader.yaml_implicit_resolvers.items()
}


class UnreadableValue(ValueError):
    pass


def cli_value(text: str) -> Any:
    """The value MaxText sees for `key=text`: OmegaConf's YAML reading, then pyconfig's "none" as None."""
    try:
        value = yaml.load(text, Loader=_OmegaConfLoader)
    except yaml.YAMLError as error:
        raise UnreadableValue(str(error).splitlines()[0]) from None
    except (RecursionError, ValueError, OverflowError):
        raise UnreadableValue("nested or sized past what YAML reading follows") from None
    return None if isinstance(value, str) and value.lower() == "none" else value


def is_true(text: str) -> bool:
    """Whether MaxText reads `key=text` as True for a bool setting (YAML 1.1's true/yes/on, then pydantic's lenient
    bool: 1, t, y...); an unreadable value (the config check refuses it) is not."""
    try:
        return bool(pydantic.TypeAdapter(bool).validate_python(cli_value(text)))
    except (UnreadableValue, pydantic.ValidationError):
        return False


# pyconfig._prepare_for_pydantic gives these an empty string back where the value read as None.
_NONE_AS_EMPTY = ("run_name", "dump_hlo_module_name", "dump_hlo_local_module_name")


def as_maxtext_sees(key: str, value: Any) -> Any:
    return "" if value is None and key in _NONE_AS_EMPTY else value


def maxtext_argument_problems(
    path: str, job: MaxTextJobConfig, extra_args: Mapping[str, str]
) -> Iterator[ConfigProblem]:
    """Every extraArgs key MaxText would refuse at start, then the model's and the dataset's rules on the job's whole
    set of arguments (its own keys, then extraArgs, as the RayJob passes them)."""
    settings = maxtext_settings()
    own = job.own_arguments("")
    values: dict[str, Any] = {}
    unreadable = False
    arguments = [
        (_own_key_path(path, job, key), key, str(value))
        for key, value in own.items()
        if value is not None and key != "base_output_directory"  # a path trainyard fills in
    ]
    arguments += [
        (f"{path}.extraArgs.{key}", key, text)
        for key, text in extra_args.items()
        if key not in own and not PARALLELISM_ARGUMENT.match(key)  # refused by job_checks, naming the job key
    ]
    for where, key, text in arguments:
        problem, value = _setting_problem(settings, where, key, text)
        if problem:
            unreadable = True
            yield problem
        else:
            values[key] = value
    if unreadable:
        return  # the rules below read the values: judged once they can be read
    yield from _model_config_problems(settings, path, job, values, extra_args)
    yield from _dataset_problems(settings, path, values)


def _own_key_path(path: str, job: MaxTextJobConfig, key: str) -> str:
    """The job key an argument trainyard sets comes from (run_name: runName, or the job's name when unset)."""
    if key == "run_name" and job.run_name is None:
        return f"{path}.name"
    return f"{path}.{type(job).model_fields[key].alias}"


def _setting_problem(settings: MaxTextSettings, where: str, key: str, text: str) -> tuple[ConfigProblem | None, Any]:
    parent = key.split(".", 1)[0]
    if "." in key and settings.kinds.get(parent) == ["any"]:
        return None, text  # a field of a nested setting (lora.rank=...): not checked offline
    kinds = settings.kinds.get(key)
    if kinds is None:
        close = difflib.get_close_matches(key, sorted(settings.kinds), n=3, cutoff=0.7)
        allowed = f"{', '.join(close)} or another" if close else "a"
        message = (
            f"is not a setting of MaxText {settings.version}, which refuses it at start "
            f"(allowed: {allowed} key of maxtext/configs/base.yml)"
        )
        return ConfigProblem(where, text, message), None
    try:
        value = cli_value(text)
    except UnreadableValue as error:
        return ConfigProblem(
            where, text, f"is not a value MaxText can read: {error} (allowed: {allowed_words(kinds)})"
        ), None
    value = as_maxtext_sees(key, value)
    adapter = _type_of(key)
    if adapter is not None:
        try:
            adapter.validate_python(value)
        except pydantic.ValidationError as error:
            words = error.errors()[0]["msg"]
            message = f"is refused by MaxText {settings.version}: {words} (allowed: {allowed_words(kinds)})"
            return ConfigProblem(where, text, message), None
    return None, value


@cache
def _type_of(key: str) -> pydantic.TypeAdapter | None:
    """The setting's pydantic type rebuilt from its description; None where it is a list, mapping or model."""
    kinds = maxtext_settings().kinds[key]
    if "any" in kinds:
        return None
    members = tuple(_member_type(kind) for kind in kinds)
    return pydantic.TypeAdapter(members[0] if len(members) == 1 else Union[members])  # noqa: UP007 - built at run time


_SCALARS = {"null": type(None), "bool": bool, "int": int, "float": float, "str": str}


def _member_type(kind: str | dict) -> Any:
    if isinstance(kind, str):
        return _SCALARS[kind]
    if "choices" in kind:
        return Literal[tuple(kind["choices"])]
    ((name, bounds),) = kind.items()
    return Annotated[_SCALARS[name], pydantic.Field(**bounds)]


_BOUND_WORDS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}


def allowed_words(kinds: list) -> str:
    """What a setting takes, in words: "an integer >= 1 or none", "one of synthetic, hf, grain"."""
    words = []
    for kind in kinds:
        if kind == "any":
            words.append("what maxtext/configs/base.yml shows")
        elif isinstance(kind, str):
            words.append(
                {"null": "none", "bool": "true or false", "int": "an integer", "float": "a number"}.get(
                    kind, "a string"
                )
            )
        elif "choices" in kind:
            words.append(
                "one of " + ", ".join(show(choice) if choice == "" else str(choice) for choice in kind["choices"])
            )
        else:
            ((name, bounds),) = kind.items()
            noun = "an integer" if name == "int" else "a number"
            words.append(" ".join([noun, *(f"{_BOUND_WORDS[bound]} {limit}" for bound, limit in bounds.items())]))
    return " or ".join(dict.fromkeys(words))


def _model_config_problems(
    settings: MaxTextSettings,
    path: str,
    job: MaxTextJobConfig,
    values: Mapping[str, Any],
    extra_args: Mapping[str, str],
) -> Iterator[ConfigProblem]:
    """MaxText refuses a key the model's yml sets to another value (validate_no_keys_overridden_twice) unless
    override_model_config is true."""
    if values.get("override_model_config"):  # pyconfig reads it as truthy, as pydantic's bool reads 1
        return
    model = settings.model_config(job.model_name)
    for key, value in values.items():
        if key not in model or value == model[key]:
            continue
        where = f"{path}.extraArgs.{key}" if key in extra_args else _own_key_path(path, job, key)
        yield ConfigProblem(
            where,
            extra_args.get(key, value),
            f"differs from model {job.model_name}'s config ({show(model[key])}), which MaxText refuses unless "
            f"override_model_config is true (allowed: {show(model[key])}, or extraArgs.override_model_config: 'true')",
        )


# What MaxText's data input rules read (types.py, "Data input validations").
_DATASET_KEYS = (
    "dataset_type",
    "hf_path",
    "grain_train_files",
    "grain_train_mixture_config_path",
    "grain_file_type",
    "dataset_path",
    "dataset_name",
    "train_split",
)


def _dataset_problems(settings: MaxTextSettings, path: str, values: Mapping[str, Any]) -> Iterator[ConfigProblem]:
    """MaxText's data input rules (types.py, "Data input validations"), in its own words."""
    data = {key: values.get(key, settings.defaults[key]) for key in _DATASET_KEYS}
    kind = data["dataset_type"]
    if kind == "hf" and not data["hf_path"]:
        yield ConfigProblem(
            f"{path}.extraArgs.hf_path",
            UNSET,
            'is unset, and MaxText refuses it at start: "hf_path can\'t be empty when dataset_type=hf" '
            "(allowed: a Hugging Face dataset, e.g. allenai/c4)",
        )
    elif kind == "grain" and not _grain_has_train_files(data):
        yield ConfigProblem(
            f"{path}.extraArgs.grain_train_files",
            UNSET,
            'is unset, and MaxText refuses it at start: "When dataset_type=grain, set grain_train_files, '
            "grain_train_mixture_config_path, use hf_path with grain_file_type=parquet, or use dataset_path, "
            'dataset_name, and train_split with grain_file_type=tfrecord." (allowed: one of those)',
        )
    elif kind == "tfds" and not data["dataset_name"]:
        yield ConfigProblem(
            f"{path}.extraArgs.dataset_name",
            data["dataset_name"],
            'is empty, and MaxText refuses it at start: "dataset_name can\'t be empty when dataset_type=tfds" '
            "(allowed: a TFDS dataset name)",
        )


def _grain_has_train_files(data: Mapping[str, Any]) -> bool:
    parquet_from_hub = bool(data["hf_path"]) and data["grain_file_type"] == "parquet"
    tfrecord = data["grain_file_type"] == "tfrecord" and all(
        data[key] for key in ("dataset_path", "dataset_name", "train_split")
    )
    return bool(data["grain_train_files"] or data["grain_train_mixture_config_path"] or parquet_from_hub or tfrecord)
