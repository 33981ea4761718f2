"""Loading the stack config: the raw key/value map Pulumi holds -> a checked `StackConfig`.

Keys live in the `trainyard` namespace (plus `gcp:project` and `gcp:region`). `load_stack_config` parses
them into the models of `models`, runs the checks of `checks`, and raises `ConfigError`
listing every problem as `<key path>: <value> <what is wrong> (allowed: ...)` before any resource is
registered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pulumi
from pydantic import ValidationError

from components.config.checks import domain_problems, format_validation_error
from components.config.models import StackConfig
from components.config.problem import ConfigProblem

NAMESPACE = "trainyard"


class ConfigError(pulumi.RunError):
    """The stack config cannot be planned; `problems` says where and why (the engine prints it without a trace)."""

    def __init__(self, problems: list[ConfigProblem]):
        self.problems = problems
        super().__init__("\n".join(str(problem) for problem in problems))


def _decode(value: Any) -> Any:
    """Pulumi hands structured config to programs as JSON text."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _relevant_keys(raw: Mapping[str, Any]) -> dict[str, Any]:
    wanted = {"gcp:project", "gcp:region"}
    return {key: _decode(value) for key, value in raw.items() if key in wanted or key.startswith(f"{NAMESPACE}:")}


def load_stack_config(raw: Mapping[str, Any], stack: str) -> StackConfig:
    """Parse and check stack `stack`'s raw config; raise ConfigError naming every problem."""
    try:
        config = StackConfig.model_validate({"stack": stack, **_relevant_keys(raw)})
    except ValidationError as error:
        raise ConfigError(format_validation_error(error, StackConfig)) from None
    problems = list(domain_problems(config))
    if problems:
        raise ConfigError(problems)
    return config


def raw_stack_config() -> dict[str, Any]:
    """Every config key Pulumi handed this program (the engine sets them all before it runs)."""
    # pulumi.Config reads one key at a time; listing them all is how unknown keys get caught.
    from pulumi.runtime import config as runtime_config

    return {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
