"""Imports run one way; a test parses every module's imports, so an upward import fails here first."""

from __future__ import annotations

import ast
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[2]
# Config flows one way: base and models <- checks <- loading.
CONFIG_RANKS = {
    "components.config.base": 0,
    "components.config.problem": 0,
    "components.config.jobs": 1,
    "components.config.models": 1,
    "components.config.checks": 2,
    "components.config.job_checks": 2,
    "components.config.load": 3,
}


def imported_modules(module: str) -> set[str]:
    """Every module `module` imports, TYPE_CHECKING blocks and function bodies included."""
    tree = ast.parse((PROJECT_DIR / (module.replace(".", "/") + ".py")).read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_config_flows_from_models_to_checks_to_loading():
    upward = [
        f"{module} imports {target}"
        for module, rank in CONFIG_RANKS.items()
        for target in imported_modules(module)
        if CONFIG_RANKS.get(target, -1) > rank
    ]
    assert upward == []


def test_one_base_model_and_one_dns_label_pattern():
    definitions = [
        f"{path.name}: {line.strip()}"
        for path in (PROJECT_DIR / "components").rglob("*.py")
        for line in path.read_text().splitlines()
        if line.startswith(("class _Model", "DNS_LABEL =", "class ConfigModel"))
    ]
    assert sorted(definitions) == [
        "base.py: DNS_LABEL = r\"^[a-z]([-a-z0-9]*[a-z0-9])?$\"",
        "base.py: class ConfigModel(BaseModel):",
    ]
