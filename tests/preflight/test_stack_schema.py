"""The stack file's JSON Schema (docs/stack-schema.json): generated from the config models and kept in step with
them, it accepts every stack file the repository plans and refuses what the models refuse on a key's own value."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
import yaml

from components.config.load import ConfigError, load_stack_config
from preflight.stack_schema import SCHEMA_PATH, schema_text
from tests.helpers.plans import PROJECT_DIR, as_engine_config, dev_config_values

STACK_FILES = sorted(PROJECT_DIR.glob("Pulumi.*.yaml"))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft7Validator.check_schema(schema)  # yaml-language-server reads draft-07
    return jsonschema.Draft7Validator(schema)


def test_the_committed_schema_is_the_models_schema():
    assert SCHEMA_PATH.read_text() == schema_text(), "the config models changed: run `make stack-schema`"


@pytest.mark.parametrize("stack_file", STACK_FILES, ids=lambda path: path.name)
def test_every_stack_file_names_the_schema_in_its_first_line(stack_file):
    """As docs/editor.md says every example does, so an editor checks it as it is typed."""
    assert stack_file.read_text().splitlines()[0] == "# yaml-language-server: $schema=./docs/stack-schema.json"


@pytest.mark.parametrize("stack_file", STACK_FILES, ids=lambda path: path.name)
def test_every_stack_file_of_the_repository_passes(validator, stack_file):
    errors = [
        f"{list(error.absolute_path)}: {error.message}"
        for error in validator.iter_errors(yaml.safe_load(stack_file.read_text()))
    ]
    assert errors == []


def _set(path: tuple, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(values: dict[str, Any]) -> None:
        target = values
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


REFUSED = {
    "misspelt top-level key": _set(("trainyard:tpuSlice",), []),
    "misspelt nested key": _set(("trainyard:tpuSlices", 0, "topolgy"), "4x4"),
    "wrong type": _set(("trainyard:tpuSlices", 0, "count"), "two"),
    "value outside the set": _set(("trainyard:gpuPools", 0, "capacity"), "dwsqueued"),
    "pattern": _set(("trainyard:zone",), "us-east5"),
    "below the minimum": _set(("trainyard:gpuPools", 0, "maxNodes"), 0),
    "missing required key": lambda values: values.pop("gcp:project"),
}
ACCEPTED = {
    "the dev stack": lambda values: None,
    "a bare key in the project's namespace": lambda values: values.update({"zone": values.pop("trainyard:zone")}),
    "another namespace's secret": _set(("huggingface:token",), {"secure": "v1:abc"}),
}


def edited(edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    values = copy.deepcopy(dev_config_values())
    edit(values)
    return values


@pytest.mark.parametrize("edit", REFUSED.values(), ids=REFUSED.keys())
def test_the_schema_refuses_what_the_models_refuse(validator, edit):
    values = edited(edit)
    assert not validator.is_valid({"config": values})
    with pytest.raises(ConfigError):
        load_stack_config(as_engine_config(values), "dev")


@pytest.mark.parametrize("edit", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_the_schema_accepts_what_the_models_accept(validator, edit):
    values = edited(edit)
    assert validator.is_valid({"config": values}), [e.message for e in validator.iter_errors({"config": values})]
    full_keys = {("trainyard:zone" if key == "zone" else key): value for key, value in values.items()}
    load_stack_config(as_engine_config(full_keys), "dev")


def test_descriptions_and_defaults_reach_the_editor(validator):
    config = validator.schema["definitions"]["StackConfig"]["properties"]
    cluster = config["trainyard:cluster"]
    assert cluster["allOf"] == [{"$ref": "#/definitions/ClusterConfig"}] and cluster["description"]
    version = validator.schema["definitions"]["ClusterConfig"]["properties"]["version"]
    assert version["default"] == "1.35" and "GKE version" in version["description"]
    assert "stack" not in config  # given by the program, never written in a stack file
