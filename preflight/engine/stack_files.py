"""Read a project's Pulumi.yaml and Pulumi.<stack>.yaml the way the CLI hands them to a program."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from preflight.engine.mocks import SECRET_PLACEHOLDER


class StackFileError(Exception):
    """The project or stack file is missing or malformed."""


@dataclass(frozen=True)
class StackFiles:
    project: str
    main: Path
    config: dict[str, str]  # key -> value as the engine passes it (objects as JSON text)
    secret_keys: list[str]


def find_project_dir(start: Path) -> Path:
    for folder in (start, *start.parents):
        if (folder / "Pulumi.yaml").is_file():
            return folder
    raise StackFileError(f"no Pulumi.yaml in {start} or any folder above it")


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise StackFileError(f"{path} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{path.name}:{mark.line + 1}:{mark.column + 1}" if mark else path.name
        raise StackFileError(f"{where}: {error.problem or error.context} (not valid YAML)") from None
    except yaml.YAMLError as error:
        raise StackFileError(f"{path.name}: {error} (not valid YAML)") from None
    if not isinstance(data, dict):
        raise StackFileError(f"{path} is not a YAML mapping")
    return data


def _engine_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value)


def read_stack_files(project_dir: Path, stack: str) -> StackFiles:
    project = _read_yaml(project_dir / "Pulumi.yaml")
    stack_file = _read_yaml(project_dir / f"Pulumi.{stack}.yaml")
    name = project.get("name")
    config: dict[str, str] = {}
    secret_keys: list[str] = []
    for key, value in (stack_file.get("config") or {}).items():
        full_key = key if ":" in key else f"{name}:{key}"
        if isinstance(value, dict) and set(value) == {"secure"}:
            # Encrypted values cannot be read offline; the program sees a placeholder.
            config[full_key] = SECRET_PLACEHOLDER
            secret_keys.append(full_key)
        else:
            config[full_key] = _engine_text(value)
    main = project_dir / str(project.get("main", ".")) / "__main__.py"
    return StackFiles(project=name, main=main, config=config, secret_keys=secret_keys)
