"""Writes components/facts/maxtext_settings.json: what the installed MaxText accepts as `key=value`.

MaxText (maxtext/configs/pyconfig.py) parses each `key=value` with OmegaConf, refuses a key that is not a field of
its pydantic MaxTextConfig (maxtext/configs/types.py), validates each value against the field's type, refuses a key a
model's config sets unless `override_model_config=true`, and checks the dataset keys together, over base.yml's
defaults (written here too, for the keys preflight reads unset). The Pulumi program has
no MaxText, so the config checks (components/config/maxtext_args.py) read this file instead;
tests/workloads/maxtext/test_maxtext_facts.py fails when it no longer matches the installed MaxText.

    .venv-maxtext/bin/python -m components.facts.gen_maxtext_settings > components/facts/maxtext_settings.json
"""

from __future__ import annotations

import enum
import json
import sys
import types as builtin_types
import typing
from importlib.metadata import version
from pathlib import Path
from typing import Any

_CONSTRAINTS = ("ge", "gt", "le", "lt")


def describe(annotation: Any) -> list[Any]:
    """A field's type as the alternatives it accepts: "null", "bool", "str", {"int": {bounds}}, {"float": {bounds}},
    {"choices": [...]}, or "any" (lists, mappings, nested models such as lora and dpo: not checked offline; their
    fields are set as `lora.rank=...`, a flat `rank=...` is refused by MaxTextConfig's extra="forbid")."""
    origin = typing.get_origin(annotation)
    if annotation is type(None):
        return ["null"]
    if origin in (typing.Union, builtin_types.UnionType):
        return [kind for member in typing.get_args(annotation) for kind in describe(member)]
    if origin is typing.Annotated:
        base, *metadata = typing.get_args(annotation)
        bounds = {
            name: getattr(item, name)
            for item in metadata
            for name in _CONSTRAINTS
            if getattr(item, name, None) is not None
        }
        return [{kind: bounds} if isinstance(kind, str) and bounds else kind for kind in describe(base)]
    if origin is typing.Literal:
        return [{"choices": list(typing.get_args(annotation))}]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [{"choices": [member.value for member in annotation]}]
    if annotation in (bool, int, float, str):
        return [annotation.__name__]
    return ["any"]


def settings() -> dict[str, Any]:
    import maxtext
    import omegaconf
    from maxtext.configs import types

    fields = dict(types.MaxTextConfig.model_fields)
    configs = Path(maxtext.__file__).parent / "configs"
    base = omegaconf.OmegaConf.to_container(omegaconf.OmegaConf.load(configs / "base.yml"))
    models = {  # as MaxText loads them (OmegaConf), to compare with an argument's value as MaxText does
        path.stem: omegaconf.OmegaConf.to_container(omegaconf.OmegaConf.load(path)) or {}
        for path in sorted((configs / "models").glob("*.yml"))
    }
    # pydantic keeps a field's constraints (Field(ge=0), Annotated bounds) in field.metadata, not its annotation.
    kinds = {
        name: describe(typing.Annotated[field.annotation, *field.metadata] if field.metadata else field.annotation)
        for name, field in fields.items()
    }
    return {
        "maxtext": version("maxtext"),
        "settings": dict(sorted(kinds.items())),
        "defaults": base,
        "model_configs": models,
    }


def as_text(facts: dict[str, Any]) -> str:
    """One setting, default and model per line, so that a MaxText pin change reads as a short diff."""
    sections = ("settings", "defaults", "model_configs")
    lines = [f' "maxtext": {json.dumps(facts["maxtext"])},']
    for section in sections:
        entries = [f"  {json.dumps(name)}: {json.dumps(value)}" for name, value in facts[section].items()]
        close = "\n }" + ("," if section != sections[-1] else "")
        lines.append(f' "{section}": {{\n' + ",\n".join(entries) + close)
    return "{\n" + "\n".join(lines) + "\n}\n"


def main() -> None:
    sys.stdout.write(as_text(settings()))


if __name__ == "__main__":
    main()
