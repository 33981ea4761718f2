"""Resource rule for credentials written in clear text: container env, args and commands, ConfigMaps, a RayJob's
entrypoint and runtime env, and a token-looking value anywhere else in an object (annotations, labels, a custom
resource's fields), base64-wrapped or not. The pattern is the one the config checks use
(components/facts/secrets.py)."""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import yaml
from pulumi_policy import ReportViolation, ResourceValidationArgs

from components.facts.secrets import PLAIN_COUNT, carries_a_secret, looks_like_a_secret
from policies.props import entries, is_unknown, items, lookup, plain
from policies.workloads import RAY_KINDS, containers, kind_of, object_name, pod_templates

_ROUTE = "take it from a Secret (env valueFrom.secretKeyRef)"
SECRET_KINDS = ("Secret", "SecretPatch")  # where credentials belong


def no_secret_literals(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """No credential written as a literal: container env, args or command, a ConfigMap, a RayJob's entrypoint or
    runtime env.

    Literals end up in the plan, the state, `kubectl describe`, Ray's job list and every log of the object; a
    credential belongs in a Secret (env valueFrom.secretKeyRef), created from a Pulumi secret. A value counts when
    it looks like a token (hf_..., ghp_..., AKIA..., a private key) or is a literal under a key with a secret's word
    in it (HF_TOKEN, --hub-token, --token-file, api_key=), as the config checks judge trainer arguments.
    """
    kind = kind_of(args.resource_type)
    if kind is None or kind in SECRET_KINDS:
        return
    where = f"{kind} '{object_name(args.props, args.name)}'"
    problems = list(_named_problems(kind, args.props))
    # Anywhere else (an annotation, a label, a CRD's field, a neutral name): a token-looking value is one.
    if not problems:
        problems = [f": {path} holds a credential-looking literal" for path in _token_paths(plain(args.props))]
    for problem in problems:
        report_violation(f"{where}{problem}; {_ROUTE}.", None)


def _named_problems(kind: str, props: Any) -> Iterator[str]:
    if kind == "ConfigMap":
        for key, value in entries(props, "data").items():
            if isinstance(value, str) and looks_like_a_secret(value):
                yield f": data.{key} holds a credential-looking literal"
        return
    for template in pod_templates(kind, props):
        for container in containers(template.spec):
            name = lookup(container, "name")
            yield from (
                f" {template.where}: container '{name}' {problem}" for problem in _container_problems(container)
            )
    if kind in RAY_KINDS:
        yield from (f": {problem}" for problem in _ray_job_problems(props))


def _token_paths(value: Any, path: str = "") -> Iterator[str]:
    """The path of every string of a plain object that looks like a token (the value itself never shown)."""
    if isinstance(value, str):
        if not is_unknown(value) and looks_like_a_secret(value):
            yield path.lstrip(".") or "a value"
    elif isinstance(value, Mapping):
        for key in list(value):
            yield from _token_paths(value[key], f"{path}.{key}")
    elif isinstance(value, Sequence):
        for index, item in enumerate(value):
            yield from _token_paths(item, f"{path}[{index}]")


def _container_problems(container: Any) -> Iterator[str]:
    for variable in items(container, "env"):
        name, value = lookup(variable, "name"), lookup(variable, "value")
        if isinstance(value, str) and value and not is_unknown(value) and _carries_a_secret(str(name), value):
            yield f"sets {name} to a literal"
    for field in ("command", "args"):
        words = [word for word in items(container, field) if isinstance(word, str) and not is_unknown(word)]
        if any(_secret_in_command(word) for word in words) or _secret_in_words(words):
            yield f"passes a credential in its {field}"


def _ray_job_problems(props: Any) -> Iterator[str]:
    entrypoint = lookup(props, "spec.entrypoint")
    if isinstance(entrypoint, str) and not is_unknown(entrypoint) and _secret_in_command(entrypoint):
        yield "spec.entrypoint passes a credential"
    runtime_env = lookup(props, "spec.runtimeEnvYAML")
    if isinstance(runtime_env, str) and not is_unknown(runtime_env):
        for key in _secret_runtime_env_keys(runtime_env):
            yield f"spec.runtimeEnvYAML sets {key} to a literal"


def _secret_in_command(command: str) -> bool:
    """A token-looking value anywhere, or a secret-named flag or key=value (shell words; whitespace if unbalanced)."""
    if looks_like_a_secret(command):
        return True
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return _secret_in_words(words)


def _secret_in_words(words: list[str]) -> bool:
    """`--hub-token=x`, `hf_token=x` (MaxText's key=value) or `--hub-token x`; a `$VARIABLE` value is no literal."""
    for index, word in enumerate(words):
        if looks_like_a_secret(word):
            return True
        key, equals, value = word.partition("=")
        if equals and _carries_a_secret(key.lstrip("-"), value):
            return True
        following = words[index + 1] if index + 1 < len(words) else ""
        if word.startswith("-") and not equals and _carries_a_secret(word, following):
            return True
    return False


def _literal(value: str) -> bool:
    return bool(value) and not value.startswith(("$", "-"))


def _carries_a_secret(key: str, value: str) -> bool:
    """As the config checks judge a trainer argument (a token-looking value, or a literal under a key with a
    secret's word anywhere: `*token*`), except that a switch or a count is no secret under any key
    (HF_HUB_DISABLE_IMPLICIT_TOKEN=1)."""
    if looks_like_a_secret(value):
        return True
    return _literal(value) and not PLAIN_COUNT.fullmatch(value) and carries_a_secret(key, value)


def _secret_runtime_env_keys(runtime_env: str) -> list[str]:
    """Ray runtime env `env_vars` whose value is a credential, and any token-looking value in it."""
    if looks_like_a_secret(runtime_env):
        return ["a credential-looking value"]
    try:
        parsed = yaml.safe_load(runtime_env)
    except yaml.YAMLError:
        return []
    variables = parsed.get("env_vars") if isinstance(parsed, dict) else None
    if not isinstance(variables, dict):
        return []
    return [f"env_vars.{key}" for key, value in variables.items() if _carries_a_secret(str(key), str(value or ""))]
