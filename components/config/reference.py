"""The config reference in docs/configuration.md, generated from the config models (the one place keys live).

    python -m components.config.reference            # print the table
    python -m components.config.reference --write    # rewrite it in docs/configuration.md between its markers

`tests/components/config/test_config_reference.py` fails when the page's table and the models disagree.
"""

from __future__ import annotations

import argparse
import json
import types
import typing
from collections.abc import Iterator
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from components.config.models import NOT_A_CONFIG_KEY, StackConfig

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
START, END = "<!-- config-table:start -->", "<!-- config-table:end -->"
_SCALAR_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", IPv4Network: "CIDR"}


class Row(NamedTuple):
    key: str
    type: str
    what: str
    default: str


def model_in(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The config model a field holds (and whether as a list), or (None, False) for a plain value."""
    annotation = _without_none(annotation)  # an optional section lists its keys as a required one does
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


def _without_none(annotation: Any) -> Any:
    """`X | None` and `Optional[Annotated[X, ...]]` as X: an unset optional key shows as its default, not its type."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        present = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(present) == 1:
            return _without_none(present[0])
    if origin is typing.Annotated:
        return _without_none(typing.get_args(annotation)[0])
    return annotation


def type_name(annotation: Any) -> str:
    """A field's type as a stack file writes it: string, integer, CIDR, list of string, map of string to integer..."""
    annotation = _without_none(annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return "enum"
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"list of {type_name(args[0])}"
        return f"list of {len(args)} {type_name(args[0])}"
    if origin is dict:
        return f"map of {type_name(args[0])} to {type_name(args[1])}"
    if annotation in _SCALAR_TYPES:
        return _SCALAR_TYPES[annotation]
    raise TypeError(f"no name for the config type {annotation!r}: add it to components/config/reference.py")


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
    return _show(field.default_factory() if field.default_factory is not None else field.default)


def rows(model: type[BaseModel] = StackConfig, prefix: str = "") -> Iterator[Row]:
    """Every key a stack file may set, depth first, with its type, description and whole default."""
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
        yield Row(key, type_name(field.annotation), what, _default(field))


def markdown_table() -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| key | type | what | default |", "| --- | --- | --- | --- |"]
    lines += [f"| `{r.key}` | {r.type} | {cell(r.what)} | {cell(r.default)} |" for r in rows()]
    return "\n".join(lines)


def page_with_table(page: str) -> str:
    """`page` with the generated table between its markers (which must be there)."""
    if START not in page or END not in page:
        raise ValueError(f"{PAGE.name} has no {START} ... {END} markers for the config table")
    before, _, rest = page.partition(START)
    _, _, after = rest.partition(END)
    return f"{before}{START}\n{markdown_table()}\n{END}{after}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m components.config.reference", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the table in docs/configuration.md")
    args = parser.parse_args(argv)
    if args.write:
        PAGE.write_text(page_with_table(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        print(markdown_table())


if __name__ == "__main__":
    main()
