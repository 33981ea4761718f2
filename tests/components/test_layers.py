"""Imports run one way; a test parses every module's imports, so an upward import fails here first."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[2]
# components/ by layer, lowest first: a module may import its own layer and those below.
LAYERS = (
    "components.facts",
    "components.config",
    "components.infra",
    "components.kube",
    "components.jobs",
    "components.stack",
)
# Config flows one way: base and models <- checks <- loading.
CONFIG_RANKS = {
    "components.config.base": 0,
    "components.config.problem": 0,
    "components.config.jobs": 1,
    "components.config.models": 1,
    "components.config.checks": 2,
    "components.config.job_checks": 2,
    "components.config.load": 3,
    "components.config.tokens": 3,
}


def module_files(package: str) -> dict[str, Path]:
    folder = PROJECT_DIR / package.replace(".", "/")
    files = sorted(folder.rglob("*.py")) if folder.is_dir() else [folder.with_suffix(".py")]
    return {".".join(file.relative_to(PROJECT_DIR).with_suffix("").parts): file for file in files}


def layer_of(module: str) -> int | None:
    return next((rank for rank, layer in enumerate(LAYERS) if module == layer or module.startswith(f"{layer}.")), None)


def imported_modules(module: str) -> set[str]:
    """Every module `module` imports, TYPE_CHECKING blocks and function bodies included."""
    path = PROJECT_DIR / module.replace(".", "/")
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    tree = ast.parse(path.read_text())
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
        'base.py: DNS_LABEL = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"',
        "base.py: class ConfigModel(BaseModel):",
    ]


def test_components_import_only_their_own_layer_and_below():
    upward = [
        f"{module} imports {target}"
        for layer in LAYERS
        for module in module_files(layer)
        for target in imported_modules(module.removesuffix(".__init__"))
        if (layer_of(target) or 0) > layer_of(module)
    ]
    assert upward == []
    assert set(module_files("components")) == {
        "components.__init__",
        "components.stack",
        *(m for layer in LAYERS[:-1] for m in module_files(layer)),
    }, "every module of components/ sits in a layer folder"


def test_facts_need_neither_pulumi_nor_pydantic_and_the_pack_reads_only_facts():
    heavy = ("pulumi", "pulumi_gcp", "pulumi_kubernetes", "pydantic")
    facts = {
        f"{module} imports {target}"
        for module in module_files("components.facts")
        for target in imported_modules(module.removesuffix(".__init__"))
        if target.split(".")[0] in heavy
    }
    assert facts == set()
    pack = {
        f"{module} imports {target}"
        for module in module_files("policies")
        for target in imported_modules(module.removesuffix(".__init__"))
        if target.startswith("components")
        and not target.startswith(("components.facts", "components.facts."))
        and target != "components"
    }
    assert pack == set()


def test_the_program_never_imports_preflight_or_the_trainers():
    crossing = {
        f"{module} imports {target}"
        for module in module_files("components")
        for target in imported_modules(module.removesuffix(".__init__"))
        if target.split(".")[0] in ("preflight", "workloads", "tests")
    }
    assert crossing == set()


def test_the_trainer_modules_facts_load_by_path_need_only_the_standard_library():
    from components.facts import maxtext

    for name in maxtext.PURE_TRAINER_MODULES:
        module = f"workloads.maxtext.{name}"
        outside = {target for target in imported_modules(module) if target.split(".")[0] not in sys.stdlib_module_names}
        assert outside == set(), (module, outside)
