"""A diff a person reads (issue 29 item 4): whole values, long ones as a line diff; a terminal mode with +/~/-
and colour only on a terminal; the Mermaid diagram only in Markdown and only when the structure changed."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from preflight.diff import compare
from preflight.diff.markdown import render_markdown
from preflight.diff.terminal import print_terminal, terminal_lines
from preflight.diff.values import line_diff


@pytest.fixture(scope="module")
def diff_of(dev_plan, plan_with):
    return lambda edit: compare.compare(dev_plan.to_json(), plan_with(edit).to_json())


def _four_nodes(values) -> None:
    values["trainyard:jobs"]["fsdp"][0]["nodes"] = 4


def test_a_long_argument_is_a_line_diff_never_cut(diff_of):
    """nodes 2 -> 4 changes one line deep in the launch script: the diff shows that line, old and new."""
    markdown = render_markdown(diff_of(_four_nodes), "base")
    assert "…" not in markdown
    blocks = re.findall(r"```diff\n(.*?)```", markdown, re.DOTALL)
    assert blocks
    removed = [line for block in blocks for line in block.splitlines() if line.startswith("- ")]
    added = [line for block in blocks for line in block.splitlines() if line.startswith("+ ")]
    removed, added = [line.rstrip() for line in removed], [line.rstrip() for line in added]
    # The torchrun command runs to 600 characters: one flag a line, only the changed one marked.
    assert "-     --nnodes=2" in removed and "+     --nnodes=4" in added
    assert not any("--model-id" in line for line in removed + added)
    assert "| (below) | (below) |" in markdown


def test_a_moved_forecast_names_the_calibration_it_rests_on(diff_of):
    """nodes 2 -> 4 moves the fine-tune's forecast; both columns say which published runs it rests on."""
    markdown = render_markdown(diff_of(_four_nodes), "base")
    section = markdown.partition("### Forecast")[2]
    row = next(line for line in section.splitlines() if line.startswith("| `llama31-70b-fsdp`"))
    assert row.count("(B200 at 750 W, from 1 published run)") == 2


def test_line_diff_keeps_every_line():
    old, new = "a\nnnodes=2\nc", "a\nnnodes=4\nc"
    assert line_diff(old, new) == ["  a", "- nnodes=2", "+ nnodes=4", "  c"]
    assert line_diff(["--x", "1"], ["--x", "2"]) == ["  --x", "- 1", "+ 2"]


def test_the_diagram_only_when_the_structure_changed(diff_of):
    in_place = render_markdown(diff_of(lambda values: values["trainyard:network"].update(mtu=1500)), "base")
    assert "```mermaid" not in in_place
    removed = render_markdown(diff_of(lambda values: values["trainyard:tpuSlices"][0].update(count=1)), "base")
    assert "```mermaid" in removed


def _driver(values) -> None:
    values["trainyard:gpuPools"][0].update(gpuDriverVersion="LATEST")


def test_terminal_mode_marks_each_change_and_has_no_diagram(diff_of):
    lines = terminal_lines(diff_of(_driver), "main")
    text = "\n".join(line for _, line in lines)
    assert "-/+ NodePool gpu-nodepool-dws (replaced)" in text
    assert re.search(
        r"^    nodeConfig\.guestAccelerators\[0\]\.gpuDriverInstallationConfig\.gpuDriverVersion: "
        r'"\w+" →\n {8}"LATEST"  \(forces replacement\)$',  # wrapped at 100 columns, under its own indent
        text,
        re.MULTILINE,
    )
    assert "! Job `llama31-70b-fsdp` runs on `gpu-nodepool-dws`, which is replaced" in text
    assert "mermaid" not in text and "**" not in text and "|" not in text
    removed = "\n".join(
        line for _, line in terminal_lines(diff_of(lambda v: v["trainyard:tpuSlices"][0].update(count=1)), "main")
    )
    assert "\n- NodePool v6e-16-1" in removed


def test_colour_only_on_a_terminal(diff_of):
    lines = terminal_lines(diff_of(_driver), "main")
    for is_terminal, coloured in ((True, True), (False, False)):
        out = io.StringIO()
        console = Console(
            file=out, width=200, **({"force_terminal": True, "color_system": "standard"} if is_terminal else {})
        )
        print_terminal(lines, console)  # a StringIO is no terminal: rich's own detection, as for a pipe
        assert ("\x1b[" in out.getvalue()) is coloured
        assert "-/+ NodePool gpu-nodepool-dws" in out.getvalue()


def test_terminal_mode_has_every_section_the_markdown_has_within_100_columns(diff_of):
    """nodes 2 -> 4: the forecast moves ($211 -> $422 a window) and the Markdown shows it; so does the terminal,
    with both cost scales, and no line is wider than 100 columns (a warning once ran to 356)."""
    lines = [line for _, line in terminal_lines(diff_of(_four_nodes), "main")]
    assert max(len(line) for line in lines) <= 100
    text = "\n".join(lines)
    assert "cost at minimum scale: $" in text and "cost at maximum scale: $" in text
    forecast = text.partition("\nforecast:\n")[2]
    assert forecast.startswith("~ llama31-70b-fsdp: ") and " → " in " ".join(forecast.split())
