"""The JSON Schema of `Pulumi.<stack>.yaml`, generated from the config models, for editors (`trainyard schema`).

A stack file names it in its first line (docs/editor.md), and yaml-language-server completes keys, shows each
key's description and default, and flags a misspelt key or a wrong type as you type. The models stay the one
place keys live: tests/preflight/test_stack_schema.py fails when the committed file and the models disagree.
The schema checks types, patterns and ranges only; the cross-field rules (components/config/checks.py) are
preflight's: `trainyard plan` still has the last word.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from components.config.load import NAMESPACE
from components.config.models import NOT_A_CONFIG_KEY, StackConfig

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "docs" / "stack-schema.json"
# Draft-07: yaml-language-server "supports JSON Schema 7 and below" (its README).
SCHEMA_URI = "http://json-schema.org/draft-07/schema#"
DEFINITIONS = "#/definitions/"
# What a Pulumi stack file holds besides `config` (Pulumi's stack settings); left free: Pulumi checks them.
PULUMI_STACK_KEYS = ("secretsprovider", "encryptedkey", "encryptionsalt", "environment")


def _without_titles(node: Any) -> Any:
    """pydantic titles every field after its Python name ("Releasechannel"); editors show the key itself."""
    if isinstance(node, dict):
        properties = node.get("properties")
        kept = {key: _without_titles(value) for key, value in node.items() if key != "properties"}
        if isinstance(properties, dict):
            kept["properties"] = {
                key: {k: v for k, v in _without_titles(value).items() if k != "title"}
                for key, value in properties.items()
            }
        return kept
    if isinstance(node, list):
        return [_without_titles(item) for item in node]
    return node


def _draft7(node: Any) -> Any:
    """pydantic writes draft 2020-12; in draft-07 a fixed-length tuple's items are a list, and the keys beside a
    $ref are ignored, so a field's description and default sit beside an allOf."""
    if isinstance(node, dict):
        node = {key: _draft7(value) for key, value in node.items()}
        if "$ref" in node and len(node) > 1:
            node["allOf"] = [{"$ref": node.pop("$ref")}]
        if "prefixItems" in node:
            node["items"] = node.pop("prefixItems")
        return node
    if isinstance(node, list):
        return [_draft7(item) for item in node]
    return node


def config_schema() -> dict[str, Any]:
    """The `config:` mapping: the keys StackConfig reads, each also without its `trainyard:` prefix (Pulumi reads
    a bare key in the project's namespace); other namespaces' keys (huggingface:token, ...) pass."""
    generated = StackConfig.model_json_schema(by_alias=True, mode="validation", ref_template=DEFINITIONS + "{model}")
    schema = _draft7(_without_titles(generated))
    program_given = [name for name, prop in schema["properties"].items() if NOT_A_CONFIG_KEY.items() <= prop.items()]
    for name in program_given:
        del schema["properties"][name]
    required = [name for name in schema["required"] if name not in program_given]
    prefix = f"{NAMESPACE}:"
    bare = {
        key.removeprefix(prefix): {"$ref": f"{DEFINITIONS}StackConfig/properties/{key}"}
        for key in schema["properties"]
        if key.startswith(prefix)
    }
    definitions = schema.pop("$defs", {})
    stack_config = {**schema, "additionalProperties": True}
    stack_config["properties"] = {**schema["properties"], **bare}
    # a required trainyard key may be written bare, too
    stack_config["required"] = [name for name in required if not name.startswith(prefix)]
    either = [{"anyOf": [{"required": [name]}, {"required": [name.removeprefix(prefix)]}]} for name in required]
    stack_config["allOf"] = [rule for rule, name in zip(either, required, strict=True) if name.startswith(prefix)]
    # an unknown key in the trainyard namespace is an error (load_stack_config says so); others pass
    stack_config["propertyNames"] = {
        "anyOf": [{"enum": list(schema["properties"])}, {"not": {"pattern": f"^{prefix}"}}]
    }
    return {"definitions": definitions, "stack_config": stack_config}


def stack_schema() -> dict[str, Any]:
    parts = config_schema()
    return {
        "$schema": SCHEMA_URI,
        "$comment": "Generated from components/config/models.py by `trainyard schema --write`; do not edit.",
        "title": "trainyard stack file (Pulumi.<stack>.yaml)",
        "description": "A Pulumi stack file of trainyard: its `config` keys, typed as preflight reads them.",
        "type": "object",
        "properties": {
            "config": {"$ref": f"{DEFINITIONS}StackConfig"},
            **{key: {"description": "Pulumi's own stack setting"} for key in PULUMI_STACK_KEYS},
        },
        "additionalProperties": False,
        "definitions": {**parts["definitions"], "StackConfig": parts["stack_config"]},
    }


def schema_text() -> str:
    return json.dumps(stack_schema(), indent=2, ensure_ascii=False) + "\n"
