"""Fixtures for the infrastructure tests: plans of the dev stack and of variations of it."""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

PROJECT_DIR = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT_DIR))

from preflight.plan import Plan, plan_config, plan_stack
from preflight.stack_files import read_stack_files


def dev_config_values() -> dict[str, Any]:
    """The dev stack's config as YAML values (objects, not JSON text)."""
    return yaml.safe_load((PROJECT_DIR / "Pulumi.dev.yaml").read_text())["config"]


def as_engine_config(values: dict[str, Any]) -> dict[str, str]:
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in values.items()}


@pytest.fixture(scope="session")
def dev_plan() -> Plan:
    return plan_stack("dev", PROJECT_DIR)


@pytest.fixture(scope="session")
def plan_with() -> Callable[[Callable[[dict[str, Any]], None]], Plan]:
    """Plan the dev stack after `edit` changes a deep copy of its config values."""
    files = read_stack_files(PROJECT_DIR, "dev")

    def plan(edit: Callable[[dict[str, Any]], None]) -> Plan:
        values = copy.deepcopy(dev_config_values())
        edit(values)
        return plan_config(files.project, "dev", files.main, as_engine_config(values))

    return plan


def one(plan: Plan, type_: str, name: str) -> dict[str, Any]:
    """The engine inputs of the one resource of `type_` named `name`."""
    matches = [r.inputs for r in plan.resources if r.type == type_ and r.name == name]
    assert len(matches) == 1, f"{type_} {name}: {len(matches)} found"
    return matches[0]
