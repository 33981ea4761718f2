"""Fixtures for the tests of the program, preflight and the pack: plans of the dev stack and of variations of it.

The trainers' suites (tests/workloads/) run in venvs without Pulumi, so nothing here imports it until a
fixture is used.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from preflight.engine.plan import Plan


@pytest.fixture(scope="session")
def dev_plan() -> Plan:
    from preflight.engine.plan import plan_stack
    from tests.helpers.plans import PROJECT_DIR

    return plan_stack("dev", PROJECT_DIR)


@pytest.fixture(scope="session")
def plan_with() -> Callable[[Callable[[dict[str, Any]], None]], Plan]:
    """Plan the dev stack after `edit` changes a deep copy of its config values."""
    from preflight.engine.plan import plan_config
    from preflight.engine.stack_files import read_stack_files
    from tests.helpers.plans import PROJECT_DIR, as_engine_config, dev_config_values

    files = read_stack_files(PROJECT_DIR, "dev")

    def plan(edit: Callable[[dict[str, Any]], None]) -> Plan:
        values = copy.deepcopy(dev_config_values())
        edit(values)
        return plan_config(files.project, "dev", files.main, as_engine_config(values))

    return plan
