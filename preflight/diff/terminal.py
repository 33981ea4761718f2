"""A `PlanDiff` for a terminal: `+` added, `-` removed, `~` changed (`-/+` replaced), `!` what it does to running
work; every changed property whole (long values as a line diff); colour only on a terminal; no diagram."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Mapping
from typing import Any

from rich.console import Console
from rich.text import Text

from preflight.diff.compare import PlanDiff
from preflight.diff.markdown import forecast_changes, summary
from preflight.diff.running_work import warnings
from preflight.diff.values import is_long, line_diff, shown

STYLES = {"+": "green", "-": "red", "~": "yellow", "-/+": "bold red", "!": "bold red", "": ""}
WIDTH = 100  # every line, a longer one wrapped under its own indent


def _kind(type_: str) -> str:
    return type_.rsplit(":", 1)[-1]


def _resource(sign: str, resource: Mapping[str, Any]) -> tuple[str, str]:
    return sign, f"{sign} {_kind(resource['type'])} {resource['name']}"


def _changes(diff: PlanDiff) -> Iterator[tuple[str, str]]:
    for change in diff.changed:
        sign = "-/+" if change.replaced else "~"
        yield sign, f"{sign} {_kind(change.type)} {change.name}" + (" (replaced)" if change.replaced else "")
        for c in change.changes:
            effect = "  (forces replacement)" if c.replaces else ""
            if not is_long(c.old, c.new):
                yield "~", f"    {c.path}: {shown(c.old)} → {shown(c.new)}{effect}"
                continue
            yield "~", f"    {c.path}:{effect}"
            for line in line_diff(c.old, c.new):
                yield line[:1].strip(), f"      {line}"


def terminal_lines(diff: PlanDiff, base_label: str, head_label: str = "working tree") -> list[tuple[str, str]]:
    """(sign, text) lines; the sign picks the colour."""
    lines = [("", f"trainyard preflight diff — stack {diff.stack}: {base_label} → {head_label}"), ("", summary(diff))]
    loud = warnings(diff)
    if loud:
        lines += [("", "")] + [("!", "! " + line.replace("**", "")) for line in loud]
    body = [_resource("+", r) for r in sorted(diff.added, key=lambda r: r["urn"])]
    body += [_resource("-", r) for r in sorted(diff.removed, key=lambda r: r["urn"])]
    body += [("~", f"~ moved by an alias: {old.rsplit('::', 1)[-1]}") for old, _ in diff.moved]
    body += list(_changes(diff))
    if body:
        lines += [("", ""), *body]
    verdicts = [("+", f"+ {v.level} {v.policy}: {v.message}") for v in diff.new_verdicts]
    verdicts += [("-", f"- {v.level} {v.policy}: {v.message}") for v in diff.resolved_verdicts]
    if verdicts:
        lines += [("", ""), ("", "policy verdicts:"), *verdicts]
    if diff.head_cost is not None:
        lines += [("", ""), *(("", line) for line in _cost_lines(diff))]
    changes = forecast_changes(diff)
    if changes:
        lines += [("", ""), ("", "forecast:")] + [("~", f"~ {job}: {base} → {head}") for job, base, head in changes]
    return [part for sign, text in lines for part in _wrapped(sign, text)]


def _cost_lines(diff: PlanDiff) -> list[str]:
    """The Markdown's cost section as lines: both scales, and what is left out of the totals."""
    head = diff.head_cost
    lines = []
    for scale, of in (("minimum", lambda cost: cost.min_usd_per_hour), ("maximum", lambda cost: cost.max_usd_per_hour)):
        before, after = (of(diff.base_cost) if diff.base_cost else 0.0), of(head)
        lines.append(f"cost at {scale} scale: ${before:,.2f}/h → ${after:,.2f}/h ({after - before:+,.2f})")
    unpriced = [f"{item.name} ({item.reason})" for item in head.unpriced]
    return [*lines, *([f"unpriced (left out of the totals): {', '.join(unpriced)}"] if unpriced else [])]


def _wrapped(sign: str, text: str) -> list[tuple[str, str]]:
    if len(text) <= WIDTH:
        return [(sign, text)]
    indent = " " * (len(text) - len(text.lstrip()) + 4)
    parts = textwrap.wrap(text, WIDTH, subsequent_indent=indent, break_on_hyphens=False, drop_whitespace=False)
    return [(sign, part.rstrip()) for part in parts]


def print_terminal(lines: list[tuple[str, str]], console: Console | None = None) -> None:
    """On a terminal in colour; piped, plain text."""
    console = console or Console(highlight=False, soft_wrap=True)
    for sign, text in lines:
        console.print(Text(text, style=STYLES.get(sign, "")))
