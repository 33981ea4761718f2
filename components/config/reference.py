"""The README's config table, generated from the config models' field descriptions (the one place they live).

    python -m components.config.reference            # print the table
    python -m components.config.reference --write    # rewrite it in README.md between its markers

`tests/components/config/test_config_reference.py` fails when the README's table and the models disagree.
"""

from __future__ import annotations

import argparse
import json
import typing
from collections.abc import Iterator
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from components.config.models import NOT_A_CONFIG_KEY, StackConfig

README = Path(__file__).resolve().parents[2] / "README.md"
START, END = "<!-- config-table:start -->", "<!-- config-table:end -->"
LONGEST_DEFAULT = 60


def model_in(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The config model a field holds (and whether as a list), or (None, False) for a plain value."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is tuple and args and isinstance(args[0], type) and issubclass(args[0], BaseModel):
        return args[0], True
    return None, False


def _allowed(annotation: Any) -> list[str]:
    for candidate in (annotation, *typing.get_args(annotation)):
        if typing.get_origin(candidate) is typing.Literal:
            return [str(value) for value in typing.get_args(candidate)]
    return []


def _show(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, IPv4Network):
        return str(value)
    if isinstance(value, (tuple, list)):
        return ", ".join(_show(item) for item in value) if value else "none"
    if isinstance(value, dict):
        return json.dumps(value) if value else "none"
    return str(value)


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.default_factory() if field.default_factory is not None else field.default
    text = _show(value)
    return text if len(text) <= LONGEST_DEFAULT else text[: LONGEST_DEFAULT - 1] + "…"


def rows(model: type[BaseModel] = StackConfig, prefix: str = "") -> Iterator[tuple[str, str, str]]:
    """(key path, what, default) for every key a stack file may set, depth first."""
    for name, field in model.model_fields.items():
        if field.json_schema_extra == NOT_A_CONFIG_KEY:
            continue
        key = f"{prefix}{field.alias or name}"
        inner, is_list = model_in(field.annotation)
        if inner is not None:
            yield from rows(inner, f"{key}[]." if is_list else f"{key}.")
            continue
        what = " ".join((field.description or "").split())  # a docstring may wrap; a table cell may not
        if allowed := _allowed(field.annotation):
            what += f" Allowed: {', '.join(allowed)}."
        yield key, what, _default(field)


def markdown_table() -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| key | what | default |", "| --- | --- | --- |"]
    lines += [f"| `{key}` | {cell(what)} | {cell(default)} |" for key, what, default in rows()]
    return "\n".join(lines)


def readme_with_table(readme: str) -> str:
    before, _, rest = readme.partition(START)
    _, _, after = rest.partition(END)
    return f"{before}{START}\n{markdown_table()}\n{END}{after}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m components.config.reference", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the table in README.md")
    args = parser.parse_args(argv)
    if args.write:
        README.write_text(readme_with_table(README.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        print(markdown_table())


if __name__ == "__main__":
    main()
