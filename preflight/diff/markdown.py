"""A `PlanDiff` as Markdown for a pull-request comment: a loud warning for replacements, the resources added,
removed, moved and changed (every changed property, old -> new), policy verdicts, cost, and a Mermaid diagram."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from preflight.diff.compare import PlanDiff
from preflight.diff.running_work import caution_lines, short_type
from preflight.diff.values import is_long, line_diff, shown


def _show(value: Any) -> str:
    return "`" + shown(value).replace("`", "'").replace("|", "\\|") + "`"


def _resource_table(title: str, resources: list[Mapping[str, Any]]) -> list[str]:
    if not resources:
        return []
    rows = [f"| `{r['name']}` | `{r['type']}` |" for r in sorted(resources, key=lambda r: r["urn"])]
    return [f"### {title} ({len(resources)})", "", "| resource | type |", "| --- | --- |", *rows, ""]


def _moved_section(diff: PlanDiff) -> list[str]:
    if not diff.moved:
        return []
    rows = [
        f"| `{new.rsplit('::', 1)[-1]}` | `{old.split('::')[2]}` | `{new.split('::')[2]}` |" for old, new in diff.moved
    ]
    return [
        f"### Moved by an alias, not replaced ({len(diff.moved)})",
        "",
        "| resource | was | now |",
        "| --- | --- | --- |",
        *rows,
        "",
    ]


def _changed_section(diff: PlanDiff) -> list[str]:
    """Every changed property, old -> new, whole: short values in the table, long ones (a script, an argument
    list) as a line diff below it."""
    if not diff.changed:
        return []
    lines = [f"### Changed ({len(diff.changed)})", ""]
    for change in diff.changed:
        marker = " — **replaced**" if change.replaced else ""
        lines += [
            f"**{short_type(change.type)} `{change.name}`**{marker}",
            "",
            "| property | old | new | effect |",
            "| --- | --- | --- | --- |",
        ]
        long = [c for c in change.changes if is_long(c.old, c.new)]
        for c in change.changes:
            effect = "forces replacement" if c.replaces else ""
            if c in long:
                lines.append(f"| `{c.path}` | (below) | (below) | {effect} |")
            else:
                lines.append(f"| `{c.path}` | {_show(c.old)} | {_show(c.new)} | {effect} |")
        lines.append("")
        for c in long:
            lines += [f"`{c.path}`:", "", "```diff", *line_diff(c.old, c.new), "```", ""]
    return lines


def _verdict_section(diff: PlanDiff) -> list[str]:
    if not (diff.new_verdicts or diff.resolved_verdicts):
        return ["### Policy verdicts", "", "No change in policy verdicts.", ""]
    lines = ["### Policy verdicts", "", "| | level | policy | resource | message |", "| --- | --- | --- | --- | --- |"]
    for sign, verdicts in (("new", diff.new_verdicts), ("resolved", diff.resolved_verdicts)):
        for v in verdicts:
            resource = v.urn.rsplit("::", 1)[-1] if v.urn else "(stack)"
            message = v.message.replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {sign} | {v.level} | `{v.policy}` | `{resource}` | {message} |")
    return [*lines, ""]


def _cost_row(label: str, base: float, head: float) -> str:
    return f"| {label} | {base:,.2f} | {head:,.2f} | {head - base:+,.2f} |"


def _cost_section(diff: PlanDiff) -> list[str]:
    head = diff.head_cost
    if head is None:
        return []
    base_min = diff.base_cost.min_usd_per_hour if diff.base_cost else 0.0
    base_max = diff.base_cost.max_usd_per_hour if diff.base_cost else 0.0
    lines = [
        "### Cost ($/hour)",
        "",
        "| | base | head | change |",
        "| --- | ---: | ---: | ---: |",
        _cost_row("minimum scale", base_min, head.min_usd_per_hour),
        _cost_row("maximum scale", base_max, head.max_usd_per_hour),
        "",
    ]
    unpriced = [f"`{item.name}` ({item.reason})" for item in head.unpriced]
    if unpriced:
        lines += [f"Unpriced (left out of the totals): {', '.join(unpriced)}.", ""]
    return lines


def forecast_cell(forecast: dict[str, Any] | None) -> str:
    if forecast is None:
        return "—"
    if "none" in forecast:
        return f"no forecast ({forecast['none']})"
    about = "~" if forecast["priceEstimated"] else ""
    if "tokensPerSecondPerChip" in forecast:  # a MaxText job: its configured steps on TPU slices
        throughput, dollars = f"{forecast['tokensPerSecondPerChip']:,.0f} tokens/s/chip", "per run"
        usd = forecast["usdPerRun"]
    else:  # an FSDP job: its DWS window
        throughput, dollars = f"{forecast['tokensPerSecondPerGpu']:,.0f} tokens/s/GPU", "per window"
        usd = forecast["usdPerWindow"]
    step = f"{forecast['stepSeconds']:.1f} s/step"
    calibrated = f" ({forecast['calibration']})" if forecast.get("calibration") else ""
    if forecast.get("source") == "instant":  # a MaxText step counted from the architecture, not compiled
        calibrated = f" (instant, from the architecture; {forecast['calibration']})"
    cell = f"{step}, {throughput}, MFU {forecast['mfu']:.1%}, {about}${usd:,.0f} {dollars}{calibrated}"
    return f"TOO CLOSE TO CALL (no HBM estimate): {cell}" if forecast.get("undecided") else cell


def forecast_changes(diff: PlanDiff) -> list[tuple[str, str, str]]:
    """(job, base, head) for each job whose forecast the change moves (python -m preflight forecast)."""
    base = {forecast["job"]: forecast for forecast in diff.base_forecast}
    head = {forecast["job"]: forecast for forecast in diff.head_forecast}
    jobs = [job for job in {**base, **head} if base.get(job) != head.get(job)]
    return [(job, forecast_cell(base.get(job)), forecast_cell(head.get(job))) for job in jobs]


def _forecast_section(diff: PlanDiff) -> list[str]:
    changes = forecast_changes(diff)
    if not changes:
        return []
    rows = [f"| `{job}` | {base} | {head} |" for job, base, head in changes]
    return ["### Forecast", "", "| job | base | head |", "| --- | --- | --- |", *rows, ""]


def mermaid(resources: list[Mapping[str, Any]], diff: PlanDiff | None = None) -> list[str]:
    """A Mermaid flowchart of the component tree (parent -> child), changes coloured."""
    ids = {r["urn"]: f"r{index}" for index, r in enumerate(resources)}
    status = {}
    if diff is not None:
        status.update({r["urn"]: "added" for r in diff.added})
        status.update({c.urn: "replaced" if c.replaced else "changed" for c in diff.changed})
    lines = ["```mermaid", "flowchart LR"]
    for r in resources:
        label = f"{r['name']}<br/><small>{short_type(r['type'])}</small>".replace('"', "'")
        lines.append(f'  {ids[r["urn"]]}["{label}"]' + (f":::{status[r['urn']]}" if r["urn"] in status else ""))
    lines += [f"  {ids[r['parent']]} --> {ids[r['urn']]}" for r in resources if r.get("parent") in ids]
    lines += [
        "  classDef added fill:#d4f7d4,stroke:#2a7a2a",
        "  classDef changed fill:#fff3c4,stroke:#a07a00",
        "  classDef replaced fill:#ffd6d6,stroke:#b00020,stroke-width:3px",
        "```",
    ]
    return lines


def structure_changed(diff: PlanDiff) -> bool:
    """Resources added, removed, moved or replaced: what the diagram is for."""
    return bool(diff.added or diff.removed or diff.moved or diff.replaced or diff.dependents)


def summary(diff: PlanDiff) -> str:
    dragged = sum(d.replaced for d in diff.dependents)
    return (
        f"{len(diff.added)} added, {len(diff.removed)} removed, {len(diff.changed)} changed "
        f"({len(diff.replaced)} replaced)"
        + (f", {dragged} replaced with what they use" if dragged else "")
        + (f", {len(diff.moved)} moved by an alias" if diff.moved else "")
    )


def render_markdown(diff: PlanDiff, base_label: str, head_label: str = "working tree") -> str:
    lines = [
        f"## trainyard preflight diff — stack `{diff.stack}`",
        "",
        f"`{base_label}` → `{head_label}`: {summary(diff)}",
        "",
    ]
    lines += caution_lines(diff)
    lines += _resource_table("Added", diff.added) + _resource_table("Removed", diff.removed) + _moved_section(diff)
    lines += _changed_section(diff)
    lines += _verdict_section(diff) + _cost_section(diff) + _forecast_section(diff)
    if structure_changed(diff):
        lines += [
            "<details><summary>Stack diagram</summary>",
            "",
            *mermaid(diff.head_resources, diff),
            "",
            "</details>",
        ]
    return "\n".join(lines).rstrip("\n") + "\n"
