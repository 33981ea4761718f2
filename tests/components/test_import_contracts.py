"""The import rules are import-linter contracts in pyproject.toml, run by `make lint` and `make test-infra`.

Each contract is shown to fail: a copy of the packages gets one planted import that breaks it, and
lint-imports, run in the copy, reports that contract broken; the untouched copy keeps them all.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

PROJECT_DIR = Path(__file__).resolve().parents[2]
SETTINGS = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())["tool"]["importlinter"]
CONTRACTS = {contract["name"]: contract for contract in SETTINGS["contracts"]}
PACKAGES = sorted({root.split(".")[0] for root in SETTINGS["root_packages"]})
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# One planted import per contract: (file, line appended, contract it breaks).
PLANTED = [
    ("components/facts/gke.py", "import components.kube.kueue", "components: facts <- config <- infra"),
    ("components/helpers.py", "import math", "components: facts <- config <- infra"),  # a module outside the layers
    ("components/config/base.py", "import components.config.load", "config: base, problem <- models"),
    ("components/facts/topology.py", "import pydantic", "facts need neither Pulumi nor pydantic"),
    ("policies/props.py", "import components.config", "the policy pack reads nothing of the project but"),
    ("components/stack.py", "import preflight", "the program never imports preflight"),
    ("components/infra/network.py", "import tests.helpers", "the program never imports preflight"),
    ("components/facts/maxtext.py", "import workloads.maxtext.train", "the program never imports preflight"),
    ("workloads/maxtext/slices.py", "import jax", "the trainer rule files the program imports need only"),
    ("workloads/maxtext/parallelism.py", "import workloads.maxtext.cli", "the trainer rule files the program"),
    ("workloads/fsdp/config.py", "import components", "the trainers never import the program"),
    ("workloads/maxtext/cli.py", "import preflight", "the trainers never import the program"),
    ("workloads/maxtext/train.py", "import tools.maxtext_fit.fit", "the trainers never import the program"),
    ("runs/why.py", "import cli.job", "day 2 sits on top"),
    ("preflight/cli.py", "import cli.job", "day 2 sits on top"),
    ("preflight/report.py", "import runs.jobs", "runs/ stands on components and preflight"),
]


def contract_named(prefix: str) -> str:
    (name,) = [name for name in CONTRACTS if name.startswith(prefix)]
    return name


def copy_project(destination: Path) -> Path:
    skipped = shutil.ignore_patterns("__pycache__", ".venv*")
    for package in PACKAGES:
        shutil.copytree(PROJECT_DIR / package, destination / package, ignore=skipped)
    shutil.copy(PROJECT_DIR / "pyproject.toml", destination / "pyproject.toml")
    return destination


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        check=False,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(cwd), "NO_COLOR": "1", "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_project_keeps_every_contract(tmp_path):
    result = lint_imports(copy_project(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in result.stdout


def test_every_contract_has_a_planted_import():
    assert {contract_named(prefix) for _, _, prefix in PLANTED} == set(CONTRACTS)


@pytest.mark.parametrize(("file", "line", "prefix"), PLANTED, ids=[f"{f}:{line}" for f, line, _ in PLANTED])
def test_a_planted_import_breaks_its_contract(tmp_path, file, line, prefix):
    project = copy_project(tmp_path)
    path = project / file
    path.write_text((path.read_text() if path.exists() else "") + f"\n{line}\n")
    result = lint_imports(project)
    assert result.returncode != 0, result.stdout + result.stderr
    assert f"{contract_named(prefix)} BROKEN" in result.stdout, result.stdout + result.stderr


def test_the_stdlib_contract_names_every_third_party_package_the_project_imports():
    """The trainer rule files may import only the standard library; import-linter cannot say 'only', so the
    contract forbids each third-party package by name, and this keeps that list complete."""
    graph = grimp.build_graph(*SETTINGS["root_packages"], include_external_packages=True, cache_dir=None)
    third_party = {
        module
        for module in graph.modules
        if "." not in module and module not in PACKAGES and module not in sys.stdlib_module_names
    }
    forbidden = set(CONTRACTS[contract_named("the trainer rule files")]["forbidden_modules"])
    assert third_party - forbidden == set()


def test_one_base_model_and_one_dns_label_pattern():
    """Not an import rule, kept from the layer test this file replaced: one pydantic base and one pattern."""
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
