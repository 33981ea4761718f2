"""Tables in docs/ written from the code that holds their facts, between `<!-- NAME:start -->` and
`<!-- NAME:end -->`; a test holds each equal to what its generator writes, so a doc cannot drift."""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def with_block(text: str, name: str, block: str) -> str:
    """`text` with the block named `name` replaced by `block`."""
    start, end = markers(name)
    head, found, rest = text.partition(start)
    if not found:
        raise ValueError(f"no {start} in the page")
    _, _, tail = rest.partition(end)
    return f"{head}{start}\n{block}\n{end}{tail}"
