"""A trainer's image and code archive hold exactly what runs in the cluster, so a job rolls only when that changes.

What runs there: the modules the stack's rendered commands start (`-m workloads...`), everything they import
(read with ast, imports inside functions too), and the files the Dockerfile copies and builds from. A file in a
trainer's folder outside that set (a workstation tool, a generator) would roll the image and every job on an
edit; it belongs outside workloads/ or in the trainer's local-only list (components/infra/source_tree.py).
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

from components.facts.images import TRAINERS
from components.infra.images import source_tag
from components.infra.source_tree import deployed_files, tracked_files
from tests.helpers.plans import PROJECT_DIR, everything_on
from tests.helpers.trainer_repo import commit
from tools.maxtext_fit.fit_cache import KEYED_FILES, cache_key

ENTRY_MODULE = re.compile(r"(?:-m\s+|import\s+)(workloads(?:\.\w+)+)")
FIT_ARGV = ["--accelerator-type", "TPU-V6E", "--topology", "2x2", "--slices", "1", "--hosts-per-slice", "1"]
FIT_ARGV += ["--chips-per-host", "4", "--", "model_name=llama3-8b"]


def strings(value) -> list[str]:
    if isinstance(value, dict):
        return [text for item in value.values() for text in strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in strings(item)]
    return [value] if isinstance(value, str) else []


def entry_modules(plan) -> set[str]:
    """The trainer modules the plan's jobs start: RayJob entrypoints, torchrun and init commands."""
    return {match for r in plan.resources for text in strings(r.inputs) for match in ENTRY_MODULE.findall(text)}


def module_file(module: str, root: Path = PROJECT_DIR) -> str | None:
    path = Path(*module.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if (root / candidate).is_file():
            return candidate.as_posix()
    return None


def imported_modules(file: str, root: Path = PROJECT_DIR) -> set[str]:
    """The workloads modules a file imports anywhere in it (a submodule named by `from package import name` too)."""
    package = ".".join(Path(file).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse((root / file).read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {module for module in found if module.split(".")[0] == "workloads" and module_file(module, root)}


def import_closure(modules: set[str], root: Path = PROJECT_DIR) -> set[str]:
    """The files of `modules`, of every workloads module they import, transitively, and of their packages."""
    files: set[str] = set()
    pending = set(modules)
    while pending:
        module = pending.pop()
        parts = module.split(".")
        for depth in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__.py and a/b/__init__.py first
            file = module_file(".".join(parts[:depth]), root)
            if file and file not in files:
                files.add(file)
                pending.update(imported_modules(file, root))
    return files


def build_files(trainer: str, root: Path = PROJECT_DIR) -> set[str]:
    """The Dockerfile, its ignore file, and the single files it COPYs (folders are what the closure covers)."""
    folder = f"workloads/{trainer}"
    files = {f"{folder}/Dockerfile", f"{folder}/Dockerfile.dockerignore"}
    for line in (root / folder / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            files.update(source for source in line.split()[1:-1] if (root / source).is_file())
    return files


def test_each_trainer_ships_exactly_what_its_jobs_run(plan_with):
    entries = entry_modules(plan_with(everything_on))
    assert {"workloads.maxtext.train", "workloads.fsdp.train", "workloads.fsdp.cuda_check"} <= entries
    for trainer in TRAINERS:
        started = {module for module in entries if module.startswith(f"workloads.{trainer}.")}
        expected = import_closure(started) | build_files(trainer)
        deployed = set(deployed_files(PROJECT_DIR, trainer))
        # (rolls the image and jobs but never runs there, runs there but is not shipped): move a workstation tool
        # out of workloads/ (tools/), or list a local stand-in in source_tree.py's local-only files
        assert (deployed - expected, expected - deployed) == (set(), set()), trainer


def test_editing_the_fit_check_moves_its_cache_key_and_rolls_no_trainer(tmp_path):
    """The fit check's own code keys its cached verdicts (fit_cache.KEYED_FILES), not any image or job."""
    for name in tracked_files(PROJECT_DIR, ("workloads", "tools")):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PROJECT_DIR / name, tmp_path / name)
    commit(tmp_path, "copy")
    tags, key = {trainer: source_tag(trainer, tmp_path) for trainer in TRAINERS}, cache_key(FIT_ARGV, tmp_path)
    for name in KEYED_FILES:
        if name.endswith(".py"):
            (tmp_path / name).write_text((tmp_path / name).read_text() + "# a comment\n")
    commit(tmp_path, "a comment in the fit check")
    assert {trainer: source_tag(trainer, tmp_path) for trainer in TRAINERS} == tags
    assert cache_key(FIT_ARGV, tmp_path) != key
    (tmp_path / "workloads/maxtext/worker.py").write_text("# changed\n")
    assert source_tag("maxtext", tmp_path) != tags["maxtext"]
