"""Fixtures for the infrastructure tests: plans of the dev stack and of variations of it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from preflight.engine.plan import Plan, plan_config, plan_stack
from preflight.engine.stack_files import read_stack_files
from tests.infra.helpers.plans import PROJECT_DIR, as_engine_config, dev_config_values


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
