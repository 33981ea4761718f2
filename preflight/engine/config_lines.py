"""Where a config key sits in its stack file, so every config error starts `Pulumi.dev.yaml:27:` as an editor
and a terminal can follow: the key's own line, or its nearest parent's when the key is missing."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from components.config.problem import ConfigProblem

_PART = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


def key_parts(path: str) -> list[str | int]:
    """`trainyard:jobs.maxtext[0].name` -> ["trainyard:jobs", "maxtext", 0, "name"]."""
    return [int(index) if index else key for index, key in _PART.findall(path)]


def line_of(text: str, path: str) -> int | None:
    """The 1-based line of `path` (a config key path) in a stack file's text, or None where the file has no
    `config:` the reader can follow."""
    try:
        data = YAML(typ="rt", pure=True).load(text)
    except (YAMLError, ValueError):
        return None
    if not isinstance(data, CommentedMap) or not isinstance(data.get("config"), CommentedMap):
        return None
    node, line = data["config"], data.lc.key("config")[0]
    for part in key_parts(path):
        if isinstance(node, CommentedMap) and part in node:
            line, node = node.lc.key(part)[0], node[part]
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and part < len(node):
            line, node = node.lc.item(part)[0], node[part]
        else:
            break
    return line + 1


def located(problems: Iterable[ConfigProblem], stack_file: Path) -> str:
    """The problems, one a line, each after `FILE:LINE:`."""
    try:
        text = stack_file.read_text()
    except OSError:
        text = ""
    lines = []
    for problem in problems:
        line = line_of(text, problem.path) if text else None
        lines.append(f"{stack_file.name}:{line}: {problem}" if line else str(problem))
    return "\n".join(lines)
